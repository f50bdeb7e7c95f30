"""Write path: new empty files, pending deletes at unmount, kind checks on rename-over, and the
overlay following an object rename."""

from __future__ import annotations

import errno
import os

import pytest
from support.mount import MountFactory
from support.writes import (
    MAIN,
    NOTE,
    NOTE_TEXT,
    OBJ,
    TOOL,
    assert_writes,
    errno_of,
    item_ids,
    listing,
    mark,
    settle,
    sim_of,
    trash_files,
    write_mount,
)

# G1 differs in ways tests/e2e/test_viewer_generations.py covers (no object.list, set_running or
# commands; notecards need copy+modify; runtime output only for live-sync subscribers).
pytestmark = pytest.mark.generations("G2", "G3", "G4")


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: release:", r"^WARNING slfs\.model\.workspace:")
async def test_touch_creates_an_empty_script_once(mount_factory: MountFactory) -> None:
    m = await write_mount(mount_factory)
    t = mark(m)
    await m.run("touch", m.path("Box", "Fresh.lsl"))
    await settle(m)
    created = [(meth, p) for meth, p in sim_of(m).calls[t:] if meth == "object.item.create"]
    assert len(created) == 1
    assert created[0][1]["name"] == "Fresh" and created[0][1]["type"] == "script"
    assert created[0][1]["vm"] == "mono"
    assert "Fresh" in item_ids(m)
    assert "Fresh.lsl" in listing(m, "Box")


async def test_umount_carries_out_a_pending_delete(mount_factory: MountFactory) -> None:
    # A long grace: without the shutdown flush the delete would be dropped with the daemon.
    m = await write_mount(mount_factory, "delete_grace=30")
    await m.thread(os.unlink, m.path("Box", "Note"))
    assert await m.stop_daemon() == 0
    assert "Note" not in item_ids(m)
    assert any(meth == "object.item.delete" and p.get("item_id") == NOTE for meth, p in sim_of(m).calls)
    (copy,) = trash_files(m)
    assert copy.read_text() == NOTE_TEXT


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: rename: Tool\.luau: would change the")
async def test_rename_over_an_item_of_another_language_is_exdev(mount_factory: MountFactory) -> None:
    m = await write_mount(mount_factory)
    t = mark(m)
    err = await m.thread(errno_of, os.rename, m.path("Box", "Main.lsl"), m.path("Box", "Tool.luau"))
    assert err == errno.EXDEV
    await settle(m)
    assert_writes(m, t, [])
    assert item_ids(m)["Main"] == MAIN and item_ids(m)["Tool"] == TOOL


async def test_overlay_follows_an_object_rename(mount_factory: MountFactory) -> None:
    m = await write_mount(mount_factory)
    await m.thread(os.mkdir, m.path("Box", ".notes"))
    await m.thread(lambda: m.path("Box", ".notes", "todo").write_text("keep me\n"))
    await m.thread(os.rename, m.path("Box"), m.path("Crate"))
    assert (await m.read_bytes("Crate", ".notes", "todo")) == b"keep me\n"
    await settle(m)  # the viewer applies object.modify after answering
    found = sim_of(m).world.find_prim(OBJ)
    assert found is not None and found[1].name == "Crate"
