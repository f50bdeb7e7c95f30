"""History in-process (model/history.py, fs/history_view.py): each origin makes a version, the same text
twice is one, the `.slfs/history/` view lists and reads them, an item renamed or deleted keeps its
history, and a restore is a normal save (ESTALE through a conflict)."""

from __future__ import annotations

import errno
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from support.inproc import Driver, fails, fs_against_sim
from support.writes import MAIN, MAIN_TEXT, NOTE, NOTE_TEXT, OBJ, write_world

from slfs.event_types import SlfsEvent
from slfs.local.history_store import digest_of
from slfs.world.fs_errors import FsError
from slfs.world.tree import Item

pytestmark = pytest.mark.generations()


@asynccontextmanager
async def history_fs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int,
                     viewer_generation: str | None, **kw: Any) -> AsyncIterator[Driver]:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              generation=viewer_generation, **kw) as fs:
        if viewer_generation == "G1":  # no object.list: explore again
            await fs.sim.publish(OBJ)
            assert await fs.ws.wait_for_world(lambda: OBJ in fs.ws.tree.objects, 10)
        assert await fs.ws.history.flush(10)
        yield fs


async def versions(fs: Driver, item_id: str) -> list[tuple[str, bytes]]:
    """(origin, text) of the item's versions, newest first, once everything seen is written."""
    history = fs.ws.history
    assert await history.flush(10)
    return [(v.origin, await history.blob(v.digest) or b"") for v in history.versions_of(item_id)]


def item(fs: Driver, item_id: str) -> Item:
    node = fs.ws.tree.by_uuid[item_id]
    assert isinstance(node, Item)
    return node


async def test_fetch_save_and_viewer_change_each_make_a_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                viewer_version: int,
                                                                viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        events: list[dict[str, Any]] = []
        services = fs.ws.fanout.services
        fs.ws.fanout.services = (*services, _Recorder(events))
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()
        assert await versions(fs, NOTE) == [("fetched", NOTE_TEXT.encode())]
        await fs.write_file("Box/Note", b"mine\n")
        assert await versions(fs, NOTE) == [("saved", b"mine\n"), ("fetched", NOTE_TEXT.encode())]
        await fs.write_file("Box/Note", b"mine\n")  # the same text again: no new version
        await fs.read_file("Box/Note")
        assert len(await versions(fs, NOTE)) == 2
        node = item(fs, NOTE)
        seen = node.cache.generation
        await fs.sim.set_content(NOTE, "a friend's edit\n")
        assert await fs.ws.wait_for_world(lambda: node.cache.generation != seen, 5)
        assert await fs.read_file("Box/Note") == b"a friend's edit\n"
        assert (await versions(fs, NOTE))[0] == ("viewer", b"a friend's edit\n")
        version_events = [e for e in events if e["type"] == "version"]
        assert [(e["path"], e["origin"], e["digest"]) for e in version_events] == [
            ("Box/Note", "fetched", digest_of(NOTE_TEXT.encode())), ("Box/Note", "saved", digest_of(b"mine\n")),
            ("Box/Note", "viewer", digest_of(b"a friend's edit\n"))]


class _Recorder:
    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    def on_event(self, event: SlfsEvent) -> None:
        self.events.append(event.to_json())

    def status(self) -> dict[str, Any]:
        return {}


async def test_the_mount_view_lists_and_reads_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       viewer_version: int, viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        await fs.read_file("Box/Main.lsl")
        await fs.write_file("Box/Main.lsl", MAIN_TEXT.replace("one", "two").encode())
        assert await fs.ws.history.flush(10)
        assert "Main.lsl" in await fs.entries("Box/.slfs/history")
        names = await fs.entries("Box/.slfs/history/Main.lsl")
        assert len(names) == 2
        fetched = next(n for n in names if n.endswith(".fetched.lsl"))
        saved = next(n for n in names if n.endswith(".saved.lsl"))
        assert await fs.read_file(f"Box/.slfs/history/Main.lsl/{fetched}") == MAIN_TEXT.encode()
        attr = await fs.stat(f"Box/.slfs/history/Main.lsl/{saved}")
        v = fs.ws.history.versions_of(MAIN)[0]
        assert attr.st_size == len(MAIN_TEXT) and attr.st_mtime_ns == int(v.at * 1e9)
        assert attr.st_mode & 0o777 == 0o444
        assert await fails(fs.open(f"Box/.slfs/history/Main.lsl/{saved}", os.O_WRONLY)) == errno.EACCES
        # The same through by-id, at the root.
        assert await fs.entries(f".slfs/history/by-id/{MAIN}") == names
        assert await fs.read_file(f".slfs/history/by-id/{MAIN}/{saved}") == MAIN_TEXT.replace("one", "two").encode()
        assert await fails(fs.lookup(".slfs/history/by-id/not-an-id")) == errno.ENOENT


async def test_renamed_item_keeps_its_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              viewer_version: int, viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        await fs.read_file("Box/Note")
        await fs.rename("Box/Note", "Box/Renamed")
        await fs.write_file("Box/Renamed", b"after the rename\n")
        # The viewer applies the rename a moment later (an update in between may name it Note).
        assert await fs.ws.wait_for_world(lambda: fs.sim.item(NOTE).name == "Renamed"
                                          and "Renamed" in fs.ws.tree.objects[OBJ].entries, 5)
        assert await versions(fs, NOTE) == [("saved", b"after the rename\n"), ("fetched", NOTE_TEXT.encode())]
        dirs = await fs.entries("Box/.slfs/history")
        assert "Renamed" in dirs and "Note" not in dirs
        assert len(await fs.entries("Box/.slfs/history/Renamed")) == 2


async def test_deleted_item_stays_in_the_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 viewer_version: int, viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        await fs.read_file("Box/Note")
        await fs.unlink("Box/Note")
        with trio.fail_after(5):
            while fs.sim.world.find_item(NOTE) is not None:
                await trio.sleep(0.02)
        assert (await versions(fs, NOTE))[0] == ("deleted", NOTE_TEXT.encode())
        assert "Note" in await fs.entries("Box/.slfs/history")
        (deleted,) = [n for n in await fs.entries("Box/.slfs/history/Note") if n.endswith(".deleted")]
        assert await fs.read_file(f"Box/.slfs/history/Note/{deleted}") == NOTE_TEXT.encode()
        # Unpublished, the object's history is still reachable by the item's id.
        await fs.sim.unpublish(OBJ)
        assert await fs.ws.wait_for_world(lambda: OBJ not in fs.ws.tree.objects, 5)
        assert deleted in await fs.entries(f".slfs/history/by-id/{NOTE}")


async def test_a_recovery_copy_is_a_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            viewer_version: int, viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        fh = await fs.open("Box/Note", os.O_RDWR)
        await fs.ops.write(fh, 0, b"MINE")
        node = item(fs, NOTE)
        seen = node.cache.generation
        await fs.sim.set_content(NOTE, "changed in-world\n")
        assert await fs.ws.wait_for_world(lambda: node.cache.generation != seen, 5)
        assert await fails(fs.ops.flush(fh)) == errno.ESTALE
        await fs.ops.release(fh)
        origins = [o for o, _t in await versions(fs, NOTE)]
        assert "recovered" in origins
        recovered = dict((o, t) for o, t in await versions(fs, NOTE))["recovered"]
        assert recovered == b"MINE" + NOTE_TEXT.encode()[4:]


async def test_restore_is_a_normal_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        viewer_version: int, viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        await fs.read_file("Box/Note")
        await fs.write_file("Box/Note", b"bad change\n")
        assert await fs.ws.history.flush(10)
        old = fs.ws.history.versions_of(NOTE)[-1]
        await fs.svc.writer.restore(item(fs, NOTE), await fs.ws.history.blob(old.digest) or b"")
        assert fs.sim.item(NOTE).content == NOTE_TEXT
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()
        # A restored text is the item's newest version again (a save like any other).
        assert (await versions(fs, NOTE))[0] == ("saved", NOTE_TEXT.encode())


async def test_restore_through_a_conflict_is_estale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    viewer_version: int, viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        await fs.read_file("Box/Note")
        node = item(fs, NOTE)
        seen = node.cache.generation
        fs.sim.method_latency_ms["object.content.get"] = 500  # the refetch of the change is slow
        await fs.sim.set_content(NOTE, "changed in-world\n")
        assert await fs.ws.wait_for_world(lambda: node.cache.generation != seen, 5)
        with pytest.raises(FsError) as caught:
            await fs.svc.writer.restore(node, b"the old version\n")
        assert caught.value.errno == errno.ESTALE
        assert fs.sim.item(NOTE).content == "changed in-world\n"  # nothing overwritten
        assert await fs.read_file("Box/Note") == b"changed in-world\n"
        assert ("recovered", b"the old version\n") in await versions(fs, NOTE)


async def test_a_preprocessed_script_keeps_source_and_inworld(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               viewer_version: int,
                                                               viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation) as fs:
        source = (b'#define GREETING "two"\n'
                  b"default\n{\n    state_entry()\n    {\n        llOwnerSay(GREETING);\n    }\n}\n")
        await fs.write_file("Box/Main.lsl", source)
        assert await fs.ws.history.flush(10)
        saved = fs.ws.history.versions_of(MAIN)[0]
        assert saved.origin == "saved" and saved.inworld is not None
        assert await fs.ws.history.blob(saved.digest) == source
        inworld = await fs.ws.history.blob(saved.inworld) or b""
        assert inworld.startswith(b"//start_unprocessed_text") and fs.sim.item(MAIN).content == inworld.decode()
        names = await fs.entries("Box/.slfs/history/Main.lsl")
        (shown,) = [n for n in names if n.endswith(".saved.lsl")]
        assert f"{shown}.inworld" in names
        assert await fs.read_file(f"Box/.slfs/history/Main.lsl/{shown}") == source
        assert await fs.read_file(f"Box/.slfs/history/Main.lsl/{shown}.inworld") == inworld
        assert (await fs.stat(f"Box/.slfs/history/Main.lsl/{shown}.inworld")).st_size == len(inworld)


@pytest.mark.viewer(2, reason="only newer viewers say which item a live-synced script is")
async def test_a_live_sync_save_of_a_published_script_is_a_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   viewer_version: int,
                                                                   viewer_generation: str | None) -> None:
    async with history_fs(tmp_path, monkeypatch, viewer_version, viewer_generation, live_poll_interval=0.2) as fs:
        sid, temp = await fs.sim.open_script_editor(MAIN)
        await fs.sim.live_seen(sid, 1)
        ls = await fs.ws.live.subscribe(temp)
        assert ls.item_id == MAIN
        text = MAIN_TEXT.replace("one", "live").encode()
        await fs.write_file(f".slfs/live/{ls.name}", text)
        assert ("saved", text) in await versions(fs, MAIN)
