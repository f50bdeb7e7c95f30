"""`slfs mount` without -f waits for the daemon's answer at most its deadline."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from slfs import daemon


def _fake_python(tmp_path: Path, body: str) -> Path:
    """A stand-in for `python -m slfs mount -f ... --ready-fd N`: ignores its arguments."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_daemon_that_never_answers_times_out_and_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # It keeps the ready pipe open and never writes to it: the old blocking read waited forever.
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, "exec sleep 60")))
    start = time.monotonic()
    assert daemon.spawn_background(["mount", "-f", "/mnt/x"], "/mnt/x", timeout=1.0) == 1
    assert time.monotonic() - start < 20
    err = capsys.readouterr().err
    match = re.search(r"the daemon \(pid (\d+)\) did not report within 1 s; stopped it \(log: ", err)
    assert match, err
    assert not _alive(int(match.group(1)))


def test_a_daemon_that_exits_is_reported_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, "exit 3")))
    assert daemon.spawn_background(["mount", "-f", "/mnt/x"], "/mnt/x", timeout=60.0) == 1
    assert "daemon exited with status 3" in capsys.readouterr().err


def test_the_answer_is_read_from_the_pipe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The last argument is the ready fd: answer in two writes, then stay alive a moment.
    answer = "import os, sys, time; fd = int(sys.argv[-1]); os.write(fd, b'o'); time.sleep(0.1); {}"
    python = sys.executable
    body = answer.format("os.write(fd, b'k\\n'); time.sleep(1)")
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, f'exec {python} -c "{body}" "$@"')))
    assert daemon.spawn_background(["mount", "-f", "/mnt/x"], "/mnt/x", timeout=30.0) == 0
    assert "slfs: mounted /mnt/x" in capsys.readouterr().out
    body = "import os, sys; os.write(int(sys.argv[-1]), b'error: no such directory\\n')"
    monkeypatch.setattr(sys, "executable", str(_fake_python(tmp_path, f'exec {python} -c "{body}" "$@"')))
    assert daemon.spawn_background(["mount", "-f", "/mnt/x"], "/mnt/x", timeout=30.0) == 1
    assert "slfs: no such directory (log: " in capsys.readouterr().err
