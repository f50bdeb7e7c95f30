"""Shared world, helpers and assertions for the write-path end-to-end tests (the `wm` fixture:
tests/e2e/conftest.py).

Every write test asserts from the simulator: the exact final content, the item_id unchanged, and
the exact list of write calls the viewer received (so no temp or backup item is ever created or
deleted in-world and no save is sent beyond what the case needs).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import trio

from slfs.sim import World
from slfs.sim.world import world_from_json
from support.mount import Mount, MountFactory
from support.worlds import FULL, item, u

GRACE = 0.5  # -o delete_grace for the write tests
NO_MOD = {"owner": 0x7FFFFFFF & ~0x4000, "next_owner": 0x8E000}

OBJ = u(1, "b")
ARM = u(2, "c")
LOCKED = u(3, "b")
NOTE = u(1)
MAIN = u(2)
TOOL = u(3)
LEFT = u(4)
FROZEN = u(5)
LOCKED_NOTE = u(6)
LOCKED_PRIM_NOTE = u(7)

NOTE_TEXT = "line one\nline two\nline three\n"
MAIN_TEXT = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("one");\n    }\n}\n'
TOOL_TEXT = "local x = 1\nprint(x)\n"
LEFT_TEXT = "left arm\n"

WRITE_METHODS = ("object.content.save", "object.item.create", "object.item.delete", "object.item.modify",
                 "object.modify")


def write_world() -> World:
    objects = [
        {
            "object_id": OBJ,
            "object_name": "Box",
            "inventory": [
                item(NOTE, "Note", content=NOTE_TEXT),
                item(MAIN, "Main", "script", MAIN_TEXT, subtype=0, vm="mono", running=True),
                item(TOOL, "Tool", "script", TOOL_TEXT, subtype=1, vm="luau", running=False),
                item(FROZEN, "Frozen", content="do not touch\n", permissions=NO_MOD),
            ],
            "linked_objects": [
                {"link_id": ARM, "link_name": "Arm", "permissions": FULL,
                 "inventory": [item(LEFT, "Left", content=LEFT_TEXT)]},
            ],
        },
        {
            "object_id": LOCKED,
            "object_name": "Locked",
            "permissions": NO_MOD,
            "inventory": [item(LOCKED_PRIM_NOTE, "Info", content="locked prim\n")],
        },
    ]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester", "objects": objects})


ARM_DIR = f"Arm@{ARM.replace('-', '')[:8]}"


async def write_mount(mount_factory: MountFactory, *options: str, **kw: Any) -> Mount:
    m = await mount_factory(write_world(), options=[f"delete_grace={GRACE}", *options], **kw)
    # The connect's entry invalidations are applied in the background; one landing after a
    # program chdir'd into an object dir unhashes that dentry and getcwd() fails (git: "unable to
    # get current working directory"). Let them drain first.
    await m.thread(os.listdir, m.mnt)
    await trio.sleep(0.3)  # no signal says pyfuse3's queued invalidations are done: a bounded wait
    return m


def sim_of(m: Mount) -> Any:
    assert m.sim is not None
    return m.sim


def content(m: Mount, item_id: str) -> str:
    return str(sim_of(m).item(item_id).content)


def mark(m: Mount) -> int:
    return len(sim_of(m).calls)


def writes(m: Mount, since: int = 0) -> list[tuple[str, str]]:
    """The write calls the viewer got since `since`: (method, item_id or name or prim_id)."""
    out = []
    for method, params in sim_of(m).calls[since:]:
        if method not in WRITE_METHODS:
            continue
        if method == "object.modify":
            key = params.get("prim_id") or ""
        else:
            key = params.get("item_id") or params.get("name") or ""
        out.append((method, key))
    return out


def saves(item_id: str, n: int = 1) -> list[tuple[str, str]]:
    return [("object.content.save", item_id)] * n


def item_ids(m: Mount, prim_id: str = OBJ) -> dict[str, str]:
    found = sim_of(m).world.find_prim(prim_id)
    assert found is not None
    return {i.name: i.item_id for i in found[1].inventory}


async def settle(m: Mount, extra: float = 0.4) -> None:
    """Until every tombstone has reached the viewer or been adopted (so 'no delete' means no delete).

    A delete waits out delete_grace in slfs itself, where no sync point with the sim can see it, so
    this waits (bounded) on the real condition: `.slfs/status` pending_saves is 0 (saves, creates and
    deletes still in their grace period count). Then the sim quiesces, so that whatever slfs sent by
    then is in sim.calls and has been handled (slfs/sim/README.md, "Sync points")."""

    async def nothing_pending() -> bool:
        return (await m.status()).get("pending_saves") == "0"

    await m.wait_for(nothing_pending, GRACE + extra + 10, "saves, creates and deletes carried out")
    await sim_of(m).quiesce()


def save_params(m: Mount, item_id: str, since: int = 0) -> list[dict[str, Any]]:
    return [p for meth, p in sim_of(m).calls[since:] if meth == "object.content.save" and p.get("item_id") == item_id]


def errno_of(fn: Any, *args: Any) -> int:
    """Run fn(*args) (blocking); the errno it failed with, 0 on success."""
    try:
        fn(*args)
    except OSError as exc:
        return exc.errno or -1
    return 0


def write_file(path: Path, data: bytes, flags: int = os.O_WRONLY | os.O_TRUNC | os.O_CREAT) -> None:
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def recovery_files(m: Mount) -> list[Path]:
    d = Path(m.env["XDG_STATE_HOME"]) / "slfs" / "recovery"
    return sorted(d.iterdir()) if d.is_dir() else []


def trash_files(m: Mount) -> list[Path]:
    d = Path(m.env["XDG_DATA_HOME"]) / "slfs" / "trash"
    return sorted(d.iterdir()) if d.is_dir() else []


def listing(m: Mount, *parts: str) -> list[str]:
    return sorted(os.listdir(m.path(*parts)))


async def sh(m: Mount, script: str, cwd: Path | None = None, timeout: float = 30.0, check: bool = True) -> str:
    res = await m.run("bash", "-c", script, cwd=cwd, timeout=timeout, check=check)
    return res.stdout.decode() + res.stderr.decode()


def need(*tools: str) -> None:
    from support.mount import require_tool

    require_tool(*tools)


def assert_writes(m: Mount, since: int, expected: Sequence[tuple[str, str]]) -> None:
    got = writes(m, since)
    assert got == list(expected), f"viewer got {got}, expected {list(expected)}"
