"""The event log's file: written off the caller's thread, rotated as before, and a failing disk is
counted and reported, never raised."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slfs.local import events
from slfs.local.events import EventLog


def _event(i: int, **extra: object) -> dict[str, object]:
    return {"type": "runtime.debug", "time": time.time(), "item_id": "i", "message": f"line {i} 100%", **extra}


def test_file_holds_exactly_what_events_renders(tmp_path: Path) -> None:
    path = tmp_path / "state" / "events-k.jsonl"
    log = EventLog(path)
    try:
        for i in range(50):
            log.append(_event(i, data={"ü": "\u00e9"}))
        assert log.flush()
        assert path.read_bytes() == log.render()
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert [e["seq"] for e in lines] == list(range(1, 51))
        assert log.write_errors == 0 and log.last_write_error == ""
    finally:
        log.close()


def test_rotation_keeps_three_older_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "ROTATE_BYTES", 2000)
    path = tmp_path / "events-k.jsonl"
    log = EventLog(path)
    try:
        for i in range(200):
            log.append(_event(i))
        assert log.flush()
    finally:
        log.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["events-k.jsonl", "events-k.jsonl.1", "events-k.jsonl.2", "events-k.jsonl.3"]
    for p in tmp_path.iterdir():
        assert p.stat().st_size <= 2000
        assert all(json.loads(line)["type"] == "runtime.debug" for line in p.read_text().splitlines())
    last = [json.loads(line)["seq"] for line in path.read_text().splitlines()]
    assert last[-1] == 200


def test_a_line_cut_short_does_not_swallow_the_next(tmp_path: Path) -> None:
    path = tmp_path / "events-k.jsonl"
    path.write_bytes(b'{"seq": 1}\n{"seq": 2, "cut sh')
    log = EventLog(path)
    try:
        log.append(_event(1))
        assert log.flush()
    finally:
        log.close()
    lines = path.read_text().splitlines()
    assert lines[:2] == ['{"seq": 1}', '{"seq": 2, "cut sh']
    assert json.loads(lines[2])["message"] == "line 1 100%"


def test_append_never_writes_on_the_callers_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writers: set[int] = set()
    real_emit = events._EventFile.emit

    def spy(self: events._EventFile, record: logging.LogRecord) -> None:
        writers.add(threading.get_ident())
        real_emit(self, record)

    monkeypatch.setattr(events._EventFile, "emit", spy)
    log = EventLog(tmp_path / "events-k.jsonl")
    try:
        log.append(_event(1))
        assert log.flush()
    finally:
        log.close()
    assert writers and threading.get_ident() not in writers


def test_a_writer_that_falls_behind_drops_and_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(events, "MAX_PENDING", 5)
    stuck = threading.Event()
    real_emit = events._EventFile.emit

    def slow(self: events._EventFile, record: logging.LogRecord) -> None:
        stuck.wait(10)
        real_emit(self, record)

    monkeypatch.setattr(events._EventFile, "emit", slow)
    log = EventLog(tmp_path / "events-k.jsonl")
    try:
        for i in range(20):
            log.append(_event(i))  # never blocks, never raises
        assert len(log.events) == 20
        assert log.write_errors >= 10
        assert "behind" in log.last_write_error
    finally:
        stuck.set()
        log.close()


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only), always unmounted."""
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("mounting a tmpfs needs root")
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "tiny"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], check=True, timeout=30)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, timeout=30)


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_full_disk_is_counted_and_reported_then_recovers(
    tiny_tmpfs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="slfs.local.events")
    state = tiny_tmpfs / "slfs"
    state.mkdir()
    path = state / "events-k.jsonl"
    log = EventLog(path)
    try:
        received = log.subscribe()
        filler = _fill(tiny_tmpfs)
        for i in range(300):
            log.append(_event(i))  # nothing raises
        assert log.flush()
        assert len(log.events) == 300 and len(log.render().splitlines()) == 300
        assert received.receive_nowait()["seq"] == 1  # subscribers are served as before
        assert log.write_errors > 0
        assert "No space left on device" in log.last_write_error and str(path) in log.last_write_error
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1, "logged once, not once per line"
        # Space again: the next lines reach the file, each on a line of its own.
        filler.unlink()
        failed = log.write_errors
        log.append(_event(300))
        assert log.flush()
        assert log.write_errors == failed
        assert json.loads(path.read_text().splitlines()[-1])["seq"] == 301
        assert any("written again" in r.getMessage() for r in caplog.records)
    finally:
        log.close()


def test_read_only_state_dir_is_counted_not_raised(tiny_tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True, timeout=30)
    log = EventLog(tiny_tmpfs / "slfs" / "events-k.jsonl")
    try:
        for i in range(3):
            log.append(_event(i))
        assert log.flush()
        assert log.write_errors == 3
        assert "Read-only file system" in log.last_write_error
        assert len(log.events) == 3
    finally:
        log.close()
