"""Shared world and helpers for the `slfs push` / `slfs pull` end-to-end tests (tests/e2e/test_push*.py).

The world: object "Site" with scripts A (running), B (stopped), C (running, Luau), a notecard
"Readme", a notecard named "x.lsl" (a notecard whose name looks like a script), a no-modify notecard
"Locked", and a child prim "Door" with script "Hinge.lsl" (running).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from slfs.sim import World
from slfs.sim.world import world_from_json
from support.mount import Mount, MountFactory
from support.worlds import FULL, item, u

SITE = u(40, "b")
DOOR = u(41, "c")
A, B, C, README, XLSL, LOCKED, HINGE = (u(n, "d") for n in range(40, 47))
NO_MOD = {"owner": 0x7FFFFFFF & ~0x4000, "next_owner": 0x8E000}
DOOR_DIR = f"Door@{DOOR.replace('-', '')[:8]}"


def lsl(word: str) -> str:
    return f'default\n{{\n    state_entry()\n    {{\n        llOwnerSay("{word}");\n    }}\n}}\n'


LUAU = "local x = 1\nprint(x)\n"


def push_world(extra: int = 0) -> World:
    """The Site object; `extra` more running LSL scripts S000.lsl.. (for the bench)."""
    inventory = [
        item(A, "A", "script", lsl("a"), subtype=0, vm="mono", running=True),
        item(B, "B", "script", lsl("b"), subtype=0, vm="mono", running=False),
        item(C, "C", "script", LUAU, subtype=1, vm="luau", running=True),
        item(README, "Readme", content="read me\n"),
        item(XLSL, "x.lsl", content="a notecard, not a script\n"),
        item(LOCKED, "Locked", content="locked\n", permissions=NO_MOD),
    ]
    inventory += [item(u(1000 + i, "e"), f"S{i:03d}", "script", lsl(f"s{i}"), subtype=0, vm="mono", running=True)
                  for i in range(extra)]
    objects = [{
        "object_id": SITE,
        "object_name": "Site",
        "inventory": inventory,
        "linked_objects": [{"link_id": DOOR, "link_name": "Door", "permissions": FULL,
                            "inventory": [item(HINGE, "Hinge", "script", lsl("hinge"), subtype=0, vm="mono",
                                               running=True)]}],
    }]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester", "objects": objects})


async def push_mount(mount_factory: MountFactory, world: World | None = None, **kw: Any) -> Mount:
    m = await mount_factory(world or push_world(), **kw)
    await m.thread(os.listdir, m.mnt)
    await m.wait_for(lambda: _shown(m), 10, "the Site object shown")
    return m


async def _shown(m: Mount) -> bool:
    return await m.thread(os.path.isdir, m.path("Site"))


def sim(m: Mount) -> Any:
    assert m.sim is not None
    return m.sim


def mark(m: Mount) -> int:
    return len(sim(m).calls)


def calls(m: Mount, since: int = 0, methods: tuple[str, ...] = ()) -> list[tuple[str, dict[str, Any]]]:
    return [(meth, p) for meth, p in sim(m).calls[since:] if not methods or meth in methods]


WRITES = ("object.content.save", "object.item.create", "object.item.delete", "object.script.set_running")


def writes(m: Mount, since: int = 0) -> list[tuple[str, str]]:
    return [(meth, str(p.get("item_id") or p.get("name") or "")) for meth, p in calls(m, since, WRITES)]


def inworld(m: Mount, item_id: str) -> Any:
    return sim(m).item(item_id)


def names(m: Mount, prim_id: str = SITE) -> dict[str, str]:
    found = sim(m).world.find_prim(prim_id)
    assert found is not None
    return {i.name: i.item_id for i in found[1].inventory}


def make_src(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def site_files() -> dict[str, str]:
    """SRC files identical to the Site object as the mount shows it (the locked notecard left out)."""
    return {"A.lsl": lsl("a"), "B.lsl": lsl("b"), "C.luau": LUAU, "Readme": "read me\n",
            "x.lsl": "a notecard, not a script\n", f"{DOOR_DIR}/Hinge.lsl": lsl("hinge")}


async def slfs(m: Mount, *args: str | os.PathLike[str], timeout: float = 60.0,
               cwd: str | os.PathLike[str] | None = None) -> tuple[int, str, str]:
    """Run `python -m slfs ARGS` as a real program: (exit status, stdout, stderr)."""
    res = await m.run(sys.executable, "-m", "slfs", *args, check=False, timeout=timeout, cwd=cwd)
    return res.returncode, res.stdout.decode(), res.stderr.decode()


async def push(m: Mount, src: Path, *flags: str, dest: str = "Site", timeout: float = 60.0) -> tuple[int, str, str]:
    return await slfs(m, "push", *flags, str(src), str(m.path(dest)), timeout=timeout)


async def push_json(m: Mount, src: Path, *flags: str, dest: str = "Site") -> tuple[int, list[dict[str, Any]]]:
    rc, out, err = await push(m, src, "--json", *flags, dest=dest)
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert lines and "summary" in lines[-1], (out, err)
    assert lines[-1]["exit"] == rc
    return rc, lines


def plan_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.split(" ", 1)[0] in
            ("create", "update", "unchanged", "delete", "skip", "conflict")]


async def settled(m: Mount) -> None:
    await sim(m).quiesce()


async def wait_running(m: Mount, item_id: str, running: bool, timeout: float = 10) -> None:
    async def ok() -> bool:
        return bool(inworld(m, item_id).running) == running
    await m.wait_for(ok, timeout, f"{item_id} running={running}")


def stopped_before_started(m: Mount, since: int, item_ids: list[str]) -> None:
    """Every save of `item_ids` since `since` was sent stopped, and every start came after the last save."""
    log = calls(m, since)
    save_at = [i for i, (meth, p) in enumerate(log) if meth == "object.content.save" and p.get("item_id") in item_ids]
    for i in save_at:
        assert log[i][1].get("running") is False, log[i]
    starts = [i for i, (meth, p) in enumerate(log) if meth == "object.script.set_running" and p.get("running")]
    if save_at and starts:
        assert min(starts) > max(save_at), "a script was started before every save was in"


async def sleep_until(pred: Any, timeout: float = 10.0) -> None:
    with trio.fail_after(timeout):
        while not pred():
            await trio.sleep(0.02)


def can_set_running(m: Mount) -> bool:
    """Whether the simulated viewer has object.script.set_running (G1 has not)."""
    return "object.script.set_running" not in sim(m).profile.missing_methods
