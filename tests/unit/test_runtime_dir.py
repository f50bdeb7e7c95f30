"""The runtime dir (registry, control sockets) is ours alone, and a control socket path always fits."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from slfs import cli, paths, registry

NOBODY = 65534


@pytest.fixture
def fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No $XDG_RUNTIME_DIR: the runtime dir is $XDG_STATE_HOME/slfs/run; short socket dirs go
    under BASE (a test directory standing for /tmp)."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(paths, "FALLBACK_RUNTIME_BASE", str(base))
    (tmp_path / "state" / "slfs").mkdir(parents=True, mode=0o700)
    return tmp_path / "state" / "slfs" / "run"


@pytest.fixture
def tmp_path(short_tmp_path: Path) -> Path:
    """Short: these tests build socket paths near the 108-byte limit (tests/conftest.py)."""
    return short_tmp_path


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("chown to another uid needs root")


def test_fallback_is_created_0700_and_used(fallback: Path) -> None:
    assert paths.runtime_dir() == fallback and not fallback.exists()  # readers do not create it
    assert paths.runtime_dir(create=True) == fallback
    st = fallback.lstat()
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    assert registry.read_registry() == []


def test_fallback_made_by_another_user_is_refused(fallback: Path) -> None:
    need_root()
    fallback.mkdir(mode=0o700)
    os.chown(fallback, NOBODY, NOBODY)
    for create in (False, True):
        with pytest.raises(paths.RuntimeDirError, match=f"owned by uid {NOBODY}, not by us"):
            paths.runtime_dir(create=create)
    with pytest.raises(paths.RuntimeDirError):
        registry.read_registry()


def test_fallback_symlink_is_refused_even_to_our_own_dir(fallback: Path, tmp_path: Path) -> None:
    target = tmp_path / "ours"
    target.mkdir(mode=0o700)
    fallback.symlink_to(target)
    for create in (False, True):
        with pytest.raises(paths.RuntimeDirError, match="symbolic link"):
            paths.runtime_dir(create=create)
    with pytest.raises(paths.RuntimeDirError, match="symbolic link"):
        paths.control_socket_path("/mnt/x")


def test_open_modes_are_refused(fallback: Path) -> None:
    fallback.mkdir()
    for mode in (0o777, 0o750, 0o701):
        os.chmod(fallback, mode)
        with pytest.raises(paths.RuntimeDirError, match=f"mode {mode:04o}.*chmod 700"):
            paths.runtime_dir(create=True)
    os.chmod(fallback, 0o700)
    assert paths.runtime_dir(create=True) == fallback


def test_a_file_in_the_way_is_refused(fallback: Path) -> None:
    fallback.write_text("")
    with pytest.raises(paths.RuntimeDirError, match="not a directory"):
        paths.runtime_dir(create=True)


def test_xdg_runtime_dir_slfs_is_checked_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert paths.runtime_dir(create=True) == tmp_path / "slfs"
    assert stat.S_IMODE((tmp_path / "slfs").stat().st_mode) == 0o700
    os.chmod(tmp_path / "slfs", 0o777)
    with pytest.raises(paths.RuntimeDirError, match="0777"):
        paths.runtime_dir()
    if os.geteuid() == 0:
        os.chmod(tmp_path / "slfs", 0o700)
        os.chown(tmp_path / "slfs", NOBODY, NOBODY)
        with pytest.raises(paths.RuntimeDirError, match=f"uid {NOBODY}"):
            paths.runtime_dir()


def test_cli_verbs_and_mount_refuse_an_unsafe_runtime_dir(
    fallback: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fallback.mkdir()
    os.chmod(fallback, 0o777)
    assert cli.main(["status"]) == 1
    assert cli.main(["umount", str(tmp_path)]) != 0
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    assert cli.main(["mount", "-f", str(mnt)]) == 1
    err = capsys.readouterr().err
    assert err.count(f"slfs: {fallback} has mode 0777, open to other users; refusing it") >= 2
    assert "Traceback" not in err


def test_long_xdg_runtime_dir_gets_a_short_socket_path(
    fallback: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_dir = tmp_path / ("r" * (150 - len(str(tmp_path)) - 1))
    assert len(str(long_dir)) == 150
    long_dir.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long_dir))
    sock_path = paths.control_socket_path("/mnt/sl")
    assert len(os.fsencode(sock_path)) <= paths.SOCKET_PATH_MAX
    short = Path(sock_path).parent
    assert short.parent == tmp_path / "tmp" and short.name.startswith(f"slfs-{os.getuid()}-")
    assert stat.S_IMODE(short.stat().st_mode) == 0o700
    # The registry stays in the real runtime dir (the CLI finds the socket through it) ...
    assert registry.registry_path("/mnt/sl").parent == long_dir / "slfs" / "mounts"
    # ... and the socket can be bound there.
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(sock_path)
    # The daemon removes its short dir when it ends.
    os.unlink(sock_path)
    paths.release_socket_path(sock_path)
    assert not short.exists()
    # A short runtime dir keeps the socket in it.
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert paths.control_socket_path("/mnt/sl") == str(tmp_path / "slfs" / f"{paths.mount_key('/mnt/sl')}.sock")


def test_mount_refuses_a_remote_host_without_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    for host in ("192.0.2.1", "2001:db8::1"):
        assert cli.main(["mount", "-f", "--host", host, str(mnt)]) == 2
        err = capsys.readouterr().err
        assert f"--host {host}: not a loopback address" in err and "-o allow_remote_viewer" in err
    assert not (tmp_path / "slfs").exists()  # nothing was started
    assert cli.main(["mount", "-f", "-o", "allow_remote_viewer=1", "--host", "192.0.2.1", str(mnt)]) == 2
    assert "takes no value" in capsys.readouterr().err


def test_mount_check_makes_no_short_socket_dir(
    fallback: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`slfs mount` checks the runtime dir before the daemon starts; the short socket dir, when
    one is needed, is the daemon's own: the check makes none (it would be left behind)."""
    long_dir = tmp_path / ("r" * (150 - len(str(tmp_path)) - 1))
    long_dir.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(long_dir))
    assert paths.control_socket_path("/mnt/sl", make_short=False) == ""
    assert list((tmp_path / "tmp").iterdir()) == []


def test_remove_dead_entry_keeps_a_live_daemons_file(fallback: Path) -> None:
    """What `slfs umount` clears after unmounting: only the entry of a daemon that is gone."""
    folder = paths.runtime_dir(create=True) / "mounts"
    folder.mkdir()
    live, dead = registry.registry_path("/mnt/live"), registry.registry_path("/mnt/dead")
    live.write_text(f'{{"pid": {os.getpid()}, "mountpoint": "/mnt/live"}}')
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.waitpid(child, 0)  # a pid that is certainly gone
    dead.write_text(f'{{"pid": {child}, "mountpoint": "/mnt/dead"}}')
    assert not registry.remove_dead_entry("/mnt/live") and live.exists()
    assert registry.remove_dead_entry("/mnt/dead") and not dead.exists()
    assert not registry.remove_dead_entry("/mnt/nothing")
