"""The world of the sources tests (in-process and end to end): a Firestorm-preprocessed script, a
plain one, libraries in a notecard and a linked prim, Luau scripts."""

from __future__ import annotations

from slfs.sim import World
from slfs.sim.world import world_from_json

from .worlds import FULL, item, u

OBJ = u(1, "b")
ARM = u(2, "c")
FS_SCRIPT = u(1)
PLAIN = u(2)
LIB = u(3)
TOOL = u(4)
HELPER = u(5)
ARM_NOTE = u(6)

SOURCE = '#define GREETING "hello"\ndefault\n{\n    state_entry()\n    {\n        llOwnerSay(GREETING);\n    }\n}\n'
EXPANSION = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("hello");\n    }\n}\n'
# What Firestorm stored, typed out byte for byte (not made by slfs's encoder): the source escaped
# inside /* */, the trailer, two empty lines, the expansion.
FIRESTORM_TEXT = (
    "//start_unprocessed_text\n/*" + SOURCE + "*/\n//end_unprocessed_text\n//nfo_preprocessor_version 0\n"
    "//program_version Firestorm-Releasex64 6.6.17.70368 - Tester\n//last_compiled 06/04/2024 04:51:39\n"
    "//mono\n\n\n" + EXPANSION
)
LIB_TEXT = "say(string s)\n{\n    llOwnerSay(s);\n}\n"
PLAIN_TEXT = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("plain");\n    }\n}\n'


def sources_world() -> World:
    objects = [{
        "object_id": OBJ,
        "object_name": "Box",
        "inventory": [
            item(FS_SCRIPT, "Greeter", "script", FIRESTORM_TEXT, subtype=0, vm="mono", running=True),
            item(PLAIN, "Plain", "script", PLAIN_TEXT, subtype=0, vm="lsl2", running=True),
            item(LIB, "lib.lsl", content=LIB_TEXT),  # a notecard: a fine library, it never compiles
            item(TOOL, "Tool", "script", "print(1)\n", subtype=1, vm="luau", running=False),
            item(HELPER, "helper", "script", "return { n = 42 }\n", subtype=1, vm="luau", running=False),
        ],
        "linked_objects": [
            {"link_id": ARM, "link_name": "Arm", "permissions": FULL,
             "inventory": [item(ARM_NOTE, "arm.lsl", content="integer ARM = 2;\n")]},
        ],
    }]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester Resident", "objects": objects})
