"""local/live_files.py: a viewer temp file is read or written only when it is the viewer's
(issue 21 item 6): directly in a checked temp dir, regular, ours, one link, never through a symlink."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from slfs.local import live_files
from slfs.world.fs_errors import FsError

NAME = "sl_script_Pocket_" + "a" * 32 + ".lsl"
OTHER_UID = 65534


def require_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("files of another uid need root")
        pytest.skip("files of another uid need root")


@pytest.fixture
def temp_dir(tmp_path: Path) -> Path:
    d = tmp_path / "viewer-tmp"
    d.mkdir(mode=0o700)
    return d


def refused(call: object, *args: object) -> int:
    with pytest.raises(FsError) as info:
        call(*args)  # type: ignore[operator]
    return info.value.errno


def test_a_plain_temp_file_is_read_and_written_keeping_its_mode(temp_dir: Path) -> None:
    where = live_files.viewer_dirs(str(temp_dir))
    temp = temp_dir / NAME
    for mode in (0o600, 0o640):
        temp.write_text("old\n")
        temp.chmod(mode)
        assert live_files.read_file(str(temp), where)[1] == b"old\n"
        stamp = live_files.write_atomically(str(temp), where, b"new\n", 1_700_000_000)
        st = os.lstat(temp)
        assert temp.read_bytes() == b"new\n" and stat.S_IMODE(st.st_mode) == mode
        assert stamp == (1_700_000_000 * 1_000_000_000, 4) and st.st_nlink == 1
        assert sorted(p.name for p in temp_dir.iterdir()) == [NAME]  # no .slfs-* left behind


def test_a_symlink_is_never_read_or_written_through(temp_dir: Path, tmp_path: Path) -> None:
    secret = tmp_path / "id_secret"
    secret.write_text("SECRET\n")
    secret.chmod(0o644)
    where = live_files.viewer_dirs(str(temp_dir))
    temp = temp_dir / NAME
    temp.symlink_to(secret)
    assert refused(live_files.check_file, str(temp), where) == errno.ELOOP
    assert refused(live_files.read_file, str(temp), where) == errno.ELOOP
    assert refused(live_files.write_atomically, str(temp), where, b"x", 1_700_000_000) == errno.ELOOP
    assert temp.is_symlink() and secret.read_text() == "SECRET\n" and stat.S_IMODE(secret.stat().st_mode) == 0o644
    assert live_files.read_sidecar(str(temp), where) == b""


def test_a_swap_for_a_symlink_during_the_write_is_refused_before_the_rename(
        temp_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "mine"
    secret.write_text("mine\n")
    secret.chmod(0o644)
    where = live_files.viewer_dirs(str(temp_dir))
    temp = temp_dir / NAME
    temp.write_text("old\n")
    temp.chmod(0o600)
    real_fsync = os.fsync

    def swap_then_fsync(fd: int) -> None:
        temp.unlink()
        temp.symlink_to(secret)
        real_fsync(fd)

    monkeypatch.setattr(live_files.os, "fsync", swap_then_fsync)
    assert refused(live_files.write_atomically, str(temp), where, b"new\n", 1_700_000_000) == errno.ELOOP
    assert temp.is_symlink() and secret.read_text() == "mine\n" and stat.S_IMODE(secret.stat().st_mode) == 0o644
    assert sorted(p.name for p in temp_dir.iterdir()) == [NAME]


def test_hard_links_fifos_and_oversized_files_are_refused(temp_dir: Path) -> None:
    where = live_files.viewer_dirs(str(temp_dir))
    temp = temp_dir / NAME
    temp.write_text("x")
    os.link(temp, temp_dir / "elsewhere")
    assert refused(live_files.check_file, str(temp), where) == errno.EPERM
    assert refused(live_files.write_atomically, str(temp), where, b"y", 1_700_000_000) == errno.EPERM
    assert (temp_dir / "elsewhere").read_text() == "x"
    temp.unlink()
    os.mkfifo(temp)
    assert refused(live_files.check_file, str(temp), where) == errno.EPERM
    assert refused(live_files.read_file, str(temp), where) == errno.EPERM  # and no hang
    temp.unlink()
    temp.write_bytes(b"x" * (live_files.MAX_TEMP_BYTES + 1))
    assert refused(live_files.check_file, str(temp), where) == errno.EFBIG
    assert refused(live_files.read_file, str(temp), where) == errno.EFBIG


def test_another_uids_file_is_refused(temp_dir: Path) -> None:
    require_root()
    where = live_files.viewer_dirs(str(temp_dir))
    temp = temp_dir / NAME
    temp.write_text("theirs")
    os.chown(temp, OTHER_UID, OTHER_UID)
    assert refused(live_files.read_file, str(temp), where) == errno.EPERM
    assert refused(live_files.write_atomically, str(temp), where, b"y", 1_700_000_000) == errno.EPERM
    assert temp.read_text() == "theirs"


def test_only_files_directly_in_the_temp_dir(temp_dir: Path, tmp_path: Path) -> None:
    where = live_files.viewer_dirs(str(temp_dir))
    beside = tmp_path / "x"
    beside.mkdir()
    (beside / NAME).write_text("x")
    (temp_dir / "sub").mkdir()
    (temp_dir / "sub" / NAME).write_text("x")
    (temp_dir / "link").symlink_to(beside)
    for path in (f"{temp_dir}/../x/{NAME}", f"{temp_dir}/sub/{NAME}", f"{temp_dir}/link/{NAME}", "/etc/passwd"):
        assert refused(live_files.check_file, path, where) == errno.EPERM, path


def test_the_temp_dir_is_ours_or_a_sticky_system_one(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # world-writable, not sticky
    assert refused(live_files.viewer_dirs, str(open_dir)) == errno.EPERM
    (open_dir / "inner").mkdir(mode=0o700)  # ours, but under a dir anyone can rename it in
    assert refused(live_files.viewer_dirs, str(open_dir / "inner")) == errno.EPERM
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert live_files.viewer_dirs(str(sticky)).dirs == (str(sticky),)
    assert live_files.viewer_dirs("/tmp").dirs == (os.path.realpath("/tmp"),)


def test_another_uids_temp_dir_is_refused(tmp_path: Path) -> None:
    require_root()
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, OTHER_UID, OTHER_UID)
    assert refused(live_files.viewer_dirs, str(theirs)) == errno.EPERM


def test_with_no_temp_dir_from_the_viewer(tmp_path: Path) -> None:
    """A Linux viewer's temp files are in the system temp dir, never wherever the path points;
    a Windows viewer's in its own private directory."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    where = live_files.fallback_dirs(str(private / NAME), windows=False)
    assert os.path.realpath("/tmp") in where.dirs and str(private) not in where.dirs
    assert refused(live_files.check_file, str(private / NAME), where) == errno.EPERM
    assert live_files.fallback_dirs(str(private / NAME), windows=True).dirs == (str(private),)
    private.chmod(0o777)
    assert refused(lambda: live_files.fallback_dirs(str(private / NAME), windows=True)) == errno.EPERM


def test_on_wsl_drives_the_mode_bits_are_not_judged_but_the_files_are(tmp_path: Path) -> None:
    """WSL2's drvfs shows Windows files as ours with mode 0777: the temp dir there is taken, and
    its files still get every check (here: a hard link is refused)."""
    drives = tmp_path / "mnt"
    temp = drives / "c" / "Users" / "me" / "AppData" / "Local" / "Temp"
    temp.mkdir(parents=True)
    for d in (drives, drives / "c", temp):
        d.chmod(0o777)
    with pytest.raises(FsError):
        live_files.check_dir(str(temp))  # as a Linux dir: open to everyone, refused
    where = live_files.viewer_dirs(str(temp), str(drives))
    assert where.dirs == (os.path.realpath(temp),)
    f = temp / "sl_script_x.lsl"
    f.write_text("default {}\n")
    assert live_files.read_file(str(f), where)[1] == b"default {}\n"
    os.link(f, temp / "other")
    with pytest.raises(FsError) as info:
        live_files.read_file(str(f), where)
    assert info.value.errno == errno.EPERM
