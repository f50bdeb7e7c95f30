"""Live sync against temp files that are not the viewer's (issue 21 item 6), through the fs
operations object: a symlink, a hard link, another uid's file, a FIFO, a file outside the temp
dir script.list names, a temp dir another user can change, a viewer naming no temp dir. Refused
before subscribing, or, swapped after it, never read or written through; the errno, a log line
and `.slfs/status`'s last_error say why."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from support.inproc import Driver, fails, fs_against_sim
from support.live_world import BAD, GOOD, INV, world

from slfs.world.fs_errors import FsError

OTHER_UID = 65534
SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot yours\n"


def require_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("files of another uid need root")
        pytest.skip("files of another uid need root")


def secret_file(tmp_path: Path, mode: int = 0o600) -> Path:
    d = tmp_path / "home" / ".ssh"
    d.mkdir(parents=True, exist_ok=True)
    secret = d / "id_ed25519"
    secret.write_text(SECRET)
    secret.chmod(mode)
    return secret


async def refused(fs: Driver, temp: str) -> FsError:
    with pytest.raises(FsError) as info:
        await fs.ws.live.subscribe(temp)
    assert fs.ws.live.by_id == {} and await fs.entries(".slfs/live") == []
    assert not any(m == "script.subscribe" for m, _p in fs.sim.calls)  # refused before subscribing
    assert info.value.message in fs.ws.last_error
    return info.value


async def opened(fs: Driver) -> tuple[str, str]:
    sid, temp = await fs.sim.open_script_editor(INV)
    await fs.sim.live_seen(sid, 1)
    return sid, temp


def private_tmpdir(tmp_path: Path, name: str = "viewer-tmp", mode: int = 0o700) -> Path:
    d = tmp_path / name
    d.mkdir()
    d.chmod(mode)
    return d


async def test_a_symlinked_temp_file_is_never_subscribed_or_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    secret = secret_file(tmp_path)
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(private_tmpdir(tmp_path))) as fs:
        _sid, temp = await opened(fs)
        os.unlink(temp)
        os.symlink(secret, temp)
        err = await refused(fs, temp)
        assert err.errno == errno.ELOOP and "symbolic link" in err.message
        assert secret.read_text() == SECRET


async def test_hard_links_and_fifos_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(private_tmpdir(tmp_path))) as fs:
        _sid, temp = await opened(fs)
        other = tmp_path / "other-file"
        os.link(temp, other)
        err = await refused(fs, temp)
        assert err.errno == errno.EPERM and "hard links" in err.message
        os.unlink(other)
        os.unlink(temp)
        os.mkfifo(temp)
        err = await refused(fs, temp)
        assert err.errno == errno.EPERM and "not a regular file" in err.message


async def test_another_uids_temp_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_root()
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(private_tmpdir(tmp_path))) as fs:
        _sid, temp = await opened(fs)
        os.chown(temp, OTHER_UID, OTHER_UID)
        err = await refused(fs, temp)
        assert err.errno == errno.EPERM and f"uid {OTHER_UID}" in err.message


async def test_a_temp_file_outside_the_listed_temp_dir_is_refused(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    listed = private_tmpdir(tmp_path, "listed")
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(private_tmpdir(tmp_path))) as fs:
        _sid, temp = await opened(fs)
        fs.sim.listed_temp_dir = str(listed)  # the viewer writes to one dir and names another
        err = await refused(fs, temp)
        assert err.errno == errno.EPERM and str(listed) in err.message
        # ... or a path that climbs out of the temp dir it names
        fs.sim.listed_temp_dir = None
        beside = private_tmpdir(tmp_path, "x")
        escaped = beside / os.path.basename(temp)
        escaped.write_text(GOOD)
        assert (await refused(fs, f"{os.path.dirname(temp)}/../x/{escaped.name}")).errno == errno.EPERM
        with pytest.raises(FsError) as info:
            await fs.ws.live.subscribe("/etc/passwd")
        assert info.value.errno == errno.EINVAL


@pytest.mark.parametrize("shape", ["world-writable", "under-world-writable", "another-uid"])
async def test_a_temp_dir_another_user_can_change_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             shape: str) -> None:
    if shape == "another-uid":
        require_root()
        tmpdir = private_tmpdir(tmp_path, mode=0o755)
        os.chown(tmpdir, OTHER_UID, OTHER_UID)
    elif shape == "world-writable":
        tmpdir = private_tmpdir(tmp_path, mode=0o777)
    else:
        tmpdir = private_tmpdir(private_tmpdir(tmp_path, "open", mode=0o777))
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(tmpdir)) as fs:
        _sid, temp = await opened(fs)
        err = await refused(fs, temp)
        assert err.errno == errno.EPERM and "temp dir" in err.message


def no_script_list(fs: Driver, monkeypatch: pytest.MonkeyPatch) -> None:
    real = fs.ws.calls.call

    async def call(what: str, method: str, params: Any, result_type: Any = None, **kw: Any) -> Any:
        if method == "script.list":
            raise FsError(errno.ENOSYS, "script.list: method not found")
        return await real(what, method, params, result_type, **kw)

    monkeypatch.setattr(fs.ws.calls, "call", call)


async def test_with_no_temp_dir_from_the_viewer_only_the_system_temp_dir(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A viewer without script.list (the oldest builds) names no temp dir: its temp files are
    where Linux viewers put them (the system temp dir), not wherever the path points."""
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(private_tmpdir(tmp_path))) as fs:
        no_script_list(fs, monkeypatch)
        _sid, temp = await opened(fs)
        err = await refused(fs, temp)
        assert err.errno == errno.EPERM and "system temp dirs" in err.message
    # the sim's default, the system temp dir (the fixture's default is a temp dir of the test's own)
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=tempfile.gettempdir()) as fs:
        no_script_list(fs, monkeypatch)
        _sid, temp = await opened(fs)
        await fs.ws.live.subscribe(temp)
        assert await fs.read_file(".slfs/live/Pocket.lsl") == GOOD.encode()


async def test_a_swap_for_a_symlink_after_subscribing_is_never_read_or_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = secret_file(tmp_path, 0o644)
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(private_tmpdir(tmp_path))) as fs:
        sid, temp = await opened(fs)
        os.chmod(temp, 0o640)
        await fs.ws.live.subscribe(temp)
        await fs.write_file(".slfs/live/Pocket.lsl", BAD.encode())
        assert stat.S_IMODE(os.lstat(temp).st_mode) == 0o640  # the write kept the original mode
        fh = await fs.open(".slfs/live/Pocket.lsl", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, GOOD.encode())
        os.unlink(temp)
        os.symlink(mine, temp)  # swapped between the subscribe and the save
        assert await fails(fs.ops.flush(fh)) == errno.ELOOP
        await fs.ops.release(fh)
        assert os.path.islink(temp) and mine.read_text() == SECRET and stat.S_IMODE(mine.stat().st_mode) == 0o644
        assert sid not in fs.ws.live.by_id and await fs.entries(".slfs/live") == []
        assert "symbolic link" in fs.ws.last_error
        recovery = tmp_path / "xdg_state_home" / "slfs" / "recovery"
        assert [p.read_bytes() for p in recovery.iterdir()] == [GOOD.encode()]  # the save is kept


async def test_a_swap_for_a_symlink_is_not_read_into_the_live_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    secret = secret_file(tmp_path)
    async with fs_against_sim(tmp_path, monkeypatch, world(), tmpdir=str(private_tmpdir(tmp_path))) as fs:
        _sid, temp = await opened(fs)
        await fs.ws.live.subscribe(temp)
        os.symlink(secret, temp + ".log")  # the compile log beside it, too
        assert await fs.read_file(".slfs/live/Pocket.lsl.log") == b""
        os.unlink(temp)
        os.symlink(secret, temp)
        with trio.fail_after(10):
            got = await fails(fs.open(".slfs/live/Pocket.lsl", os.O_RDONLY))
        assert got in (errno.ELOOP, errno.ENOENT)  # refused, and the live file went with it
        assert await fs.entries(".slfs/live") == []
        assert "symbolic link" in fs.ws.last_error
