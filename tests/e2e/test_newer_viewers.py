"""End to end against what newer viewers do (../shared/research/newer-viewers.md): embedded items,
revisions, placeholder names and deferred properties, regions that are down, saves made in the
viewer, garbled compile answers, refused creates, and names that cannot be encoded.

Where a behaviour exists only in newer viewers the test says so with `viewer(2, ...)`."""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import Any

import pytest
import trio
from support.mount import Mount, MountFactory
from support.worlds import FULL, item, u
from support.writes import (
    NO_MOD,
    errno_of,
    recovery_files,
    settle,
    sim_of,
    write_file,
)

from slfs.protocol.compile_output import UNPRINTABLE
from slfs.sim.world import world_from_json

BOX = u(10, "b")
ARM = u(11, "c")
CARD = u(10)  # a notecard holding embedded items
PLAIN = u(11)
MAIN = u(12)
NOTE = u(13)
LATER = u(20, "b")  # deferred properties
LATER_ARM = u(21, "c")
LATER_NOTE = u(20)
SPARE = u(30, "b")  # published by the tests

GOOD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("hi");\n    }\n}\n'
BAD_LSL = "default\n{\n    state_entry(\n}\n"


def newer_world(**box: Any) -> Any:
    objects = [
        {
            "object_id": BOX, "object_name": "Box", "permissions": FULL,
            "inventory": [
                item(CARD, "Card", content="See the landmark: \U0001f4cd here\n", embedded_items=2),
                item(PLAIN, "Plain", content="plain text\n"),
                item(MAIN, "Main", "script", GOOD_LSL, subtype=0, vm="mono", running=True),
                item(NOTE, "Note", content="note v1\n"),
            ],
            "linked_objects": [{"link_id": ARM, "link_name": "Arm", "permissions": FULL, "inventory": []}],
            **box,
        },
        {
            "object_id": LATER, "object_name": "Lamp", "permissions": NO_MOD, "deferred_properties": True,
            "inventory": [item(LATER_NOTE, "Lamp Note", content="lamp\n")],
            "linked_objects": [{"link_id": LATER_ARM, "link_name": "Shade", "permissions": NO_MOD,
                                "inventory": []}],
        },
        {"object_id": SPARE, "object_name": "Spare \udc00", "published": False, "inventory": []},
    ]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester", "objects": objects})


async def newer_mount(mount_factory: MountFactory, **sim: Any) -> Mount:
    sim.setdefault("properties_delay", None)  # the test delivers them
    m = await mount_factory(newer_world(), sim_kwargs=sim, options=["delete_grace=0.5"])
    await m.thread(os.listdir, m.mnt)
    await trio.sleep(0.2)  # the connect's entry invalidations drain (support/writes.py write_mount says why)
    return m


def saves_of(m: Mount, item_id: str, since: int = 0) -> list[dict[str, Any]]:
    return [p for meth, p in sim_of(m).calls[since:] if meth == "object.content.save" and p.get("item_id") == item_id]


def gets_of(m: Mount, item_id: str, since: int = 0) -> int:
    return sum(1 for meth, p in sim_of(m).calls[since:] if meth == "object.content.get" and p.get("item_id") == item_id)


def events(m: Mount) -> list[dict[str, Any]]:
    return [json.loads(line) for line in m.path(".slfs", "events").read_text().splitlines() if line]


async def xattr(m: Mount, path: str, name: str) -> str | None:
    try:
        return (await m.thread(os.getxattr, m.path(path), f"user.sl.{name}")).decode()
    except OSError as exc:
        assert exc.errno == errno.ENODATA
        return None


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: open:",
    r"^WARNING slfs\.fs\.guarded: setattr:",
    r"^WARNING slfs\.model\.workspace:",
)
@pytest.mark.viewer(2, reason="only newer viewers say how many items a notecard embeds")
async def test_notecard_holding_embedded_items_is_read_only(mount_factory: MountFactory) -> None:
    m = await newer_mount(mount_factory)
    out = await m.out("ls", "-l", m.path("Box"))
    modes = {line.split()[-1]: line.split()[0] for line in out.splitlines()[1:]}
    assert modes["Card"] == "-r--r--r--" and modes["Plain"] == "-rw-r--r--"
    assert await xattr(m, "Box/Card", "embedded_items") == "2"
    assert await xattr(m, "Box/Plain", "embedded_items") == "0"
    assert await xattr(m, "Box/Main.lsl", "embedded_items") is None
    assert (await m.read_bytes("Box", "Card")).decode() == "See the landmark: \U0001f4cd here\n"
    since = len(sim_of(m).calls)
    # Every way of opening it for writing fails before anything is sent, and says why.
    assert await m.thread(errno_of, write_file, m.path("Box", "Card"), b"x", os.O_WRONLY | os.O_TRUNC) == errno.EACCES
    assert await m.thread(errno_of, write_file, m.path("Box", "Card"), b"x", os.O_WRONLY | os.O_APPEND) == errno.EACCES
    res = await m.sh(f"printf more >> '{m.path('Box', 'Card')}'", check=False)
    assert res.returncode != 0 and b"Permission denied" in res.stderr
    assert await m.thread(errno_of, os.truncate, m.path("Box", "Card"), 0) == errno.EACCES
    assert saves_of(m, CARD, since) == []
    status = await m.status()
    assert "Box/Card: holds 2 embedded items; edit it in the viewer" in status["last_error"]
    assert "holds 2 embedded items; edit it in the viewer" in m.log_text()
    # The plain notecard beside it saves as ever.
    await m.thread(write_file, m.path("Box", "Plain"), b"changed\n")
    assert sim_of(m).item(PLAIN).content == "changed\n"


@pytest.mark.allow_log(
    r"^ERROR slfs\.model\.shutdown: unsaved",
    r"^WARNING slfs\.fs\.guarded: flush: save",
    r"^WARNING slfs\.model\.workspace: saving",
)
@pytest.mark.viewer(2, reason="only newer viewers refuse to save a notecard holding embedded items")
async def test_viewer_refusing_an_embedded_notecard_save(mount_factory: MountFactory) -> None:
    m = await newer_mount(mount_factory)
    assert (await m.read_bytes("Box", "Plain")) == b"plain text\n"  # fetched: nothing embedded then
    sim_of(m).item(PLAIN).embedded_items = 1  # someone drops a landmark in, and no update says so
    assert await m.thread(errno_of, write_file, m.path("Box", "Plain"), b"my edit\n") == errno.EACCES
    assert sim_of(m).item(PLAIN).content == "plain text\n"
    assert [r.read_bytes() for r in recovery_files(m)] == [b"my edit\n"]
    # Read-only from now on.
    assert stat.S_IMODE((await m.thread(os.stat, m.path("Box", "Plain"))).st_mode) == 0o444


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: flush:", r"^WARNING slfs\.model\.workspace:")
@pytest.mark.viewer(2, reason="revisions exist only in newer viewers")
async def test_revision_refreshes_and_guards_saves(mount_factory: MountFactory) -> None:
    m = await newer_mount(mount_factory)
    sim = sim_of(m)
    assert await m.read_bytes("Box", "Note") == b"note v1\n"
    since = len(sim.calls)
    # An update that carries the same revision keeps the cached content (no refetch).
    await sim.send_inventory_update(sim.object_of(BOX), sim.object_of(BOX).root)
    await sim.quiesce()  # slfs has applied the update, and a refetch it started would be in sim.calls
    assert await m.read_bytes("Box", "Note") == b"note v1\n"
    assert gets_of(m, NOTE, since) == 0
    # Our own save's echo (revision up) does not make it stale either; one fetch at the new
    # revision confirms it is ours (the save's answer carries no revision: newer protocol
    # revision, "fetch again when it does").
    await m.thread(write_file, m.path("Box", "Note"), b"note v2\n")
    await m.wait_for(lambda: _gets(m, NOTE, since, 1), 2, "the confirming fetch")
    await sim.quiesce()  # a second fetch would be in sim.calls
    assert await m.read_bytes("Box", "Note") == b"note v2\n"
    assert gets_of(m, NOTE, since) == 1
    assert await xattr(m, "Box/Note", "revision") == str(sim.item(NOTE).revision)
    # Someone else's save (revision up): the next read shows it.
    await sim.viewer_save(NOTE, "note v3 from the viewer\n")
    await m.wait_for(lambda: _reads(m, "Box/Note", b"note v3 from the viewer\n"), 2, "refetched")
    # A buffer read at an older revision than the item's current one is not saved: ESTALE.
    fd = await m.thread(os.open, m.path("Box", "Note"), os.O_RDWR)
    try:
        assert await m.thread(os.read, fd, 100) == b"note v3 from the viewer\n"
        await sim.viewer_save(NOTE, "note v4 from the viewer\n")
        await sim.quiesce()  # slfs has applied the update (revision up)
        await m.thread(os.pwrite, fd, b"MINE", 0)
        saves_before = len(saves_of(m, NOTE))
        assert await m.thread(errno_of, os.close, fd) == errno.ESTALE
    except BaseException:
        os.close(fd)
        raise
    assert len(saves_of(m, NOTE)) == saves_before
    assert sim.item(NOTE).content == "note v4 from the viewer\n"
    assert any(r.read_bytes() == b"MINE v3 from the viewer\n" for r in recovery_files(m))
    assert await m.read_bytes("Box", "Note") == b"note v4 from the viewer\n"


async def _gets(m: Mount, item_id: str, since: int, want: int) -> bool:
    return gets_of(m, item_id, since) >= want


async def _reads(m: Mount, path: str, want: bytes) -> bool:
    return (await m.run("cat", m.path(path))).stdout == want


@pytest.mark.viewer(2, reason="placeholder names and deferred properties are newer viewers' behaviour")
async def test_placeholders_and_deferred_properties(mount_factory: MountFactory) -> None:
    m = await newer_mount(mount_factory)
    assert "Object" in await m.thread(os.listdir, m.mnt)
    shade = f"Link #2@{LATER_ARM.replace('-', '')[:8]}"
    assert sorted(await m.thread(os.listdir, m.path("Object"))) == ["Lamp Note", shade]
    ino = (await m.thread(os.stat, m.path("Object"))).st_ino
    child_ino = (await m.thread(os.stat, m.path("Object", shade))).st_ino
    # Derived from the agent's rights (no modify here), next_owner not known yet.
    assert await xattr(m, "Object", "perms") == "owner=0x0008a000 next_owner=unknown"
    assert await xattr(m, "Object", "owner_id") is None
    assert await xattr(m, "Object", "can_save_back") == "0"
    await sim_of(m).deliver_properties(LATER)

    async def renamed() -> bool:
        names = await m.thread(os.listdir, m.mnt)
        return "Lamp" in names and "Object" not in names

    await m.wait_for(renamed, 2, "the real name")
    st = await m.thread(os.stat, m.path("Lamp"))
    assert st.st_ino == ino  # renamed in place
    assert stat.S_IMODE(st.st_mode) == 0o555  # the real permissions say no modify
    shade_real = f"Shade@{LATER_ARM.replace('-', '')[:8]}"
    await m.wait_for(lambda: _lists(m, "Lamp", shade_real), 2, "the child's real name")
    assert (await m.thread(os.stat, m.path("Lamp", shade_real))).st_ino == child_ino
    assert await xattr(m, "Lamp", "perms") == "owner=0x7fffbfff next_owner=0x0008e000"
    assert await xattr(m, "Lamp", "owner_id") == u(99, "e")
    assert await xattr(m, "Lamp", "can_save_back") == "1"
    assert stat.S_IMODE((await m.thread(os.stat, m.path("Lamp", "Lamp Note"))).st_mode) == 0o444
    assert await m.read_bytes("Lamp", "Lamp Note") == b"lamp\n"


async def _lists(m: Mount, folder: str, name: str) -> bool:
    return name in await m.thread(os.listdir, m.path(folder))


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: flush: save",
    r"^WARNING slfs\.fs\.guarded: lookup: read",
    r"^WARNING slfs\.model\.workspace: read",
    r"^WARNING slfs\.model\.workspace: save",
    r"^WARNING slfs\.model\.workspace: saving",
)
@pytest.mark.viewer(2, reason="-32005 is newer viewers' answer for a region that is down")
async def test_region_down_is_eagain_then_recovers(mount_factory: MountFactory) -> None:
    m = await newer_mount(mount_factory)
    sim = sim_of(m)
    assert await m.read_bytes("Box", "Note") == b"note v1\n"
    sim.set_region_connected(BOX, False)
    res = await m.run("cat", m.path("Box", "Plain"), check=False)
    assert res.returncode != 0 and b"Resource temporarily unavailable" in res.stderr
    status = await m.status()
    assert status["region_unavailable"] == "Box"
    assert "region is not connected" in status["last_error"]
    assert await m.thread(errno_of, write_file, m.path("Box", "Note"), b"while down\n") == errno.EAGAIN
    assert any(r.read_bytes() == b"while down\n" for r in recovery_files(m))
    assert sim.item(NOTE).content == "note v1\n"
    # A region that comes back while slfs retries: the save lands.
    sim.set_region_connected(BOX, False)

    async def back_soon() -> None:
        await trio.sleep(0.25)  # the scenario: the region is down for a moment while slfs retries
        sim.set_region_connected(BOX, True)

    m.nursery.start_soon(back_soon)
    await m.thread(write_file, m.path("Box", "Note"), b"after the crossing\n")
    assert sim.item(NOTE).content == "after the crossing\n"
    assert (await m.status())["region_unavailable"] == "none"
    assert await m.read_bytes("Box", "Plain") == b"plain text\n"


async def test_save_made_in_the_viewer(mount_factory: MountFactory, viewer_version: int) -> None:
    m = await newer_mount(mount_factory)
    sim = sim_of(m)
    assert await m.read_bytes("Box", "Main.lsl") == GOOD_LSL.encode()
    await sim.viewer_save(MAIN, BAD_LSL)
    # The content follows in both versions (an inventory update).
    await m.wait_for(lambda: _reads(m, "Box/Main.lsl", BAD_LSL.encode()), 10, "the viewer's save")
    diag = m.path("Box", ".slfs", "Main.lsl.diag")
    if viewer_version == 1:
        # Older viewers send script.compiled only to a subscribed connection: nothing to show.
        await sim.quiesce()  # slfs has handled every frame the viewer sent
        assert not [n for n in sim.notifications_sent if n[0] == "script.compiled"]
        assert await m.thread(diag.read_text) == ""
        return
    await m.wait_for(lambda: _nonempty(m, diag), 2, "diagnostics of the viewer's compile")
    lines = (await m.thread(diag.read_text)).splitlines()
    assert lines and all(line.startswith(f"{m.mnt}/Box/Main.lsl:") and ": error: " in line for line in lines)
    root = (await m.thread(m.path(".slfs", "diagnostics").read_text)).splitlines()
    assert root == lines
    compile_events = [e for e in await m.thread(events, m) if e["type"] == "compile"]
    assert compile_events[-1]["source"] == "viewer" and compile_events[-1]["compiled"] is False
    assert compile_events[-1]["path"] == "Box/Main.lsl"
    # A good compile in the viewer clears it.
    await sim.viewer_save(MAIN, GOOD_LSL)
    await m.wait_for(lambda: _empty(m, diag), 2, "diagnostics cleared")


async def _nonempty(m: Mount, path: Any) -> bool:
    return bool(await m.thread(path.read_text))


async def _empty(m: Mount, path: Any) -> bool:
    return not await m.thread(path.read_text)


@pytest.mark.allow_log(r"^WARNING slfs\.model\.save:")
@pytest.mark.viewer(2, reason="the stoi and NUL answers were seen from newer viewer builds")
@pytest.mark.parametrize("failure", ["stoi", "nul"])
async def test_garbled_compile_answer(mount_factory: MountFactory, failure: str) -> None:
    m = await newer_mount(mount_factory, compile_failure=failure)
    sim = sim_of(m)
    assert await m.read_bytes("Box", "Main.lsl") == GOOD_LSL.encode()
    if failure == "stoi":
        # The viewer threw converting the compiler's answer, after the upload (viewer-source.md
        # §3): the text is stored, so the save stands as a failed compile without detail.
        assert await m.thread(errno_of, write_file, m.path("Box", "Main.lsl"), BAD_LSL.encode()) == 0
        assert sim.item(MAIN).content == BAD_LSL
        diag = (await m.thread(m.path("Box", ".slfs", "Main.lsl.diag").read_text)).splitlines()
        assert diag == [f"{m.mnt}/Box/Main.lsl:0:0: error: the viewer failed the compile without detail "
                        "(Internal error: stoi)"]
        return
    # A verdict of NUL bytes: cleaned, shown as a failed compile; the save landed and stands.
    assert await m.thread(errno_of, write_file, m.path("Box", "Main.lsl"), BAD_LSL.encode()) == 0
    assert sim.item(MAIN).content == BAD_LSL
    assert not recovery_files(m)
    diag = (await m.thread(m.path("Box", ".slfs", "Main.lsl.diag").read_text)).splitlines()
    assert diag == [f"{m.mnt}/Box/Main.lsl:0:0: error: {UNPRINTABLE}"]


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: flush: create", r"^WARNING slfs\.model\.workspace: creating")
@pytest.mark.viewer(2, reason="newer viewers name why a create failed")
async def test_refused_creates_leave_no_name(mount_factory: MountFactory) -> None:
    m = await newer_mount(mount_factory)
    sim = sim_of(m)
    sim.refuse_next_create(BOX, "inventory is full")
    assert await m.thread(errno_of, write_file, m.path("Box", "New Note"), b"new text\n",
                          os.O_WRONLY | os.O_CREAT | os.O_EXCL) == errno.EIO
    assert "New Note" not in await m.thread(os.listdir, m.path("Box"))

    async def gone() -> bool:
        # The kernel's entry for the name goes by an invalidation sent after the failed flush
        # returned (never from within a request: that can deadlock the kernel), so it may lag.
        return await m.thread(errno_of, os.stat, m.path("Box", "New Note")) == errno.ENOENT

    await m.wait_for(gone, 5, "the refused create's name gone from the kernel's cache")
    assert "Item creation failed: inventory is full" in (await m.status())["last_error"]
    assert "Item creation failed: inventory is full" in m.log_text()
    assert any(r.read_bytes() == b"new text\n" for r in recovery_files(m))
    # The viewer's own no-modify answer: the prim lost modify and no update said so yet.
    sim.object_of(BOX).root.permissions.owner = NO_MOD["owner"]
    assert await m.thread(errno_of, write_file, m.path("Box", "Idea"), b"idea\n",
                          os.O_WRONLY | os.O_CREAT | os.O_EXCL) == errno.EACCES
    assert "Idea" not in await m.thread(os.listdir, m.path("Box"))
    assert not [i for i in sim.object_of(BOX).root.inventory if i.name == "Idea"]
    assert any(r.read_bytes() == b"idea\n" for r in recovery_files(m))
    await settle(m)


async def test_names_that_cannot_be_encoded(mount_factory: MountFactory) -> None:
    world = newer_world(object_name="Box \ud800")
    m = await mount_factory(world)
    names = await m.thread(os.listdir, m.mnt)
    assert "Box \ufffd" in names
    sim = sim_of(m)
    await sim.rename_item(PLAIN, "odd \udfff name")
    await m.wait_for(lambda: _lists(m, "Box \ufffd", "odd \ufffd name"), 2, "renamed item")
    # The root listing never freezes: an object published afterwards appears.
    await sim.publish(SPARE)
    await m.wait_for(lambda: _lists(m, "", "Spare \ufffd"), 2, "published afterwards")
    await sim.rename_prim(BOX, "Box \udbff again")
    await m.wait_for(lambda: _lists(m, "", "Box \ufffd again"), 2, "renamed object")
    assert "Traceback" not in m.log_text()
    assert await m.read_bytes("Box \ufffd again", "Note") == b"note v1\n"
