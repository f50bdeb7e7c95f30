"""The history store (local/history_store.py) and its trio side (model/history.py): dedupe,
pruning by size and by age keeping the newest two, a store read back after a restart, and a
full disk that is a status line, never an exception."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from slfs.local.history_store import Place, Store, Version, digest_of
from slfs.model.history import History, agent_key, current_version_name, version_names
from slfs.model.options import Options, parse_options
from slfs.protocol.types import InventoryItem
from slfs.world.tree import Folder, Item

ITEM = "11111111-1111-4111-8111-111111111111"
OTHER = "22222222-2222-4222-8222-222222222222"
AGENT = "33333333-3333-4333-8333-333333333333"


def place(item_id: str = ITEM, name: str = "Main.lsl") -> Place:
    return Place(item_id=item_id, item_type="script", file_name=name, item_name=name.removesuffix(".lsl"),
                 object_id="o", object_name="Box", prim_id="p", prim_name="Box", path=f"Box/{name}")


def test_same_text_twice_is_one_version_and_one_blob(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    assert store.add(place(), "fetched", b"one", None, 1.0) is not None
    assert store.add(place(), "saved", b"one", None, 2.0) is None  # the same text: no new version
    assert store.add(place(), "saved", b"two", None, 3.0) is not None
    assert store.add(place(OTHER), "fetched", b"two", None, 4.0) is not None  # another item, same text
    assert [v.origin for v in store.versions(ITEM)] == ["saved", "fetched"]  # newest first
    assert store.counts() == (3, len(b"one") + len(b"two"))  # "two" stored once
    assert store.blob(digest_of(b"two")) == b"two"


def test_names_the_viewer_sent_with_lone_surrogates_are_kept_as_they_were(tmp_path: Path) -> None:
    # Found by tests/e2e/test_newer_viewers.py: an item named "\ud800" (valid JSON) made the
    # sqlite3 module raise UnicodeEncodeError in the worker, which took the daemon down.
    odd = "Box \ud800 x.lsl"
    store = Store(tmp_path / "s.sqlite3")
    assert store.add(place(name=odd), "fetched", b"one", None, 1.0) is not None
    store.close()
    again = Store(tmp_path / "s.sqlite3", readonly=True)
    [v] = again.versions(ITEM)
    assert (v.place.file_name, v.place.path, v.place.item_name) == (odd, f"Box/{odd}", odd.removesuffix(".lsl"))


def test_a_delete_is_always_a_version_and_the_text_after_it_too(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    store.add(place(), "fetched", b"x", None, 1.0)
    assert store.add(place(), "deleted", b"x", None, 2.0) is not None
    assert store.add(place(), "fetched", b"x", None, 3.0) is not None  # seen again after the delete
    assert [v.origin for v in store.versions(ITEM)] == ["fetched", "deleted", "fetched"]


def test_preprocessed_script_keeps_source_and_inworld(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    v = store.add(place(), "saved", b"#include \"x\"", b"//start_unprocessed_text\n...", 1.0)
    assert v is not None and v.inworld == digest_of(b"//start_unprocessed_text\n...")
    assert store.blob(v.inworld) == b"//start_unprocessed_text\n..."
    # The same source with another expansion (an include changed) is a new version.
    assert store.add(place(), "saved", b"#include \"x\"", b"other expansion", 2.0) is not None


def test_prune_by_size_oldest_first_keeps_newest_two(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    for i in range(10):
        store.add(place(), "saved", bytes([65 + i]) * 100, None, float(i))
    for i in range(3):
        store.add(place(OTHER), "saved", bytes([97 + i]) * 100, None, float(i))
    removed = store.prune(450, 0)
    assert removed == 9  # 13 versions of 100 bytes each down to 4
    left = [v.at for v in store.versions(ITEM)]
    assert left == [9.0, 8.0]  # the newest two of each item, whatever the bound
    assert [v.at for v in store.versions(OTHER)] == [2.0, 1.0]
    assert store.total_bytes() == 400
    assert store.blob(digest_of(b"A" * 100)) is None  # the blobs went with their versions


def test_prune_keeps_a_blob_another_version_still_uses(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    store.add(place(), "saved", b"shared", None, 1.0)
    store.add(place(), "saved", b"b", None, 2.0)
    store.add(place(), "saved", b"c", None, 3.0)
    store.add(place(OTHER), "fetched", b"shared", None, 4.0)
    store.prune(1, 0)
    assert store.blob(digest_of(b"shared")) == b"shared"
    assert len(store.versions(ITEM)) == 2


def test_prune_by_age_keeps_newest_two(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    now = time.time()
    for i in range(5):
        store.add(place(), "saved", str(i).encode(), None, now - (400 - i) * 86400)  # all older than a year
    store.add(place(OTHER), "saved", b"new", None, now)
    assert store.prune(0, 365, now) == 3
    assert [v.size for v in store.versions(ITEM)] == [1, 1]
    assert [store.blob(v.digest) for v in store.versions(ITEM)] == [b"4", b"3"]


def test_store_is_read_back_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    store.add(place(), "saved", b"kept", None, 1.0)
    store.close()
    again = Store(path)
    reader = Store(path, readonly=True)
    assert [again.blob(v.digest) for v in reader.versions(ITEM)] == [b"kept"]
    assert again.add(place(), "fetched", b"kept", None, 2.0) is None  # dedupe across the restart


def test_latest_in_prim_lists_every_item_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.sqlite3")
    store.add(place(), "fetched", b"1", None, 1.0)
    store.add(place(), "deleted", b"1", None, 2.0)
    store.add(place(OTHER, "Other.lsl"), "fetched", b"2", None, 3.0)
    latest = store.latest_in("prim_id", ["p"])
    assert [(v.place.item_id, v.origin) for v in latest] == [(OTHER, "fetched"), (ITEM, "deleted")]


def test_version_names_sort_by_time_and_keep_same_second_apart() -> None:
    versions = [Version(id=i, at=at, origin=o, digest="d", inworld=None, size=1, place=place())
                for i, (at, o) in enumerate(((1764684190.0, "viewer"), (1764684187.9, "saved"),
                                             (1764684187.2, "fetched")))]
    names = [n for n, _v in version_names(versions, ".lsl")]
    assert names == ["2025-12-02T14:03:10Z.viewer.lsl", "2025-12-02T14:03:07Z~002.saved.lsl",
                     "2025-12-02T14:03:07Z.fetched.lsl"]
    assert sorted(names) == names[::-1]  # ls order is time order


def test_many_versions_in_one_second_list_in_time_order() -> None:
    """25 saves within one second: `~10` once sorted before `~2`, so `ls | tail -2` took the
    wrong pair."""
    versions = [Version(id=i, at=1764684187.0 + i / 100, origin="saved", digest="d", inworld=None, size=1,
                        place=place()) for i in range(25)][::-1]
    names = [n for n, _v in version_names(versions, ".lsl")]
    assert sorted(names) == names[::-1]
    assert names[:2] == ["2025-12-02T14:03:07Z~025.saved.lsl", "2025-12-02T14:03:07Z~024.saved.lsl"]


def test_older_names_still_resolve() -> None:
    assert current_version_name("2025-12-02T14:03:07Z~2.saved.lsl") == "2025-12-02T14:03:07Z~002.saved.lsl"
    assert current_version_name("2025-12-02T14:03:07Z~12") == "2025-12-02T14:03:07Z~012"
    assert current_version_name("2025-12-02T14:03:07Z~002.saved") == "2025-12-02T14:03:07Z~002.saved"
    assert current_version_name("2025-12-02T14:03:07Z.saved.lsl") == "2025-12-02T14:03:07Z.saved.lsl"
    assert current_version_name("2025-12-02T14") == "2025-12-02T14"
    assert current_version_name("17") == "17"  # an id


def test_options() -> None:
    assert Options().history_max == 256 << 20 and Options().history_days == 365
    assert parse_options(["history_max=1G,history_days=30"]).history_max == 1 << 30
    assert parse_options(["history_max=512k"]).history_max == 512 << 10
    assert parse_options(["history_max=64MiB"]).history_max == 64 << 20
    assert parse_options(["history_max=0"]).history_max == 0
    assert parse_options(["history_max=1000"]).history_max == 1000
    for bad in ("history_max=lots", "history_max=-1", "history_max=2T", "history_days=-1"):
        with pytest.raises(ValueError):
            parse_options([bad])


def test_agent_key_never_holds_a_name() -> None:
    assert agent_key(AGENT.upper(), "Someone") == AGENT
    key = agent_key("", "../../etc/passwd")
    assert key.startswith("name-") and "/" not in key
    assert agent_key("", "") == "unknown-agent"


def _item(name: str = "Main") -> Item:
    folder = Folder(inode=2, uuid="p", name="Box", link_name="Box")
    record = InventoryItem(item_id=ITEM, name=name, type="script")
    return Item(inode=3, uuid=ITEM, name=f"{name}.lsl", record=record, folder=folder, parent=folder)


@asynccontextmanager
async def running(history: History, writes: list[bytes] = ()) -> AsyncIterator[list[dict[str, object]]]:
    """The history's worker running, its store open and `writes` recorded and written: the events."""
    events: list[dict[str, object]] = []
    history._emit = lambda event: events.append(event.to_json())
    async with trio.open_nursery() as nursery:
        nursery.start_soon(history.run)
        history.open_for(AGENT, "Agent")
        for data in writes:
            history.record(_item(), "saved", data)
        assert await history.flush(10)
        yield events
        nursery.cancel_scope.cancel()


async def _drive(history: History, writes: list[bytes]) -> list[dict[str, object]]:
    async with running(history, writes) as events:
        return events


async def test_history_writes_off_thread_and_emits_version_events(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    history = History(Options(), lambda node: f"Box/{node.name}")
    async with running(history, [b"a", b"a", b"b"]) as events:
        assert [(e["type"], e["origin"], e["digest"]) for e in events] == [
            ("version", "saved", digest_of(b"a")), ("version", "saved", digest_of(b"b"))]
        assert [v.size for v in history.versions_of(ITEM)] == [1, 1]
        assert await history.blob(digest_of(b"b")) == b"b"
        store = tmp_path / "slfs" / "history" / f"{AGENT}.sqlite3"
        assert store.exists() and (store.stat().st_mode & 0o777) == 0o600
        assert history.status()["history"].startswith("2 versions")
    assert history.reader is None  # closed with the mount
    # A new History on the same directory (a remount) reads the store back.
    again = History(Options(), lambda node: f"Box/{node.name}")
    async with running(again):
        assert [v.size for v in again.versions_of(ITEM)] == [1, 1]


async def test_a_running_store_stays_within_history_max(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    history = History(parse_options(["history_max=4k"]), lambda node: f"Box/{node.name}")
    texts = [bytes([65 + i]) * 1000 for i in range(10)]
    async with running(history, texts):
        sizes = [v.size for v in history.versions_of(ITEM)]
        assert 2 <= len(sizes) <= 4 and history.bytes <= 4096  # oldest first, within the bound
        kept = [await history.blob(v.digest) for v in history.versions_of(ITEM)]
        assert kept[:2] == [texts[-1], texts[-2]]  # the newest two, whatever the bound


async def test_history_max_zero_disables_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    history = History(parse_options(["history_max=0"]), lambda node: node.name)
    assert await _drive(history, [b"a"]) == []
    assert not (tmp_path / "slfs" / "history").exists()
    assert history.status() == {"history": "off (history_max=0)"}


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Path:
    """A 256 KiB tmpfs (root only): the disk a store fills."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "tiny"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(where)], check=True)
    yield where
    subprocess.run(["umount", "-l", str(where)], check=False)


async def test_full_disk_is_a_status_line_never_an_exception(tiny_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tiny_disk))
    history = History(Options(), lambda node: f"Box/{node.name}")
    big = [bytes([i]) * 60_000 for i in range(1, 8)]  # far more than the disk holds
    async with running(history, big) as events:
        assert 0 < len(events) < len(big)  # some were written, the rest failed
        status = history.status()
        assert status["history"].startswith("failing:") and "full" in status["history"]
        assert status["history_errors"] >= 1
        # What was written is intact and readable.
        for v in history.versions_of(ITEM):
            assert await history.blob(v.digest) is not None


async def test_read_only_disk_is_a_status_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to mount")
    where = tmp_path / "ro"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(where)], check=True)
    try:
        monkeypatch.setenv("XDG_DATA_HOME", str(where))
        history = History(Options(), lambda node: f"Box/{node.name}")
        async with running(history, [b"a"]) as events:
            assert events == []
            assert history.status()["history"].startswith("failing:")
            assert history.versions_of(ITEM) == []
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


async def test_a_store_on_a_disk_gone_read_only_is_still_shown(tiny_disk: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tiny_disk))
    await _drive(History(Options(), lambda node: f"Box/{node.name}"), [b"kept"])
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_disk)], check=True)
    again = History(Options(), lambda node: f"Box/{node.name}")
    async with running(again, [b"not kept"]) as events:
        assert events == []
        assert [await again.blob(v.digest) for v in again.versions_of(ITEM)] == [b"kept"]
        assert again.status()["history"].startswith("failing:")


def test_since_is_when_the_newest_version_of_the_text_was_seen(tmp_path: Path) -> None:
    """A remount's first fetch shows this as the file's mtime: the same text seen again keeps the
    time it was first seen; another text, or a delete, answers nothing."""
    store = Store(tmp_path / "h.sqlite3")
    store.add(place(), "fetched", b"one", None, 1.0)
    store.add(place(), "fetched", b"one", None, 5.0)
    assert store.since(place().item_id, digest_of(b"one")) == 1.0
    store.add(place(), "saved", b"two", None, 7.0)
    assert store.since(place().item_id, digest_of(b"one")) is None
    assert store.since(place().item_id, digest_of(b"two")) == 7.0
    store.add(place(), "deleted", b"two", None, 8.0)
    assert store.since(place().item_id, digest_of(b"two")) is None
    assert store.since("no such item", digest_of(b"two")) is None
