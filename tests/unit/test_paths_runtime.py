"""Without $XDG_RUNTIME_DIR the runtime dir is under the user's state dir, where no other user can
make it first; a predictable /tmp/slfs-UID another user made changes nothing (issue 21 item 10);
logs and event logs are 0600 (item 11)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from slfs import cli, paths, registry
from slfs.local.events import EventLog

NOBODY = 65534


@pytest.fixture
def tmp_path(short_tmp_path: Path) -> Path:
    """Short: these tests build socket paths near the 108-byte limit (tests/conftest.py)."""
    return short_tmp_path


def need_root() -> None:
    if os.geteuid() != 0 and not os.environ.get("CI"):
        pytest.skip("chown to another uid needs root")


def test_a_tmp_dir_another_user_made_first_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    need_root()
    base = tmp_path / "tmp"
    base.mkdir(mode=0o1777)
    monkeypatch.setattr(paths, "FALLBACK_RUNTIME_BASE", str(base))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    squatted = base / f"slfs-{os.getuid()}"  # the name the runtime dir had in /tmp
    squatted.mkdir(mode=0o700)
    os.chown(squatted, NOBODY, NOBODY)

    run = paths.runtime_dir(create=True)
    assert run == tmp_path / "state" / "slfs" / "run"
    st = run.lstat()
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    sock = paths.control_socket_path("/mnt/sl")
    assert Path(sock).parent == run
    assert registry.read_registry() == []
    assert cli.main(["status"]) != 0  # no mount, but not refused
    assert "refusing" not in capsys.readouterr().err


def test_a_long_state_dir_puts_the_socket_in_a_random_dir_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(paths, "FALLBACK_RUNTIME_BASE", str(base))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ("s" * 120)))
    first, second = paths.control_socket_path("/mnt/a"), paths.control_socket_path("/mnt/b")
    for sock in (first, second):
        assert len(os.fsencode(sock)) <= paths.SOCKET_PATH_MAX
        d = Path(sock).parent
        assert d.parent == base and stat.S_IMODE(d.lstat().st_mode) == 0o700 and d.lstat().st_uid == os.geteuid()
    assert Path(first).parent != Path(second).parent  # not a name anyone could guess and make first
    for sock in (first, second):
        paths.release_socket_path(sock)
    assert list(base.iterdir()) == []


def test_log_files_are_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        log = tmp_path / "x.log"
        with open(log, "a", opener=paths.private_opener) as f:
            f.write("x")
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        os.chmod(log, 0o644)  # one an older slfs made
        with open(log, "a", opener=paths.private_opener):
            pass
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        events = EventLog(tmp_path / "state" / "events.jsonl")
        try:
            events.append({"type": "test", "path": "Box/Note"})
            events.flush(5)
        finally:
            events.close()
        assert stat.S_IMODE((tmp_path / "state" / "events.jsonl").stat().st_mode) == 0o600
        assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    finally:
        os.umask(old)
