"""Live sync through the fs operations object (no mount): subscribing, the live directory, saves
into the viewer's temp file, compiles, the end of a subscription, a reconnect."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import trio
from support.inproc import CTX, Driver, fails, fs_against_sim
from support.live_world import BAD, GOOD, INV, world

from slfs.fs.operations import RENAME_NOREPLACE
from slfs.model.buffers import HELD_MAX
from slfs.model.live import ViewerRefused
from slfs.world.naming_rules import SCRIPT_MAX


async def subscribed(fs: Driver) -> tuple[str, str]:
    sid, temp = await fs.sim.open_script_editor(INV)
    await fs.sim.live_seen(sid, 1)  # the viewer's first poll: its own write, ignored
    await fs.ws.live.subscribe(temp)
    return sid, temp


async def test_a_save_reaches_the_viewer_and_its_compile_comes_back(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version,
                              live_poll_interval=0.2) as fs:
        sid, temp = await subscribed(fs)
        assert await fs.entries(".slfs/live") == ["Pocket.lsl", "Pocket.lsl.diag", "Pocket.lsl.log"]
        assert await fs.read_file(".slfs/live/Pocket.lsl") == GOOD.encode()
        await fs.write_file(".slfs/live/Pocket.lsl", BAD.encode())
        assert Path(temp).read_text() == BAD
        ls = fs.ws.live.by_id[sid]
        with trio.fail_after(10):
            while not ls.compiled_since_write:
                await ls.compiled.wait()
        diag = (await fs.read_file(".slfs/live/Pocket.lsl.diag")).decode()
        assert diag.startswith(f"{fs.ws.mountpoint}/.slfs/live/Pocket.lsl:5:")
        assert "Pocket.lsl.state" in await fs.entries(".slfs/live")
        assert fs.sim.item(INV).content == BAD


async def test_two_subscribes_of_one_script_share_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        sid, temp = await fs.sim.open_script_editor(INV)
        got = []
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(lambda: _append(got, fs.ws.live.subscribe(temp)))
        assert got[0] is got[1] and list(fs.ws.live.by_id) == [sid]
        assert sum(1 for m, _p in fs.sim.calls if m == "script.subscribe") == 1


async def _append(out: list[object], awaitable: object) -> None:
    out.append(await awaitable)  # type: ignore[misc]


async def test_a_refusal_and_a_missing_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        sid, temp = await fs.sim.open_script_editor(INV)
        fs.sim.fail_next_subscribe(sid)
        with pytest.raises(ViewerRefused, match="Internal server error"):
            await fs.ws.live.subscribe(temp)
        assert fs.ws.live.by_id == {}
        with pytest.raises(Exception) as missing:
            await fs.ws.live.subscribe(os.path.join(os.path.dirname(temp), f"sl_script_Gone_{'0' * 32}.lsl"))
        assert getattr(missing.value, "errno", None) == errno.ENOENT


async def test_the_editor_closed_while_a_handle_is_dirty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        sid, temp = await subscribed(fs)
        fh = await fs.open(".slfs/live/Pocket.lsl", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"// unsaved\n")
        await fs.sim.close_script_editor(sid)
        with trio.fail_after(10):
            while sid in fs.ws.live.by_id:
                await trio.sleep(0.02)  # the unsubscribe notification is on its way
        assert await fails(fs.ops.flush(fh)) == errno.ENOENT
        await fs.ops.release(fh)
        recovery = tmp_path / "xdg_state_home" / "slfs" / "recovery"
        assert [p.read_bytes() for p in recovery.iterdir()] == [b"// unsaved\n"]
        assert await fs.entries(".slfs/live") == []
        assert not os.path.exists(temp)


async def test_a_reconnect_subscribes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        sid, _temp = await subscribed(fs)
        first = fs.sim.live_editor(sid).holder
        await fs.sim.disconnect_all()
        with trio.fail_after(10):
            while fs.sim.live_editor(sid).holder in (None, first):
                await trio.sleep(0.02)
        assert sid in fs.ws.live.by_id


async def test_the_same_text_written_to_a_live_file_is_not_written_to_the_viewer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    """The viewer saves (recompiles, resets) whatever its temp file is rewritten with: the text it
    holds already is not written again, by a write or a rename-over."""
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        _sid, temp = await subscribed(fs)
        before = os.stat(temp).st_mtime_ns
        await fs.write_file(".slfs/live/Pocket.lsl", GOOD.encode())
        fh = await fs.create(".slfs/live/sedAb12Cd", os.O_RDWR | os.O_CREAT | os.O_EXCL)
        await fs.ops.write(fh, 0, GOOD.encode())
        await fs.rename(".slfs/live/sedAb12Cd", ".slfs/live/Pocket.lsl")
        await fs.ops.release(fh)
        assert os.stat(temp).st_mtime_ns == before and Path(temp).read_text() == GOOD
        assert recovered(tmp_path) == []


async def test_a_live_files_failed_attempt_is_forgotten_once_it_holds_the_viewers_text_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    """As for items: an include not found never reached the viewer, and once the file holds the
    text the viewer has again (nothing to write), its .diag no longer speaks of it."""
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        await subscribed(fs)
        attempt = '#include "missing.lsl"\n' + GOOD
        assert await fails(fs.write_file(".slfs/live/Pocket.lsl", attempt.encode())) != 0
        assert "missing.lsl" in (await fs.read_file(".slfs/live/Pocket.lsl.diag")).decode()
        await fs.write_file(".slfs/live/Pocket.lsl", GOOD.encode())  # what the viewer holds: nothing sent
        assert "missing.lsl" not in (await fs.read_file(".slfs/live/Pocket.lsl.diag")).decode()


# --- tools' temp files in .slfs/live (sed -i, perl -pi) --------------------------------------

def recovered(tmp_path: Path) -> list[bytes]:
    recovery = tmp_path / "xdg_state_home" / "slfs" / "recovery"
    return sorted(p.read_bytes() for p in recovery.iterdir()) if recovery.exists() else []


async def test_a_temp_file_renamed_over_a_live_file_is_saved_into_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        sid, temp = await subscribed(fs)
        fh = await fs.create(".slfs/live/sedAb12Cd", os.O_RDWR | os.O_CREAT | os.O_EXCL)
        await fs.ops.write(fh, 0, BAD.encode())
        assert "sedAb12Cd" in await fs.entries(".slfs/live")
        assert (await fs.stat(".slfs/live/sedAb12Cd")).st_size == len(BAD)
        new_inode = await fs.lookup(".slfs/live/sedAb12Cd")
        await fs.rename(".slfs/live/sedAb12Cd", ".slfs/live/Pocket.lsl")
        assert Path(temp).read_text() == BAD  # written as a close of the live file writes it
        assert await fs.entries(".slfs/live") == ["Pocket.lsl", "Pocket.lsl.diag", "Pocket.lsl.log"]
        # The live file took the renamed file's inode (the kernel's entry for the name holds it).
        assert await fs.lookup(".slfs/live/Pocket.lsl") == new_inode
        assert (await fs.ops.getattr(new_inode, CTX)).st_size == len(BAD)
        # perl and gedit close (or even write) after the rename: that is the live file's now.
        await fs.ops.write(fh, len(BAD), b"// more\n")
        await fs.close(fh)
        assert Path(temp).read_text() == BAD + "// more\n"
        assert await fs.read_file(".slfs/live/Pocket.lsl") == (BAD + "// more\n").encode()
        assert recovered(tmp_path) == []
        assert fs.sim.live_editor(sid).path == temp


async def test_live_files_hold_no_more_than_the_viewer_can_be_sent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    viewer_version: int) -> None:
    """A write at a huge offset or a truncation far past the end of a live file or a temporary
    file beside it: EFBIG, before the daemon allocates anything (it used to zero-fill the gap in
    memory: `truncate -s 100G` was the OOM killer's)."""
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        await subscribed(fs)
        past = HELD_MAX + 1
        fh = await fs.open(".slfs/live/Pocket.lsl", os.O_RDWR)
        assert await fails(fs.ops.write(fh, past - 1, b"x")) == errno.EFBIG
        # Refused whole: the handle takes no more, and nothing of it is saved.
        assert await fails(fs.ops.write(fh, 0, b"x")) == errno.EFBIG
        await fs.ops.release(fh)
        fh = await fs.open(".slfs/live/Pocket.lsl", os.O_RDWR)
        await fs.ops.write(fh, SCRIPT_MAX - 1, b"x")  # up to a script's limit is held
        assert await fails(fs.ops.write(fh, SCRIPT_MAX, b"x")) == errno.EFBIG
        await fs.ops.release(fh)
        assert await fs.read_file(".slfs/live/Pocket.lsl") == GOOD.encode()
        assert await fails(fs.truncate(".slfs/live/Pocket.lsl", past)) == errno.EFBIG
        tmp = await fs.create(".slfs/live/sedAb12Cd", os.O_RDWR | os.O_CREAT | os.O_EXCL)
        assert await fails(fs.ops.write(tmp, past, b"x")) == errno.EFBIG
        assert await fails(fs.truncate(".slfs/live/sedAb12Cd", past)) == errno.EFBIG
        assert (await fs.stat(".slfs/live/sedAb12Cd")).st_size == 0
        await fs.ops.release(tmp)


async def test_a_refused_save_by_rename_fails_the_rename_as_close_would(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        _sid, temp = await subscribed(fs)
        fh = await fs.create(".slfs/live/XXabcdef")
        await fs.ops.write(fh, 0, b"\xff not utf-8\n")
        await fs.close(fh)
        assert await fails(fs.rename(".slfs/live/XXabcdef", ".slfs/live/Pocket.lsl")) == errno.EILSEQ
        assert Path(temp).read_text() == GOOD
        assert await fs.read_file(".slfs/live/Pocket.lsl") == GOOD.encode()
        assert await fs.read_file(".slfs/live/XXabcdef") == b"\xff not utf-8\n"  # nothing changed
        assert recovered(tmp_path) == [b"\xff not utf-8\n"]
        assert "not valid UTF-8" in fs.ws.status()["last_error"]


async def test_unlink_of_a_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        _sid, temp = await subscribed(fs)
        await fs.write_file(".slfs/live/tmpab12cd34", b"scratch\n", create=True)
        assert "tmpab12cd34" in await fs.entries(".slfs/live")
        await fs.unlink(".slfs/live/tmpab12cd34")
        assert "tmpab12cd34" not in await fs.entries(".slfs/live")
        assert await fails(fs.lookup(".slfs/live/tmpab12cd34")) == errno.ENOENT
        assert await fails(fs.unlink(".slfs/live/tmpab12cd34")) == errno.ENOENT
        assert Path(temp).read_text() == GOOD
        # Live files and their sidecars still cannot be removed.
        assert await fails(fs.unlink(".slfs/live/Pocket.lsl")) == errno.EPERM
        assert await fails(fs.unlink(".slfs/live/Pocket.lsl.diag")) == errno.EPERM
        await fs.svc.writer.keep_unsaved(0, save=False)
        assert recovered(tmp_path) == []


async def test_a_temp_file_renamed_to_a_name_that_is_no_live_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        _sid, temp = await subscribed(fs)
        await fs.write_file(".slfs/live/sedAAAAAA", b"draft\n", create=True)
        for name in ("Other.lsl", "notes.txt", "Pocket.lsl~"):
            assert await fails(fs.rename(".slfs/live/sedAAAAAA", f".slfs/live/{name}")) == errno.EPERM
        assert await fails(fs.rename(".slfs/live/sedAAAAAA", ".slfs/live/Pocket.lsl.diag")) == errno.EPERM
        assert await fails(fs.rename(".slfs/live/sedAAAAAA", ".slfs/sedAAAAAA")) == errno.EXDEV
        assert await fs.entries(".slfs/live") == ["Pocket.lsl", "Pocket.lsl.diag", "Pocket.lsl.log", "sedAAAAAA"]
        assert await fs.read_file(".slfs/live/sedAAAAAA") == b"draft\n"
        # To another temp name: a plain rename; over the live file then, a save.
        await fs.rename(".slfs/live/sedAAAAAA", ".slfs/live/.draft.tmp")
        assert await fs.read_file(".slfs/live/.draft.tmp") == b"draft\n"
        assert await fails(fs.lookup(".slfs/live/sedAAAAAA")) == errno.ENOENT
        assert await fails(fs.rename(".slfs/live/.draft.tmp", ".slfs/live/Pocket.lsl", RENAME_NOREPLACE)) \
            == errno.EEXIST
        assert Path(temp).read_text() == GOOD


async def test_creates_in_the_live_directory_other_than_temp_names_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        await subscribed(fs)
        for name in ("Other.lsl", "notes.txt", "4913", ".Pocket.lsl.swp", "Pocket.lsl~"):
            assert await fails(fs.create(f".slfs/live/{name}")) == errno.EPERM, name
        assert await fails(fs.create(".slfs/live/Pocket.lsl")) == errno.EEXIST
        assert await fs.entries(".slfs/live") == ["Pocket.lsl", "Pocket.lsl.diag", "Pocket.lsl.log"]


async def test_a_temp_file_left_behind_goes_to_the_recovery_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   viewer_version: int) -> None:
    from slfs.model import live_writes

    monkeypatch.setattr(live_writes, "SCRATCH_GRACE", 0.3)
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        _sid, temp = await subscribed(fs)
        fh = await fs.create(".slfs/live/tmp.AbCdE12345")
        await fs.ops.write(fh, 0, b"never renamed\n")
        await fs.ops.flush(fh)
        with trio.fail_after(10):  # the name goes first, then the recovery copy is written and noted
            while "tmp.AbCdE12345" in await fs.entries(".slfs/live") \
                    or "not renamed over a live file" not in fs.ws.status()["last_error"]:
                await trio.sleep(0.05)
        assert recovered(tmp_path) == [b"never renamed\n"]
        # Written through a handle still open after that: kept too, and close() says so.
        await fs.ops.write(fh, 0, b"NEVER")
        assert await fails(fs.close(fh)) == errno.EIO
        assert recovered(tmp_path) == [b"NEVER renamed\n", b"never renamed\n"]
        assert Path(temp).read_text() == GOOD


async def test_a_temp_file_at_shutdown_goes_to_the_recovery_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=viewer_version) as fs:
        await subscribed(fs)
        await fs.write_file(".slfs/live/XXq1w2e3", b"half done\n", create=True)
        await fs.write_file(".slfs/live/XXempty0", b"", create=True)
        await fs.svc.writer.keep_unsaved(0)
        assert recovered(tmp_path) == [b"half done\n"]
