"""Write path, end to end: errors, limits, conflicts, disconnects, slots, renames and concurrency."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import time

import pytest
import trio
from support.mount import Mount, MountFactory
from support.writes import (
    ARM,
    ARM_DIR,
    FROZEN,
    GRACE,
    LEFT,
    MAIN,
    MAIN_TEXT,
    NOTE,
    NOTE_TEXT,
    OBJ,
    assert_writes,
    content,
    errno_of,
    item_ids,
    listing,
    mark,
    recovery_files,
    saves,
    settle,
    sh,
    sim_of,
    trash_files,
    write_file,
    write_mount,
    write_world,
    writes,
)

from slfs.protocol.rpc_errors import INVALID_PARAMS, RpcError

AT_FDCWD = -100
RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


def renameat2(src: os.PathLike[str], dst: os.PathLike[str], flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.renameat2(AT_FDCWD, os.fsencode(src), AT_FDCWD, os.fsencode(dst), flags)
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


# --- limits and names ------------------------------------------------------------------------


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: setattr:",
    r"^WARNING slfs\.fs\.guarded: write:",
    r"^WARNING slfs\.model\.workspace:",
)
async def test_efbig_at_the_crossing_write(wm: Mount) -> None:
    m = wm

    def fill(path: os.PathLike[str], limit: int) -> tuple[int, int]:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            first = errno_of(os.write, fd, b"a" * limit)
            second = errno_of(os.write, fd, b"b")
        finally:
            os.close(fd)
        return first, second

    t = mark(m)
    assert await m.thread(fill, m.path("Box", "Note"), 65536) == (0, errno.EFBIG)
    assert await m.thread(fill, m.path("Box", "Big Card"), 65536) == (0, errno.EFBIG)
    assert await m.thread(fill, m.path("Box", "Main.lsl"), 262144) == (0, errno.EFBIG)
    await settle(m)
    # Refused whole: what fitted before the crossing write is not saved, and no item is created.
    assert content(m, NOTE) == NOTE_TEXT and content(m, MAIN) == MAIN_TEXT
    assert "Big Card" not in item_ids(m)
    assert writes(m, t) == []
    # Up to the limit exactly is saved.
    assert await m.thread(errno_of, write_file, m.path("Box", "Note"), b"a" * 65536) == 0
    await settle(m)
    assert content(m, NOTE) == "a" * 65536
    assert await m.thread(errno_of, os.truncate, m.path("Box", "Note"), 65537) == errno.EFBIG
    assert content(m, NOTE) == "a" * 65536


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: setattr:", r"^WARNING slfs\.model\.workspace:")
async def test_truncate_of_a_new_file_far_past_the_limit(wm: Mount) -> None:
    """`truncate -s 100G` of a new file in an object: EFBIG at once (the daemon once zero-filled
    that much memory for the new file), and the mount goes on serving."""
    m = wm
    res = await m.run("truncate", "-s", "100G", m.path("Box", "Huge"), check=False)
    assert res.returncode != 0 and b"File too large" in res.stderr, res
    assert await m.read_bytes("Box", "Note") == NOTE_TEXT.encode()
    assert (await m.status())["state"] == "connected"


@pytest.mark.parametrize("name,err", [
    ("Ünïcödé", errno.EILSEQ), ("a|b", errno.EILSEQ), ("x" * 64, errno.ENAMETOOLONG),
    ("   ", errno.EINVAL), ("tab\there", errno.EILSEQ), ("x" * 64 + ".lsl", errno.ENAMETOOLONG),
])
@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: create:", r"^WARNING slfs\.model\.workspace: rename:")
async def test_bad_names(wm: Mount, name: str, err: int) -> None:
    m = wm
    t = mark(m)
    assert await m.thread(errno_of, write_file, m.path("Box", name), b"x\n") == err
    assert await m.thread(errno_of, os.rename, m.path("Box", "Note"), m.path("Box", name)) == err
    assert "x" * 63 in ("x" * 63)  # 63 bytes is fine:
    await settle(m)
    assert_writes(m, t, [])
    assert "Could not" not in m.log_text()


async def test_63_byte_name_is_fine(wm: Mount) -> None:
    m = wm
    await m.thread(write_file, m.path("Box", "y" * 63), b"ok\n")
    assert content(m, item_ids(m)["y" * 63]) == "ok\n"


# --- permissions -------------------------------------------------------------------------------


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded:")
async def test_no_modify_eacces_even_as_root(wm: Mount) -> None:
    m = wm
    box, locked = m.path("Box"), m.path("Locked")
    t = mark(m)
    e = await m.thread(errno_of, write_file, box / "Frozen", b"x", os.O_WRONLY)
    assert e == errno.EACCES
    assert await m.thread(errno_of, os.truncate, box / "Frozen", 0) == errno.EACCES
    assert await m.thread(errno_of, os.unlink, box / "Frozen") == errno.EACCES
    assert await m.thread(errno_of, os.rename, box / "Frozen", box / "Thawed") == errno.EACCES
    assert await m.thread(errno_of, os.rename, box / "Note", box / "Frozen") == errno.EACCES
    assert await m.thread(errno_of, write_file, locked / "Info", b"x", os.O_WRONLY) == errno.EACCES
    assert await m.thread(errno_of, write_file, locked / "New", b"x") == errno.EACCES
    assert await m.thread(errno_of, os.unlink, locked / "Info") == errno.EACCES
    assert await m.thread(errno_of, os.rename, locked / "Info", locked / "Other") == errno.EACCES
    assert await m.thread(errno_of, os.rename, locked, m.path("Unlocked")) == errno.EACCES
    await settle(m)
    assert_writes(m, t, [])
    assert content(m, FROZEN) == "do not touch\n"
    assert content(m, NOTE) == NOTE_TEXT


# --- renames -----------------------------------------------------------------------------------


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: rename: rename: exchanging files is")
async def test_renameat2_flags(wm: Mount) -> None:
    m = wm
    box = m.path("Box")
    t = mark(m)
    assert await m.thread(errno_of, renameat2, box / "Note", box / "Frozen", RENAME_NOREPLACE) == errno.EEXIST
    assert await m.thread(errno_of, renameat2, box / "Note", box / "Main.lsl", RENAME_EXCHANGE) == errno.EINVAL
    assert await m.thread(errno_of, renameat2, box / "Note", box / "Memo", RENAME_NOREPLACE) == 0
    await settle(m)
    assert item_ids(m)["Memo"] == NOTE
    assert_writes(m, t, [("object.item.modify", NOTE)])


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: rename:",
                       r"^WARNING slfs\.model\.workspace: rename: .*cannot change in place")
async def test_mv_inside_prim_across_prims_and_kinds(wm: Mount) -> None:
    m = wm
    box = m.path("Box")
    t = mark(m)
    await m.run("mv", box / "Note", box / "Renamed")
    await settle(m)
    assert item_ids(m)["Renamed"] == NOTE and content(m, NOTE) == NOTE_TEXT
    assert_writes(m, t, [("object.item.modify", NOTE)])
    # A script's language cannot change in place: EPERM (not EXDEV, on which mv makes a new item)
    # and the reason in the status.
    t, before = mark(m), item_ids(m)
    res = await m.run("mv", box / "Main.lsl", box / "Main.luau", check=False)
    assert res.returncode != 0 and b"not permitted" in res.stderr, res
    assert "language (LSL or Luau) cannot change in place" in (await m.status())["last_error"]
    await settle(m)
    assert writes(m, t) == [] and item_ids(m) == before
    assert await m.thread(errno_of, os.rename, box / "Main.lsl", box / "Main") == errno.EXDEV
    assert await m.thread(errno_of, os.rename, box / "Renamed", box / ARM_DIR / "Renamed") == errno.EXDEV
    # mv falls back to copy and delete
    t = mark(m)
    await m.run("mv", box / "Renamed", box / ARM_DIR / "Moved")
    await settle(m)
    arm = item_ids(m, ARM)
    assert content(m, arm["Moved"]) == NOTE_TEXT and "Renamed" not in item_ids(m)
    assert sorted(writes(m, t)) == sorted([("object.item.create", "Moved"), ("object.item.delete", NOTE)])
    assert len(trash_files(m)) == 1
    t = mark(m)
    await m.run("mv", box / ARM_DIR, box / "Limb")
    await settle(m)
    assert_writes(m, t, [("object.modify", ARM)])
    assert m.sim.world.find_prim(ARM)[1].name == "Limb"  # type: ignore[union-attr,index]
    assert LEFT in item_ids(m, ARM).values()


async def test_rename_over_item_saves_into_it(wm: Mount) -> None:
    m = wm
    box = m.path("Box")
    await m.thread(write_file, box / "Draft", b"draft text\n")
    draft = item_ids(m)["Draft"]
    t = mark(m)
    await m.thread(os.rename, box / "Draft", box / "Note")
    await settle(m)
    assert content(m, NOTE) == "draft text\n" and item_ids(m)["Note"] == NOTE
    assert sorted(writes(m, t)) == sorted([*saves(NOTE), ("object.item.delete", draft)])


# --- unlink, tombstones, trash -----------------------------------------------------------------


async def test_rm_goes_after_grace_with_trash_copy(wm: Mount) -> None:
    m = wm
    box = m.path("Box")
    t = mark(m)
    await m.thread(os.unlink, box / "Note")
    assert "Note" not in listing(m, "Box")
    assert_writes(m, t, [])  # not yet: the grace period
    await settle(m)
    assert_writes(m, t, [("object.item.delete", NOTE)])
    assert "Note" not in item_ids(m)
    (copy,) = trash_files(m)
    assert copy.read_text() == NOTE_TEXT


async def test_rm_then_create_within_grace_adopts(wm: Mount) -> None:
    m = wm
    box = m.path("Box")
    t = mark(m)
    await m.thread(os.unlink, box / "Main.lsl")
    await m.thread(write_file, box / "Main.lsl", b"default { }\n", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    await settle(m)
    assert item_ids(m)["Main"] == MAIN and content(m, MAIN) == "default { }\n"
    assert_writes(m, t, saves(MAIN))


async def test_unlinked_open_file_never_reaches_viewer(wm: Mount) -> None:
    m = wm
    p = m.path("Box", "Note")

    def go() -> None:
        fd = os.open(p, os.O_RDWR)
        os.write(fd, b"zzz")
        os.unlink(p)
        os.close(fd)

    t = mark(m)
    await m.thread(go)
    await settle(m)
    assert_writes(m, t, [("object.item.delete", NOTE)])


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: mkdir: mkdir sub: prims cannot")
async def test_mkdir_rules_and_overlay(wm: Mount) -> None:
    m = wm
    box = m.path("Box")
    t = mark(m)
    assert await m.thread(errno_of, os.mkdir, box / "sub") == errno.EPERM
    await m.thread(os.mkdir, box / ".vscode")
    await m.thread(write_file, box / ".vscode" / "settings.json", b"{}\n")
    await m.thread(os.symlink, "Note", box / ".link")
    await m.thread(os.link, box / ".vscode" / "settings.json", box / ".hard")
    await m.thread(os.chmod, box / ".hard", 0o600)
    assert os.readlink(box / ".link") == "Note"
    assert (os.stat(box / ".hard").st_mode & 0o777) == 0o600
    assert (box / ".hard").read_bytes() == b"{}\n"
    for name in ("4913", "Note~", "#Note#", ".#Note", "Note.swp", "sedAb12Cd", "x___jb_tmp___", "XXYo5Cue"):
        await m.thread(write_file, box / name, b"temp\n")
    await settle(m)
    assert_writes(m, t, [])
    assert "4913" in listing(m, "Box")


async def test_hard_links_in_the_overlay(wm: Mount) -> None:
    """`ln` in the overlay: both names are one file and show the link count a local disk would, at
    once (each step runs within one shell, inside the 1 s the kernel may cache overlay attributes)."""
    m = wm
    box = m.path("Box")
    a, b = box / ".tool.sh", box / ".tool-hard"
    t = mark(m)
    await m.thread(write_file, a, b"#!/bin/sh\necho one\n")

    async def stats(script: str) -> list[list[str]]:
        out = (await m.sh(script, cwd=box)).stdout.decode()
        return [line.split() for line in out.splitlines()]

    before, *after = await stats(
        "stat -c '%i %h' .tool.sh; ln .tool.sh .tool-hard; stat -c '%i %h' .tool.sh .tool-hard"
    )
    assert before[1] == "1"
    assert after == [[before[0], "2"], [before[0], "2"]], (before, after)
    # What is written through one name shows in the other (size, content), and ls -i agrees.
    sizes = await stats("stat -c %s .tool.sh; echo two >> .tool-hard; stat -c %s .tool.sh .tool-hard")
    assert sizes == [["19"], ["23"], ["23"]]
    assert await m.out("cat", a) == "#!/bin/sh\necho one\ntwo\n"
    listed = {line.split()[1]: line.split()[0] for line in (await m.out("ls", "-ai", box)).splitlines()}
    assert listed[".tool.sh"] == listed[".tool-hard"] == before[0]
    # Removing one name: back to 1 for the other, which keeps working (by its own name).
    left = await stats("stat -c %h .tool.sh; rm .tool-hard; stat -c %h .tool.sh")
    assert left == [["2"], ["1"]]
    assert not await m.thread(os.path.lexists, b)
    await m.sh("echo three >> .tool.sh", cwd=box)
    assert await m.out("cat", a) == "#!/bin/sh\necho one\ntwo\nthree\n"
    # A link into an overlay directory, one name renamed, then the first name removed.
    await m.thread(os.mkdir, box / ".bin")
    moved = await stats("ln .tool.sh .bin/t; mv .bin/t .bin/tool; rm .tool.sh; stat -c '%h' .bin/tool")
    assert moved == [["1"]]
    assert await m.out("cat", box / ".bin" / "tool") == "#!/bin/sh\necho one\ntwo\nthree\n"
    # Hard links already on disk when the daemon starts are one inode too.
    await m.run("ln", box / ".bin" / "tool", a)
    await m.restart_daemon(options=[f"delete_grace={GRACE}"])
    again = await stats("stat -c '%i %h' .tool.sh .bin/tool")
    assert again[0] == again[1] and again[0][1] == "2", again
    await settle(m)
    assert_writes(m, t, [])


# --- failures: viewer down, conflicts, unpublish, retries --------------------------------------


async def test_save_during_a_one_second_drop_lands(wm: Mount) -> None:
    """A save right after the viewer dropped waits (reconnect_wait, default 5 s) for the session."""
    m = wm
    await m.read_bytes("Box", "Note")
    world = sim_of(m).world
    m.stop_sim()
    await m.wait_for(lambda: _state_not(m, "connected"), 10, "daemon notices the viewer is gone")

    async def back_in_a_second() -> None:
        await trio.sleep(1)
        await m.start_sim(world)

    m.nursery.start_soon(back_in_a_second)
    assert await m.thread(errno_of, write_file, m.path("Box", "Note"), b"saved across the drop\n") == 0
    assert content(m, NOTE) == "saved across the drop\n"
    assert recovery_files(m) == []


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: flush: create",
    r"^WARNING slfs\.fs\.guarded: flush: save",
    r"^WARNING slfs\.fs\.guarded: lookup:",
    r"^WARNING slfs\.model\.workspace: creating",
    r"^WARNING slfs\.model\.workspace: saving",
    r"^WARNING slfs\.model\.workspace: create: Box/Newer: cannot create a file while not connected",
)
async def test_save_while_viewer_down(mount_factory: MountFactory) -> None:
    # A call waits up to reconnect_wait after a drop for the session to come back; then it fails.
    m = await write_mount(mount_factory, "reconnect_wait=1")
    p = m.path("Box", "Note")
    await m.read_bytes("Box", "Note")
    old_world = m.sim.world  # type: ignore[union-attr]
    m.stop_sim()
    await m.wait_for(lambda: _state_not(m, "connected"), 10, "daemon notices the viewer is gone")

    def failing_close() -> tuple[int, float]:
        fd = os.open(p, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b"written offline\n")
        start = time.monotonic()
        e = errno_of(os.close, fd)
        return e, time.monotonic() - start

    e, took = await m.thread(failing_close)
    assert e == errno.EIO and took < 5
    (rec,) = recovery_files(m)
    assert rec.read_bytes() == b"written offline\n"
    assert "recovery" in (await m.status()).get("last_recovery", "") or rec.name in str(await m.status())
    start = time.monotonic()
    assert await m.thread(errno_of, write_file, m.path("Box", "Newer"), b"x\n") == errno.EIO  # at open()
    assert await m.thread(errno_of, os.unlink, m.path("Box", "Main.lsl")) == errno.EIO
    assert time.monotonic() - start < 10
    # the viewer comes back; the file is still dirty: a second close sends it
    await m.start_sim(old_world)
    await m.wait_live("connected", timeout=30)
    assert (await m.read_bytes("Box", "Main.lsl")) == MAIN_TEXT.encode()
    t = mark(m)
    await m.thread(lambda: os.close(os.open(p, os.O_WRONLY)))
    assert content(m, NOTE) == "written offline\n"
    assert_writes(m, t, saves(NOTE))


async def _state_not(m: Mount, state: str) -> bool:
    return (await m.status()).get("state") != state


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: flush: save", r"^WARNING slfs\.model\.workspace: saving")
async def test_failed_save_stays_dirty(wm: Mount) -> None:
    m = wm
    p = m.path("Box", "Note")
    m.sim.fail_next("object.content.save", RpcError(-32000, "Request timed out"))  # type: ignore[union-attr]
    m.sim.fail_next("object.content.save", RpcError(-32000, "Request timed out"))  # type: ignore[union-attr]
    t = mark(m)
    e = await m.thread(errno_of, write_file, p, b"keep me\n")
    assert e != 0
    assert len(recovery_files(m)) == 1
    e = await m.thread(errno_of, lambda: os.close(os.open(p, os.O_WRONLY)))
    assert e != 0
    await m.thread(lambda: os.close(os.open(p, os.O_WRONLY)))  # :w again
    assert content(m, NOTE) == "keep me\n"
    assert_writes(m, t, saves(NOTE, 3))


async def test_transient_not_found_is_retried(wm: Mount) -> None:
    m = wm
    m.sim.fail_next("object.content.save",  # type: ignore[union-attr]
                    RpcError(INVALID_PARAMS, "Invalid params: Item not found in prim inventory"))
    t = mark(m)
    await m.thread(write_file, m.path("Box", "Note"), b"retried\n")
    assert content(m, NOTE) == "retried\n"
    assert_writes(m, t, saves(NOTE, 2))
    assert recovery_files(m) == []


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: flush:", r"^WARNING slfs\.model\.workspace:")
async def test_in_world_change_between_read_and_save_is_estale(wm: Mount) -> None:
    m = wm
    p = m.path("Box", "Note")

    def open_and_read() -> int:
        fd = os.open(p, os.O_RDWR)
        assert os.read(fd, 100) == NOTE_TEXT.encode()
        return fd

    fd = await m.thread(open_and_read)
    await m.sim.set_content(NOTE, "changed in-world\n")  # type: ignore[union-attr]
    await m.sim.quiesce()  # type: ignore[union-attr]  # slfs has applied the update
    t = mark(m)

    def write_close() -> int:
        os.pwrite(fd, b"LOCAL", 0)
        return errno_of(os.close, fd)

    assert await m.thread(write_close) == errno.ESTALE
    assert content(m, NOTE) == "changed in-world\n"
    assert_writes(m, t, [])
    (rec,) = recovery_files(m)
    assert rec.read_bytes() == b"LOCAL" + NOTE_TEXT.encode()[5:]
    assert (await m.read_bytes("Box", "Note")) == b"changed in-world\n"
    # own earlier saves are not conflicts
    await m.thread(write_file, p, b"mine\n")
    await m.sim.quiesce()  # type: ignore[union-attr]  # the save's own update has come back and been applied
    await m.thread(write_file, p, b"mine again\n")
    assert content(m, NOTE) == "mine again\n"


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: flush:", r"^WARNING slfs\.model\.workspace:")
async def test_an_edit_in_world_before_our_echo_is_shown_and_guarded(mount_factory: MountFactory) -> None:
    """Someone edits the script right after our save, and their update comes before our save's
    echo (0.3 s late here): the file shows their edit, and a buffer still holding ours is not
    saved over it."""
    m = await write_mount(mount_factory, sim_kwargs={"apply_delay": 0.3})
    p = m.path("Box", "Main.lsl")
    ours = MAIN_TEXT.replace('"one"', '"ours"').encode()
    theirs = MAIN_TEXT.replace('"one"', '"theirs"')
    fd = await m.thread(os.open, p, os.O_RDWR | os.O_TRUNC)
    try:
        await m.thread(os.write, fd, ours)
        await m.thread(os.fsync, fd)  # saved; its echo comes 0.3 s later
        await m.sim.set_content(MAIN, theirs)  # type: ignore[union-attr]
        await m.thread(os.write, fd, b"// more of ours\n")
        await m.sim.quiesce()  # type: ignore[union-attr]  # their update and our echo are applied
    finally:
        closed = await m.thread(errno_of, os.close, fd)
    assert closed == errno.ESTALE
    assert content(m, MAIN) == theirs
    assert (await m.run("cat", str(p))).stdout == theirs.encode()
    assert any(r.read_bytes() == ours + b"// more of ours\n" for r in recovery_files(m))


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace:")
async def test_unpublish_while_open_for_writing(wm: Mount) -> None:
    m = wm
    p = m.path("Box", "Note")
    fd = await m.thread(os.open, p, os.O_WRONLY)
    await m.thread(os.write, fd, b"orphaned\n")
    t = mark(m)
    await m.sim.unpublish(OBJ)  # type: ignore[union-attr]
    await m.sim.quiesce()  # type: ignore[union-attr]  # slfs has applied the unpublish
    e = await m.thread(errno_of, os.close, fd)
    assert e != 0, "content of an unpublished object must not be silently dropped"
    assert any(r.read_bytes() == b"orphaned\n" + NOTE_TEXT.encode()[9:] for r in recovery_files(m))
    assert_writes(m, t, [])
    assert content(m, NOTE) == NOTE_TEXT
    assert "Box" not in os.listdir(m.mnt)


async def test_compile_failure_still_saves(wm: Mount) -> None:
    m = wm
    bad = "default { state_entry() { llOwnerSay(\"x\") } \n"
    await m.thread(write_file, m.path("Box", "Main.lsl"), bad.encode())
    assert content(m, MAIN) == bad
    diag = (await m.read_bytes("Box", ".slfs", "Main.lsl.diag")).decode()
    assert diag.startswith(str(m.path("Box", "Main.lsl")) + ":")


# --- concurrency and shutdown ------------------------------------------------------------------


async def test_16_concurrent_writers(wm: Mount) -> None:
    m = wm
    box = m.path("Box")

    def writer(i: int) -> None:
        for round_ in range(5):
            write_file(box / f"W{i:02d}", f"writer {i} round {round_}\n".encode() * (i + 1))

    t = mark(m)
    async with trio.open_nursery() as n:
        for i in range(16):
            n.start_soon(m.thread, writer, i)
    await settle(m)
    ids = item_ids(m)
    for i in range(16):
        assert content(m, ids[f"W{i:02d}"]) == f"writer {i} round 4\n" * (i + 1)
    got = writes(m, t)
    assert sorted(k for meth, k in got if meth == "object.item.create") == [f"W{i:02d}" for i in range(16)]
    assert all(meth in ("object.item.create", "object.content.save") for meth, _ in got)
    assert len(got) == 16 * 5


async def test_sigterm_waits_for_pending_saves(mount_factory: MountFactory) -> None:
    m = await write_mount(mount_factory, sim_kwargs={"method_latency_ms": {"object.content.save": 1500}})
    p = m.path("Box", "Note")

    def slow_close() -> None:
        errno_of(write_file, p, b"landed at shutdown\n")

    async with trio.open_nursery() as n:
        n.start_soon(m.thread, slow_close)
        await m.wait_for(lambda: _has_save(m), 5, "save in flight")
        m.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        with trio.fail_after(15):
            await m.proc.wait()  # type: ignore[union-attr]
    assert content(m, NOTE) == "landed at shutdown\n"


async def _has_save(m: Mount) -> bool:
    return any(meth == "object.content.save" for meth, _ in m.sim.calls)  # type: ignore[union-attr]


def _unused() -> object:
    return write_world, sh, saves
