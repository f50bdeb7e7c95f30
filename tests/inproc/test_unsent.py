"""The files whose text is not in-world (model/unsent.py), driven through the fs operations against
the simulator: unsaved while written, recovered when a save fails for the viewer's sake, refused
when the viewer refuses the text, each cleared by a later save that works; the conflict a resend
checks for, against the text the recovered one was based on."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
from support.inproc import Driver, fails, fs_against_sim
from support.writes import NOTE, NOTE_TEXT, write_world

from slfs.protocol.rpc_errors import INVALID_PARAMS, REQUEST_TIMEOUT, RpcError
from slfs.world.fs_errors import FsError
from slfs.world.tree import Item


def unsent(fs: Driver) -> list[dict[str, Any]]:
    return list(fs.ws.status()["unsent"])


def note(fs: Driver) -> Item:
    node = fs.ws.tree.by_uuid[NOTE]
    assert isinstance(node, Item)
    return node


def events(fs: Driver, kind: str) -> list[dict[str, Any]]:
    return [e for e in fs.svc.events.events if e["type"] == kind]


async def test_unsaved_then_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"mine\n")
        (entry,) = unsent(fs)
        assert entry["state"] == "unsaved" and entry["path"].endswith("/Box/Note") and entry["recovery"] is None
        await fs.close(fh)
        assert unsent(fs) == []


async def test_a_refused_save_is_listed_until_a_save_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.read_file("Box/Note")
        fs.sim.fail_next("object.content.save", RpcError(INVALID_PARAMS, "Invalid params: content rejected"))
        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"refused text\n")
        assert await fails(fs.ops.flush(fh)) == errno.EINVAL
        (entry,) = unsent(fs)
        assert entry["state"] == "refused" and entry["code"] == "EINVAL" and "content rejected" in entry["reason"]
        await fs.ops.flush(fh)  # the file is still dirty: sent again, and taken now
        await fs.ops.release(fh)
        assert unsent(fs) == []  # a save that works clears the entry
        assert fs.sim.item(NOTE).content == "refused text\n"
        (recovery,) = events(fs, "recovery")
        assert recovery["state"] == "refused" and recovery["code"] == "EINVAL" and recovery["made"]


async def test_one_entry_per_item_the_newest_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.read_file("Box/Note")
        writer = fs.svc.writer
        for text in (b"first\n", b"second\n", b"second\n"):
            fs.sim.fail_next("object.content.save", RpcError(REQUEST_TIMEOUT, "Request timed out"))
            fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
            await fs.ops.write(fh, 0, text)
            assert await fails(fs.ops.flush(fh)) == errno.ETIMEDOUT
            writer._set_buffer(note(fs), None)  # the program gives up on it
            note(fs).edit.dirty = False
            await fs.ops.release(fh)
        (entry,) = unsent(fs)
        assert entry["state"] == "recovered" and entry["code"] == "ETIMEDOUT"
        assert Path(entry["recovery"]).read_bytes() == b"second\n"
        assert [e["made"] for e in events(fs, "recovery")] == [True, True, False]
        assert fs.ws.status()["last_recovery"] == entry["recovery"]
        # The item is what the text was based on: the resend saves it.
        out = await writer.unsent.resend(note(fs))
        assert out["sent"] and fs.sim.item(NOTE).content == "second\n"
        assert unsent(fs) == [] and [e["outcome"] for e in events(fs, "resend")] == ["saved"]


async def test_resend_checks_against_the_text_it_was_based_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.read_file("Box/Note")
        fs.sim.fail_next("object.content.save", RpcError(REQUEST_TIMEOUT, "Request timed out"))
        fh = await fs.open("Box/Note", os.O_RDWR)
        await fs.ops.write(fh, 0, b"MINE")
        assert await fails(fs.ops.flush(fh)) == errno.ETIMEDOUT
        # The file still holds the text (dirty): listed once, as recovered.
        (entry,) = unsent(fs)
        assert entry["state"] == "recovered" and entry["file_holds_it"]
        await fs.sim.set_content(NOTE, "theirs\n")
        writer = fs.svc.writer
        with pytest.raises(FsError) as exc:
            await writer.unsent.resend(note(fs))
        assert exc.value.errno == errno.ESTALE and "--force" in exc.value.message
        assert fs.sim.item(NOTE).content == "theirs\n"
        (entry,) = unsent(fs)
        assert entry["inworld_changed"]
        out = await writer.unsent.resend(note(fs), force=True)
        assert out["sent"] and fs.sim.item(NOTE).content == "MINE" + NOTE_TEXT[4:]
        assert unsent(fs) == []
        await fs.ops.release(fh)  # nothing left to save
        assert [e["outcome"] for e in events(fs, "resend")] == ["failed", "saved"]


async def test_resend_sends_what_the_copy_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                viewer_version: int) -> None:
    """A copy fixed by hand is what goes; a copy removed leaves the text kept in memory; a text the
    item holds already is not sent again."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.read_file("Box/Note")
        writer = fs.svc.writer

        async def fail_a_save(text: bytes) -> Path:
            fs.sim.fail_next("object.content.save", RpcError(REQUEST_TIMEOUT, "Request timed out"))
            fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
            await fs.ops.write(fh, 0, text)
            assert await fails(fs.ops.flush(fh)) == errno.ETIMEDOUT
            writer._set_buffer(note(fs), None)
            note(fs).edit.dirty = False
            await fs.ops.release(fh)
            (entry,) = unsent(fs)
            return Path(entry["recovery"])

        copy = await fail_a_save(b"typo\n")
        copy.write_bytes(b"fixed by hand\n")
        await writer.unsent.resend(note(fs))
        assert fs.sim.item(NOTE).content == "fixed by hand\n"

        copy = await fail_a_save(b"kept in memory\n")
        copy.unlink()
        await writer.unsent.resend(note(fs))
        assert fs.sim.item(NOTE).content == "kept in memory\n"

        # The text the item holds in-world (vim's restore of the original): never sent again, so
        # it cannot fail; no entry, no copy.
        sent = len([m for m, _p in fs.sim.calls if m == "object.content.save"])
        fh = await fs.open("Box/Note", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"kept in memory\n")
        await fs.ops.flush(fh)
        await fs.ops.release(fh)
        assert len([m for m, _p in fs.sim.calls if m == "object.content.save"]) == sent
        assert unsent(fs) == [] and [e["made"] for e in events(fs, "recovery")] == [True, True]

        # Someone saved the very text in-world meanwhile: nothing is sent, the entry goes.
        await fail_a_save(b"third\n")
        await fs.sim.set_content(NOTE, "third\n")
        sent = len([m for m, _p in fs.sim.calls if m == "object.content.save"])
        out = await writer.unsent.resend(note(fs))
        assert out["sent"] is False and unsent(fs) == []
        assert len([m for m, _p in fs.sim.calls if m == "object.content.save"]) == sent
        assert [e["outcome"] for e in events(fs, "resend")] == ["saved", "saved", "in-world"]
