"""A failed save keeps one recovery copy per distinct text of an item (issue 33, point 6): the same
text failing again (an editor's fsync, then its close) names the copy made before; a text equal to
the one in-world (vim restoring the original after its own write failed) gets none and never
becomes `last_recovery`."""

from __future__ import annotations

from pathlib import Path

import pytest

from slfs.local.keep import KeptCopies, TextCopy
from slfs.status_text import status_values

ORIGINAL = b"line one\n"
MINE = b"line ONE\n"
ITEM = "a0000001-0000-4000-8000-000000000001"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return tmp_path / "slfs" / "recovery"


def copies(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


async def test_the_same_text_failing_again_is_kept_once(folder: Path) -> None:
    k = KeptCopies()
    first = await k.keep_text(ITEM, "Box/Note", MINE, "fsync failed", inworld=(ORIGINAL,))
    again = await k.keep_text(ITEM, "Box/Note", MINE, "flush failed", inworld=(ORIGINAL,))
    assert first.made and first.path is not None and first.path.read_bytes() == MINE
    assert again == TextCopy(first.path, made=False)
    assert copies(folder) == [first.path]
    assert k.last_recovery == str(first.path)


async def test_the_in_world_text_gets_no_copy_and_is_never_last_recovery(folder: Path) -> None:
    k = KeptCopies()
    mine = await k.keep_text(ITEM, "Box/Note", MINE, "write failed", inworld=(ORIGINAL, ORIGINAL))
    # vim's restore of the original fails too: the original is what the item holds in-world.
    restored = await k.keep_text(ITEM, "Box/Note", ORIGINAL, "restore failed", inworld=(ORIGINAL, None))
    assert restored == TextCopy(None, made=False, inworld=True)
    assert copies(folder) == [mine.path]
    assert k.last_recovery == str(mine.path)
    # No base known (a new item): a text is compared with what is known only.
    nothing = await k.keep_text(ITEM, "Box/Note", ORIGINAL, "failed", inworld=(None, None))
    assert nothing.made and nothing.path != mine.path


async def test_each_distinct_text_gets_its_copy_and_the_newest_is_last(folder: Path) -> None:
    k = KeptCopies()
    a = await k.keep_text(ITEM, "Box/Note", b"A\n", "failed")
    b = await k.keep_text(ITEM, "Box/Note", b"B\n", "failed")
    assert a.made and b.made and a.path != b.path
    assert k.last_recovery == str(b.path)
    again = await k.keep_text(ITEM, "Box/Note", b"A\n", "failed")  # A again: its copy, and now the newest
    assert again == TextCopy(a.path) and k.last_recovery == str(a.path)
    assert len(copies(folder)) == 2


async def test_the_same_text_of_another_item_is_its_own_copy(folder: Path) -> None:
    k = KeptCopies()
    one = await k.keep_text(ITEM, "Box/Note", MINE, "failed")
    other = await k.keep_text("a0000002-0000-4000-8000-000000000002", "Box/Other", MINE, "failed")
    assert one.made and other.made and one.path != other.path


async def test_a_copy_removed_or_edited_since_is_made_again(folder: Path) -> None:
    k = KeptCopies()
    first = await k.keep_text(ITEM, "Box/Note", MINE, "failed")
    assert first.path is not None
    first.path.unlink()
    second = await k.keep_text(ITEM, "Box/Note", MINE, "failed")
    assert second.made and second.path is not None and second.path.read_bytes() == MINE
    second.path.write_bytes(b"fixed by hand\n")
    third = await k.keep_text(ITEM, "Box/Note", MINE, "failed")
    assert third.made and third.path not in (first.path, second.path)
    assert second.path.read_bytes() == b"fixed by hand\n"  # never written over


def test_unsent_files_are_one_status_line_each() -> None:
    entry = {"state": "recovered", "path": "/m/Box/Note", "code": "EIO", "recovery": "/r/20261204-185205-Box__Note",
             "reason": "saving Box/Note failed: not connected", "inworld_changed": False}
    line = "recovered /m/Box/Note (EIO), copy /r/20261204-185205-Box__Note: saving Box/Note failed: not connected"
    assert status_values("unsent", [entry]) == [line]
    assert status_values("unsent", [entry, {**entry, "state": "refused", "inworld_changed": True}])[1] == \
        line.replace("recovered", "refused", 1).replace(": saving", ", changed in-world since: saving")
    assert status_values("unsent", []) == ["none"]
    assert status_values("unsent", [{"state": "unsaved", "path": "/m/Box/New", "code": None, "recovery": None,
                                     "reason": "written through the mount and not saved yet"}]) == \
        ["unsaved /m/Box/New: written through the mount and not saved yet"]
    assert status_values("pending_saves", 0) == ["0"]
