"""Recovery and trash copies are named after in-world names: every name fits NAME_MAX and
PATH_MAX, for any length and any Unicode, and a shortened name keeps the full path in its sidecar
(issue 21 item 7)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
import trio

from slfs.local import keep
from slfs.local.keep import META_SUFFIX, NAME_MAX, TRASH, KeptCopies, copy_name

STAMP = "20240101-120000"
PATH_MAX = os.pathconf("/", "PC_PATH_MAX")

NAMES = [
    "a" * 63,
    "b" * 255,
    "c" * 1000,
    "é" * 200,  # 2 bytes each
    "日本語" * 100,  # 3 bytes each
    "🙂" * 100,  # 4 bytes each
    "x/y/z" * 100,
    "bell\x07esc\x1b[2Jnul\x00del\x7fc1\x9b",
    "lone \ud800 surrogate",
    "",
]


@pytest.mark.parametrize("name", NAMES, ids=lambda n: f"{len(n)}-{n[:6].encode('unicode_escape').decode()}")
def test_every_copy_name_fits_name_max(name: str) -> None:
    item_path = f"{name}/{name}@1a2b3c4d/{name}.lsl"
    file_name, plain = copy_name(STAMP, item_path)
    raw = file_name.encode("utf-8")  # encodable: no lone surrogate is left
    # With a second copy's `.N` and the sidecar's suffix, still one legal file name.
    assert len(raw) + len(".99999") + len(META_SUFFIX) <= NAME_MAX
    assert "/" not in file_name and "\0" not in file_name
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in file_name)
    assert file_name.startswith(f"{STAMP}-")
    if plain:
        assert file_name == f"{STAMP}-{item_path.replace('/', '__') or 'unnamed'}"


def test_short_names_stay_plain_and_long_ones_differ_by_digest() -> None:
    assert copy_name(STAMP, "Box/Note") == (f"{STAMP}-Box__Note", True)
    a, plain_a = copy_name(STAMP, "o" * 255 + "/" + "i" * 255 + "a")
    b, plain_b = copy_name(STAMP, "o" * 255 + "/" + "i" * 255 + "b")
    assert not plain_a and not plain_b and a != b  # the readable prefixes are the same
    assert a.startswith(f"{STAMP}-{'o' * 100}") and "~" in a


def test_a_cut_never_splits_a_character() -> None:
    for ch in ("é", "日", "🙂"):
        name, _plain = copy_name(STAMP, ch * 300)
        name.encode("utf-8").decode("utf-8")  # whole characters only
        head = name.rsplit("~", 1)[0]
        assert set(head[len(STAMP) + 1:]) == {ch}


async def test_long_copy_is_written_with_its_full_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    item_path = "O" * 255 + "/" + "P" * 246 + "@1a2b3c4d/" + "日" * 85
    keeper = KeptCopies()
    with trio.fail_after(10):
        target = await keeper.keep(TRASH, item_path, b"content\n", "deleted")
        again = await keeper.keep(TRASH, item_path, b"second\n", "deleted")
    assert target is not None and again is not None and target != again
    for copy, data in ((target, b"content\n"), (again, b"second\n")):
        assert copy.read_bytes() == data
        assert len(os.fsencode(copy.name)) <= NAME_MAX and len(os.fsencode(copy)) < PATH_MAX
        meta = json.loads(copy.with_name(copy.name + META_SUFFIX).read_text())
        assert meta["path"] == item_path and meta["file"] == copy.name and meta["bytes"] == len(data)
        assert meta["kind"] == "trash" and meta["reason"] == "deleted"
        assert (copy.stat().st_mode & 0o777) == 0o600
    assert keeper.failures == 0


async def test_a_sidecar_name_taken_moves_the_copy_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another copy's name may look like this one's sidecar (names are data): neither is overwritten."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setattr(keep.time, "strftime", lambda fmt, *a: STAMP if "%Y%m%d" in fmt else "t")
    item_path = "x" * 300
    name, _plain = copy_name(STAMP, item_path)
    folder = tmp_path / "slfs" / "trash"
    folder.mkdir(parents=True)
    (folder / (name + META_SUFFIX)).write_text("someone else's\n")
    target = await KeptCopies().keep(TRASH, item_path, b"data", "deleted")
    assert target == folder / f"{name}.2"
    assert (folder / (name + META_SUFFIX)).read_text() == "someone else's\n"
    assert not (folder / name).exists()
    assert json.loads((folder / f"{name}.2{META_SUFFIX}").read_text())["path"] == item_path


async def test_a_failed_copy_leaves_nothing_and_says_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    (tmp_path / "slfs").mkdir()
    (tmp_path / "slfs" / "trash").write_text("a file where the folder should be")
    keeper = KeptCopies()
    assert await keeper.keep(TRASH, "Box/" + "n" * 600, b"data", "deleted") is None
    assert keeper.failures == 1 and "trash copy of Box/" in keeper.last_failure
    problem = await keeper.check(TRASH, "Box/Note", 4, "deleted")
    assert problem is not None and problem.errno in (errno.EEXIST, errno.ENOTDIR)
    assert keeper.failures == 2


async def test_check_passes_on_a_writable_folder_and_writes_nothing(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    keeper = KeptCopies()
    assert await keeper.check(TRASH, "Box/Note", 1000, "deleted") is None
    assert list((tmp_path / "slfs" / "trash").iterdir()) == [] and keeper.failures == 0
