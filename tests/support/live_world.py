"""The world of the live-sync tests: one script in the agent's inventory, open in the viewer's editor."""

from __future__ import annotations

from slfs.sim import World
from slfs.sim.world import world_from_json

from .worlds import item, u

INV = u(7)
GOOD = "default\n{\n    state_entry()\n    {\n        llOwnerSay(\"ok\");\n    }\n}\n"
BAD = GOOD.replace('"ok"', '"bad" @')


def world() -> World:
    return world_from_json({
        "agent_id": u(99, "e"), "agent_name": "Tester Resident",
        "agent_inventory": [item(INV, "Pocket", "script", GOOD, subtype=0, vm="mono", running=True)],
        "objects": [],
    })
