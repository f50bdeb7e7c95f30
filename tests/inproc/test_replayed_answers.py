"""Answers the fs layer replays while nothing changes, and works out again after every change (no
mount): a folder's listing and its attributes (a warm `find`), a read-only open of fetched content
(a warm `grep -r`). Changes: a first fetch, a local edit and its save, a change in-world; an
unreported change fails the suite's check."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pyfuse3
import pytest
from support.inproc import CTX, Driver, fails, fs_against_sim
from support.writes import NOTE, NOTE_TEXT, write_world

from slfs.model.options import Options
from slfs.world.tree import Item


@pytest.fixture(autouse=True)
def _replies(monkeypatch: pytest.MonkeyPatch) -> None:
    """readdir's replies go to the list being read, attributes and all, as the kernel's buffer would."""

    def reply(token: list[tuple[str, pyfuse3.EntryAttributes]], name: bytes, attr: pyfuse3.EntryAttributes,
              _off: int) -> bool:
        token.append((os.fsdecode(name), attr))
        return True

    monkeypatch.setattr(pyfuse3, "readdir_reply", reply)


async def listed(fs: Driver, path: str) -> dict[str, pyfuse3.EntryAttributes]:
    fh = await fs.ops.opendir(await fs.lookup(path), CTX)
    try:
        got: list[tuple[str, pyfuse3.EntryAttributes]] = []
        await fs.ops.readdir(fh, 0, got)  # type: ignore[arg-type]
        return dict(got)
    finally:
        await fs.ops.releasedir(fh)


async def test_replayed_until_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    options = Options(delete_grace=0.2, prefetch=0)  # the first fetch is the read below
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version,
                              options=options) as fs:
        before = await listed(fs, "Box")
        assert before["Note"].st_size == 0 and before["Note"].attr_timeout == 0  # not fetched yet
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()
        fetched = await listed(fs, "Box")
        assert fetched["Note"].st_size == len(NOTE_TEXT)  # a first fetch: told to the listing only
        again = await listed(fs, "Box")
        known = {name for name, attr in fetched.items() if attr.attr_timeout > 0}
        assert "Note" in known and all(again[name] is fetched[name] for name in known)  # replayed
        assert all(again[name] is not fetched[name] for name in fetched.keys() - known)  # sizes unknown

        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"abc")
        assert (await listed(fs, "Box"))["Note"].st_size == 3  # the local buffer
        await fs.ops.write(fh, 3, b"defg\n")
        assert (await listed(fs, "Box"))["Note"].st_size == 8
        await fs.close(fh)
        saved = (await listed(fs, "Box"))["Note"]
        assert saved.st_size == 8 and saved.st_mtime_ns >= fetched["Note"].st_mtime_ns
        assert (await listed(fs, "Box"))["Note"] is saved

        node = fs.ws.tree.by_uuid[NOTE]
        assert isinstance(node, Item)
        fs.sim.item(NOTE).permissions.owner &= ~0x4000  # no modify, in-world
        await fs.sim.send_inventory_update(fs.sim.object_of(NOTE), fs.sim.prim_of(NOTE))
        assert await fs.ws.wait_for_world(lambda: not node.writable, 5)
        assert stat.S_IMODE((await listed(fs, "Box"))["Note"].st_mode) == 0o444


async def test_an_unreported_change_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert fs.ops._check_listings  # tests/conftest.py turns the check on for the whole suite
        await fs.read_file("Box/Note")
        first = await listed(fs, "Box")
        node = fs.ws.tree.by_uuid[NOTE]
        assert isinstance(node, Item)
        node.mtime_ns += 1_000_000_000  # behind the model's back: nothing reported
        fs.ops.attributes._cache.clear()  # (so only the listing holds the old answer)
        assert await fails(listed(fs, "Box")) == errno.EIO
        fs.ops.ws.tree.stat_changed(node)  # reported: the next listing answers with what it shows now
        assert (await listed(fs, "Box"))["Note"].st_mtime_ns == first["Note"].st_mtime_ns + 1_000_000_000


async def test_warm_opens_replayed_until_a_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        inode = await fs.lookup("Box/Note")
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()
        first = await fs.ops.open(inode, os.O_RDONLY, CTX)
        assert first.keep_cache and fs.ops.warm.marks[inode]  # the next one is answered at a glance
        assert (await fs.ops.open(inode, os.O_RDONLY, CTX)).fh == first.fh

        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"abc\n")
        editing = await fs.ops.open(inode, os.O_RDONLY, CTX)
        assert not editing.keep_cache  # another handle's unsaved buffer
        assert await fs.ops.read(editing.fh, 0, 100) == b"abc\n"
        await fs.close(fh)
        saved = await fs.ops.open(inode, os.O_RDONLY, CTX)
        assert saved.keep_cache
        assert await fs.ops.read(saved.fh, 0, 100) == b"abc\n"

        node = fs.ws.tree.by_uuid[NOTE]
        assert isinstance(node, Item)
        await fs.sim.set_content(NOTE, "changed in-world\n")
        assert await fs.ws.wait_for_world(lambda: not node.cache.content_valid, 5)
        fresh = await fs.ops.open(inode, os.O_RDONLY, CTX)  # fetches before it answers
        assert await fs.ops.read(fresh.fh, 0, 100) == b"changed in-world\n"


async def test_an_unreported_change_fails_the_warm_open_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        inode = await fs.lookup("Box/Note")
        await fs.read_file("Box/Note")
        await fs.ops.open(inode, os.O_RDONLY, CTX)
        node = fs.ws.tree.by_uuid[NOTE]
        assert isinstance(node, Item)
        node.edit.buffer = bytearray(b"edited behind the model's back")  # nothing reported
        assert await fails(fs.ops.open(inode, os.O_RDONLY, CTX)) == errno.EIO
        fs.ws.tree.stat_changed(node)  # reported: the open is worked out again
        assert not (await fs.ops.open(inode, os.O_RDONLY, CTX)).keep_cache
