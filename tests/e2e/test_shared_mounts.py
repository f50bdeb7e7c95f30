"""The shared mount itself (tests/support/shared.py): a test that changes the world leaves the next
test of the module a mount in a fresh mount's state. The tests run in this order (one module, one
viewer at a time), so the second checks what the first left."""

from __future__ import annotations

import pytest
from support.cli import slfs
from support.mount import Mount
from support.worlds import sample_item

from slfs.sim import sample_world

pytestmark = pytest.mark.generations()  # G1 resets by exploring the objects again

HELLO = "Hello Cube/Hello.lsl"


def saves(m: Mount) -> list[object]:
    assert m.sim is not None
    return [c for c in m.sim.calls if c[0] == "object.content.save"]
CHANGED = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("changed by a test");\n    }\n}\n'


async def test_one_test_changes_the_world(mounted: Mount, viewer_generation: str | None) -> None:
    m = mounted
    assert m.sim is not None and saves(m) == []  # the viewer's call log starts over
    await m.thread(m.path(HELLO).write_text, CHANGED)
    await m.sim.quiesce()
    assert sample_item(m.sim.world, HELLO).content == CHANGED
    if viewer_generation != "G1":  # G1 has no set_running (viewer-source.md §2)
        rc, _out, err = await slfs(m, "stop", m.path(HELLO))
        assert rc == 0, err


async def test_the_next_starts_from_the_original_world(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None and saves(m) == []  # not the save above
    original = sample_item(sample_world(), HELLO)
    assert sample_item(m.sim.world, HELLO).content == original.content
    assert (await m.read_bytes(*HELLO.split("/"))).decode() == original.content
    state = (await m.read_bytes("Hello Cube", ".slfs", "Hello.lsl.state")).decode().strip()
    assert state == ("running" if original.running else "stopped")
    # the test's part of the log is its own: nothing of the save above
    if hasattr(m, "new_log_text"):
        assert "saved Hello Cube/Hello.lsl" not in m.new_log_text()


@pytest.mark.own_mount("checks that the mark gives a mount of the test's own")
async def test_own_mount_is_not_the_shared_one(mounted: Mount) -> None:
    assert not hasattr(mounted, "simthread")
