"""Attributes served from the fs layer's cache follow saves and the viewer's changes (no mount)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from support.inproc import fs_against_sim
from support.writes import NOTE, NOTE_TEXT, write_world

from slfs.world.tree import Item


async def test_size_after_a_save_and_during_an_edit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert await fs.read_file("Box/Note") == NOTE_TEXT.encode()
        first = await fs.stat("Box/Note")
        assert first.st_size == len(NOTE_TEXT)
        assert await fs.stat("Box/Note") is first  # served from the cache
        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"abc")
        assert (await fs.stat("Box/Note")).st_size == 3  # the local buffer, before any flush
        await fs.ops.write(fh, 3, b"defg\n")
        assert (await fs.stat("Box/Note")).st_size == 8
        await fs.close(fh)
        saved = await fs.stat("Box/Note")
        assert saved.st_size == 8 and saved.st_mtime_ns >= first.st_mtime_ns
        await fs.write_file("Box/Note", b"x\n")
        assert (await fs.stat("Box/Note")).st_size == 2


async def test_mode_after_the_viewer_changes_permissions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert stat.S_IMODE((await fs.stat("Box/Note")).st_mode) == 0o644
        node = fs.ws.tree.by_uuid[NOTE]
        assert isinstance(node, Item) and node.folder is not None
        fs.sim.item(NOTE).permissions.owner &= ~0x4000  # no modify
        await fs.sim.send_inventory_update(fs.sim.object_of(NOTE), fs.sim.prim_of(NOTE))
        assert await fs.ws.wait_for_world(lambda: not node.writable, 5)
        assert stat.S_IMODE((await fs.stat("Box/Note")).st_mode) == 0o444
