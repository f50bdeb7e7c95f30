"""The write path, driven through the fs operations object against the simulator (no mount)."""

from __future__ import annotations

import errno
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from support.inproc import Driver, fails, fs_against_sim
from support.writes import ARM_DIR, FROZEN, MAIN, MAIN_TEXT, NOTE, NOTE_TEXT, OBJ, write_world

from slfs.fs.operations import BARE_FH
from slfs.model.options import Options
from slfs.protocol.rpc_errors import RpcError
from slfs.world.tree import Item


def saves(fs: Driver, item_id: str) -> list[str]:
    return [p["content"] for m, p in fs.sim.calls if m == "object.content.save" and p.get("item_id") == item_id]


def calls(fs: Driver, method: str) -> int:
    return sum(1 for m, _ in fs.sim.calls if m == method)


def recovery(tmp_path: Path) -> list[bytes]:
    d = tmp_path / "xdg_state_home" / "slfs" / "recovery"
    return [p.read_bytes() for p in sorted(d.iterdir())] if d.is_dir() else []


async def test_save_lands_on_the_same_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()
        await fs.write_file("Box/Note", b"new text\n")
        assert fs.sim.item(NOTE).content == "new text\n"
        assert saves(fs, NOTE) == ["new text\n"]
        assert await fs.read_file("Box/Note") == b"new text\n"


async def test_vim_style_rename_away_and_recreate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  viewer_version: int) -> None:
    """`mv F F~` then a create of F: the item comes back (same item_id), nothing deleted in-world."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.read_file("Box/Note")
        await fs.rename("Box/Note", "Box/.Note~")
        assert "Note" not in await fs.entries("Box")
        await fs.write_file("Box/Note", b"vim wrote this\n", create=True)
        assert fs.sim.item(NOTE).content == "vim wrote this\n"
        assert await fs.read_file("Box/.Note~") == NOTE_TEXT.encode()  # the backup, local
        await trio.sleep(0.3)  # past delete_grace (0.2 s): nothing may be deleted
        assert calls(fs, "object.item.delete") == 0 and calls(fs, "object.item.create") == 0


async def test_rm_then_create_within_grace_adopts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.unlink("Box/Note")
        assert await fails(fs.lookup("Box/Note")) == errno.ENOENT
        await fs.write_file("Box/Note", b"again\n", create=True)
        await trio.sleep(0.3)
        assert fs.sim.item(NOTE).content == "again\n"
        assert calls(fs, "object.item.delete") == 0


async def test_rm_deletes_after_the_grace_with_a_trash_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.unlink("Box/Note")
        with trio.fail_after(5):
            while calls(fs, "object.item.delete") == 0:
                await trio.sleep(0.02)
        await fs.svc.writer.wait_idle(5)
        trash = tmp_path / "xdg_data_home" / "slfs" / "trash"
        assert [p.read_bytes() for p in trash.iterdir()] == [NOTE_TEXT.encode()]


async def test_new_file_is_created_once_even_with_two_flushes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              method_latency_ms={"object.item.create": 200}) as fs:
        fh = await fs.create("Box/Fresh")
        await fs.ops.write(fh, 0, b"first\n")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fs.ops.flush, fh)
            nursery.start_soon(fs.ops.flush, fh)
            await trio.sleep(0.05)
            await fs.ops.write(fh, 6, b"second\n")  # while the create is in flight
        await fs.close(fh)
        assert calls(fs, "object.item.create") == 1
        (item,) = [i for i in fs.sim.object_of(OBJ).root.inventory if i.name == "Fresh"]
        assert item.content == "first\nsecond\n"


async def test_o_trunc_of_a_file_another_handle_edits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        a = await fs.open("Box/Note", os.O_RDWR)
        await fs.ops.write(a, 0, b"XX")
        b = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(b, 0, b"short\n")
        await fs.close(b)
        await fs.close(a)
        assert fs.sim.item(NOTE).content == "short\n"


async def test_moves_between_prims_and_kinds_are_exdev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert await fails(fs.rename("Box/Note", f"Box/{ARM_DIR}/Note")) == errno.EXDEV
        assert await fails(fs.rename("Box/Note", "Box/Note.lsl")) == errno.EXDEV
        assert await fails(fs.rename("Box/Main.lsl", "Box/Main.luau")) == errno.EPERM  # the language: no mv copy
        await fs.rename("Box/Note", "Box/Renamed")
        await fs.sim.idle()  # object.item.modify is applied after its answer, as in a viewer
        assert fs.sim.item(NOTE).name == "Renamed"
        assert "Renamed" in await fs.entries("Box")


async def test_rename_over_an_item_saves_into_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.write_file("Box/.Main.lsl.tmp", MAIN_TEXT.replace("one", "two").encode(), create=True)
        await fs.rename("Box/.Main.lsl.tmp", "Box/Main.lsl")
        assert fs.sim.item(MAIN).content == MAIN_TEXT.replace("one", "two")
        assert calls(fs, "object.item.create") == 0
        assert await fails(fs.lookup("Box/.Main.lsl.tmp")) == errno.ENOENT


async def test_no_modify_item_is_eacces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert await fails(fs.open("Box/Frozen", os.O_WRONLY)) == errno.EACCES
        assert await fails(fs.unlink("Box/Frozen")) == errno.EACCES
        assert fs.sim.item(FROZEN).content == "do not touch\n"


async def test_unpublished_while_open_goes_to_recovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"mine\n")
        await fs.sim.unpublish(OBJ)
        with trio.fail_after(5):
            while OBJ in fs.ws.tree.objects:
                await trio.sleep(0.01)
        assert await fails(fs.ops.flush(fh)) == errno.ENOENT
        await fs.ops.release(fh)
        assert recovery(tmp_path) == [b"mine\n"]


async def _edit_changed_in_world(fs: Driver) -> int:
    """A handle of Box/Note with unsaved writes, then an in-world change of it, applied."""
    fh = await fs.open("Box/Note", os.O_RDWR)
    await fs.ops.write(fh, 0, b"MINE")
    node = fs.ws.tree.by_uuid[NOTE]
    assert isinstance(node, Item)
    seen = node.cache.generation
    await fs.sim.set_content(NOTE, "changed in-world\n")
    # The update arrives (and a background refetch may follow it at once).
    assert await fs.ws.wait_for_world(lambda: node.cache.generation != seen, 5)
    return fh


def _block_recovery(tmp_path: Path) -> None:
    """The state dir cannot take a recovery copy (a file where the folder should be)."""
    (tmp_path / "xdg_state_home" / "slfs").mkdir(parents=True, exist_ok=True)
    (tmp_path / "xdg_state_home" / "slfs" / "recovery").write_text("not a folder")


async def test_conflict_is_estale_with_recovery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fh = await _edit_changed_in_world(fs)
        assert await fails(fs.ops.flush(fh)) == errno.ESTALE
        await fs.ops.release(fh)
        assert fs.sim.item(NOTE).content == "changed in-world\n"
        assert recovery(tmp_path) == [b"MINE" + NOTE_TEXT.encode()[4:]]
        assert await fs.read_file("Box/Note") == b"changed in-world\n"
        (copy,) = (tmp_path / "xdg_state_home" / "slfs" / "recovery").iterdir()
        assert fs.ws.status()["last_error"].endswith(f"not saved (conflict); your version is in {copy}")


async def test_bare_truncation_and_truncate_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.flush(fh)  # bash's `>` closes a duplicate before it writes: nothing yet
        assert saves(fs, NOTE) == []
        # Never written: the bare truncation saves an empty text, which the documents' viewers
        # store (G1-G3 refuse it: tests/e2e/test_bulk_safety.py).
        await fs.ops.release(fh)
        assert saves(fs, NOTE) == [""]
        assert fs.sim.item(NOTE).content == ""
        assert await fs.read_file("Box/Note") == b""
        assert recovery(tmp_path) == []
        await fs.write_file("Box/Note", b"0123456789")
        await fs.truncate("Box/Note", 4)
        assert fs.sim.item(NOTE).content == "0123"


async def test_a_background_job_failure_leaves_the_mount_serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 viewer_version: int) -> None:
    monkeypatch.setenv("SLFS_INJECT_JOB_FAULT", "_delete_later")
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.unlink("Box/Note")
        await trio.testing.wait_all_tasks_blocked()
        status = fs.ws.status()
        assert status["background_errors"] == 1 and "_delete_later" in status["last_error"]
        await fs.write_file("Box/Main.lsl", MAIN_TEXT.encode() + b"// more\n")  # still serving
        assert saves(fs, MAIN) == [MAIN_TEXT + "// more\n"]


async def test_recovery_on_a_full_disk_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        _block_recovery(tmp_path)
        fs.sim.fail_next("object.content.save", RpcError(-32603, "Internal error: disk full in-world"))
        with pytest.raises(Exception) as info:
            await fs.write_file("Box/Note", b"precious\n")
        assert getattr(info.value, "errno", None) == errno.EIO
        status = fs.ws.status()
        assert status["disk_errors"] == 1
        # Found by a black-box probe: this read "your content is in nowhere: the recovery copy failed".
        assert status["last_error"].endswith("Internal error: disk full in-world; "
                                             "the recovery copy failed too (see the log)"), status
        assert "nowhere" not in status["last_error"]


async def test_a_conflict_whose_recovery_copy_fails_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int, caplog: pytest.LogCaptureFixture) -> None:
    """ESTALE's message names the recovery copy; when the copy failed, it says that instead."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        _block_recovery(tmp_path)
        fh = await _edit_changed_in_world(fs)
        assert await fails(fs.ops.flush(fh)) == errno.ESTALE
        await fs.ops.release(fh)
        messages = [r.getMessage() for r in caplog.records]
        assert "flush: Box/Note: changed in-world since it was read; the recovery copy failed too (see the log)" \
            in messages, messages
        assert not any("nowhere" in m for m in messages), messages


async def test_reconnect_wait_lets_a_save_land(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              options=Options(delete_grace=0.2, reconnect_wait=5)) as fs:
        fs.ws.session.backoff_min = fs.ws.session.backoff_max = 0.2
        await fs.read_file("Box/Note")
        await fs.sim.disconnect_all()
        with trio.fail_after(5):
            while fs.ws.connected:
                await trio.sleep(0.01)
        await fs.write_file("Box/Note", b"during the reconnect\n")
        assert fs.sim.item(NOTE).content == "during the reconnect\n"


async def test_a_read_cut_by_a_drop_is_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              method_latency_ms={"object.content.get": 300}) as fs:
        got: list[bytes] = []

        async def read() -> None:
            got.append(await fs.read_file("Box/Note"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            with trio.fail_after(5):
                while not any(m == "object.content.get" for m, _ in fs.sim.calls):
                    await trio.sleep(0.01)
            await fs.sim.disconnect_all()  # the fetch is cut; content.get is safe to ask again
        assert got == [NOTE_TEXT.encode()]
        # Asked again after the reconnect (older viewers' object.list may then cause a refetch).
        assert calls(fs, "object.content.get") >= 2


async def test_a_new_file_is_bounded_by_its_items_limit_at_a_truncation_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    """`truncate -s` of a new file before its first flush (no item yet): EFBIG past the limit of
    the item it will be, as a write there is; before, the daemon zero-filled any size in memory."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fh = await fs.create("Box/Fresh")
        assert await fails(fs.truncate("Box/Fresh", 65_537)) == errno.EFBIG
        # Refused whole: the new file is gone, and its close creates nothing in-world.
        assert await fails(fs.truncate("Box/Fresh", 16 << 20)) == errno.ENOENT
        await fs.close(fh)
        assert calls(fs, "object.item.create") == 0
        fh = await fs.create("Box/Fresh")
        assert await fails(fs.truncate("Box/Fresh", 16 << 20)) == errno.EFBIG
        fh = await fs.create("Box/Fresh")
        await fs.truncate("Box/Fresh", 65_536)
        await fs.close(fh)
        assert calls(fs, "object.item.create") == 1
        assert (await fs.stat("Box/Fresh")).st_size == 65_536


def cut_after(fs: Driver, monkeypatch: pytest.MonkeyPatch, method: str,
              act: Callable[[dict[str, Any], Any], Awaitable[Any]]) -> None:
    """The viewer's next `method` call runs `act` (the real handler, or something else) and then
    drops every connection before it answers: the client cannot know what happened."""
    handlers = fs.sim._handlers
    real = handlers[method]

    async def cut(params: dict[str, Any], ctx: Any) -> Any:
        handlers[method] = real
        await act(params, ctx)
        await fs.sim.disconnect_all()

    monkeypatch.setitem(handlers, method, cut)


@pytest.mark.parametrize("landed", [pytest.param(True, id="landed"), pytest.param(False, id="lost")])
async def test_a_save_cut_by_a_drop_is_sent_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int,
                                                  landed: bool) -> None:
    """A save the drop cut, landed in-world or not: the item holds what we sent or what the file
    was read from, so the save goes again once the session is back and the close returns 0."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fs.ws.session.backoff_min = fs.ws.session.backoff_max = 0.05
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()
        real = fs.sim._handlers["object.content.save"]

        async def lost(params: dict[str, Any], ctx: Any) -> None:
            pass

        cut_after(fs, monkeypatch, "object.content.save", real if landed else lost)
        await fs.write_file("Box/Note", b"saved through a drop\n")
        assert fs.sim.item(NOTE).content == "saved through a drop\n"
        assert saves(fs, NOTE) == ["saved through a drop\n"] * 2
        assert recovery(tmp_path) == []
        assert await fs.read_file("Box/Note") == b"saved through a drop\n"


async def test_a_save_cut_by_a_drop_does_not_overwrite_a_change_made_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    """The drop cut our save, and the item now holds neither its base nor our text: someone else's
    change, which a second save would overwrite. ESTALE, our text in the recovery folder."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fs.ws.session.backoff_min = fs.ws.session.backoff_max = 0.05
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()

        async def changed_elsewhere(params: dict[str, Any], ctx: Any) -> None:
            item = fs.sim.item(NOTE)
            item.content = "changed in-world meanwhile\n"
            item.revision = fs.sim.world.next_revision()

        cut_after(fs, monkeypatch, "object.content.save", changed_elsewhere)
        assert await fails(fs.write_file("Box/Note", b"ours\n")) == errno.ESTALE
        assert fs.sim.item(NOTE).content == "changed in-world meanwhile\n"
        assert saves(fs, NOTE) == ["ours\n"]
        assert recovery(tmp_path) == [b"ours\n"]
        assert await fs.read_file("Box/Note") == b"changed in-world meanwhile\n"


async def test_a_handle_opened_before_a_change_reads_the_new_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      viewer_version: int) -> None:
    """One page cache per inode: a reader that opened before the viewer's change and reads after
    its invalidation must not bring the old pages back (every later keep_cache open would see them)."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fh = await fs.open("Box/Note")
        assert await fs.ops.read(fh, 0, 4096) == NOTE_TEXT.encode()
        node = fs.ws.tree.by_uuid[NOTE]
        assert isinstance(node, Item)
        seen = node.cache.generation
        await fs.sim.set_content(NOTE, "changed in-world\n")
        assert await fs.ws.wait_for_world(lambda: node.cache.generation != seen, 5)
        assert await fs.read_file("Box/Note") == b"changed in-world\n"  # a new open has the new content
        assert await fs.ops.read(fh, 0, 4096) == b"changed in-world\n"
        await fs.close(fh)


async def test_read_only_handles_are_bare_and_follow_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              viewer_version: int) -> None:
    """A read-only open of an item holds no handle entry (the warm grep -r path), yet reads what the
    file holds now: another handle's unsaved writes, then the stored text."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        reader = await fs.open("Box/Note")
        assert reader >= BARE_FH and not fs.ops._handles
        assert await fs.ops.read(reader, 0, 4096) == NOTE_TEXT.encode()
        writer = await fs.open("Box/Note", os.O_WRONLY)
        await fs.ops.write(writer, 0, b"UNSAVED")
        assert (await fs.ops.read(reader, 0, 7)) == b"UNSAVED"
        await fs.close(writer)
        assert await fs.ops.read(reader, 0, 4096) == b"UNSAVED" + NOTE_TEXT.encode()[7:]
        await fs.ops.fsync(reader, False)  # read-only: nothing to store, no error
        await fs.close(reader)
        assert list(fs.ops._handles) == []
        await fs.sim.quiesce()
        assert calls(fs, "object.content.get") == 2  # the first read, and one confirming our save


async def test_a_read_only_handle_follows_its_item_to_a_local_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    viewer_version: int) -> None:
    """An item renamed to a dot name becomes an overlay file with the same inode: a read-only
    handle opened before reads that file, as a handle of a local disk would."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        reader = await fs.open("Box/Note")
        await fs.rename("Box/Note", "Box/.note-backup")
        assert await fs.ops.read(reader, 0, 4096) == NOTE_TEXT.encode()
        await fs.close(reader)
        assert await fs.read_file("Box/.note-backup") == NOTE_TEXT.encode()


async def test_a_reconnect_right_after_a_save_is_no_echo_of_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               viewer_version: int) -> None:
    """The first inventory after our save passes for its echo (the content is what we saved), but
    only on the connection the save was made on: a viewer killed before its echo and started again
    with other content (its own state) lists the item afresh, and the file shows what it holds."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fs.ws.session.backoff_min = fs.ws.session.backoff_max = 0.05

        async def killed_before_its_echo(*args: object) -> None:
            pass

        monkeypatch.setattr(fs.sim, "send_inventory_update", killed_before_its_echo)
        await fs.write_file("Box/Note", b"our save\n")
        assert await fs.read_file("Box/Note") == b"our save\n"
        restarted = fs.sim.item(NOTE)
        restarted.content = "what the restarted viewer holds\n"
        if viewer_version == 2:
            restarted.revision = fs.sim.world.next_revision()  # not the one our save was answered at
        await fs.sim.disconnect_all()
        with trio.fail_after(5):
            while fs.ws.connected:
                await trio.sleep(0.01)
        await fs.ws.session.wait_connected(5)
        assert await fs.read_file("Box/Note") == b"what the restarted viewer holds\n"


async def test_a_stop_during_a_reconnect_waits_to_save_what_is_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  viewer_version: int) -> None:
    """What the daemon does on its way out (Writer.keep_unsaved) for a file written and still open:
    while the session reconnects after a drop, it waits for it (reconnect_wait) and saves in-world,
    rather than going straight to the recovery folder."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              options=Options(delete_grace=0.2, reconnect_wait=5)) as fs:
        fs.ws.session.backoff_min = fs.ws.session.backoff_max = 0.3
        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"written, still open at the stop\n")
        await fs.sim.disconnect_all()
        with trio.fail_after(5):
            while fs.ws.connected:
                await trio.sleep(0.01)
        await fs.svc.writer.keep_unsaved(10)
        assert fs.sim.item(NOTE).content == "written, still open at the stop\n"
        assert recovery(tmp_path) == []
        await fs.ops.release(fh)


async def test_wait_saved_ends_with_the_save_in_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         viewer_version: int) -> None:
    """What `slfs diag --wait` waits for on a script saved through the mount: a save another
    program's close started, until the viewer answered it."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              method_latency_ms={"object.content.save": 300}) as fs:
        item = fs.ws.tree.by_uuid[MAIN]
        assert isinstance(item, Item)
        await fs.svc.writer.wait_saved(item)  # nothing in progress: at once
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fs.write_file, "Box/Main.lsl", b"default { state_entry() { } }\n")
            with trio.fail_after(5):
                while not any(m == "object.content.save" for m, _ in fs.sim.calls):
                    await trio.sleep(0.01)
            await fs.svc.writer.wait_saved(item)
            assert fs.sim.item(MAIN).content == "default { state_entry() { } }\n"
            assert not item.edit.dirty


async def test_an_edit_in_world_before_our_echo_is_not_taken_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     viewer_version: int) -> None:
    """Someone edits the script right after our save, and their update comes before our save's
    echo: the file shows their edit, and a buffer still holding ours is not saved over it
    (ESTALE). Newer viewers' revision moves the same way for both, so a fetch tells them apart."""
    theirs = MAIN_TEXT.replace('"one"', '"theirs"')
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              apply_delay=0.3) as fs:
        node = fs.ws.tree.by_uuid[MAIN]
        assert isinstance(node, Item)
        fh = await fs.open("Box/Main.lsl", os.O_RDWR)
        ours = MAIN_TEXT.replace('"one"', '"ours"').encode()
        await fs.ops.write(fh, 0, ours)
        await fs.ops.flush(fh)  # saved; its echo comes 0.3 s later
        seen = node.info
        await fs.sim.set_content(MAIN, theirs)
        assert await fs.ws.wait_for_world(lambda: node.info is not seen, 5)
        await fs.ops.write(fh, len(ours), b"// more of ours\n")
        assert await fails(fs.ops.flush(fh)) == errno.ESTALE
        await fs.ops.release(fh)
        assert fs.sim.item(MAIN).content == theirs
        await fs.sim.quiesce()  # our save's echo has come too
        assert await fs.read_file("Box/Main.lsl") == theirs.encode()
        assert recovery(tmp_path) == [ours + b"// more of ours\n"]
