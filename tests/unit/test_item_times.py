"""ItemTimes: times set on items are shown while the item holds the text they were set on, kept
across remounts (the state dir), and a damaged file costs the times, never the mount."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from slfs.local.item_times import ItemTimes, times_dir


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    return tmp_path


def test_a_time_is_shown_while_the_text_is_the_same() -> None:
    t = ItemTimes()
    t.open_for("agent")
    t.set("item", 1_000, b"text")
    assert t.shown("item", b"text") == 1_000
    assert t.shown("item", b"other text") is None
    assert t.shown("another item", b"text") is None
    t.forget("item")
    assert t.shown("item", b"text") is None


async def test_times_outlive_the_mount_and_stay_per_agent() -> None:
    t = ItemTimes()
    t.open_for("agent")
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(t.run)
            t.set("item", 1_000, b"text")
            await trio.sleep(0)
            scope.cancel()  # the mount ends before the write delay: the end writes it
    path = times_dir() / "agent.json"
    assert (path.stat().st_mode & 0o777) == 0o600
    again = ItemTimes()
    again.open_for("agent")
    assert again.shown("item", b"text") == 1_000
    other = ItemTimes()
    other.open_for("another agent")
    assert other.shown("item", b"text") is None


@pytest.mark.parametrize("body", [b"{not json", b"[1, 2]", b"[" * 100_000, json.dumps({"item": "x"}).encode(),
                                  json.dumps({"item": [1.5, "d"]}).encode()])
def test_a_damaged_file_costs_its_times_only(body: bytes) -> None:
    times_dir().mkdir(parents=True)
    (times_dir() / "agent.json").write_bytes(body)
    t = ItemTimes()
    t.open_for("agent")
    assert t.shown("item", b"text") is None
    t.set("item", 5, b"text")
    assert t.shown("item", b"text") == 5
