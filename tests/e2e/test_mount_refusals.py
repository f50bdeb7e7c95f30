"""Mounting where it cannot or should not work says why on the terminal: a second mount of the
same viewer, no usable /dev/fuse, a stale mount a killed daemon left (issue 36, item 4)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
import trio
from support.mount import Mount, MountFactory, is_mounted, require_tool

from slfs.registry import our_fuse_mounts

# What differs between generations here is nothing the viewer says: one generation per tier is
# enough, G2 (which lists objects, so the mount is ready without exploring).
pytestmark = pytest.mark.generations("G2")


def slfs(*argv: str | os.PathLike[str]) -> list[str | os.PathLike[str]]:
    return [sys.executable, "-m", "slfs", *argv]


async def test_a_second_mount_of_the_same_viewer_is_refused_naming_the_first(mounted: Mount) -> None:
    m = mounted
    other = m.mnt.parent / "second"
    await m.thread(lambda: other.mkdir(exist_ok=True))
    try:
        for argv in (slfs("mount", "-f", "--port", str(m.port), other),  # foreground
                     slfs("mount", "--port", str(m.port), other),  # background: the spawner says it
                     slfs("mount", "-f", "--host", "localhost", "--port", str(m.port), other)):
            with trio.fail_after(30):
                res = await m.run(*argv, check=False)
            err = res.stderr.decode()
            assert res.returncode == 1, (argv, res)
            assert f"already mounted at {os.path.realpath(m.mnt)} (pid " in err, err
            assert f"slfs umount {os.path.realpath(m.mnt)}" in err, err
            assert not is_mounted(other)
        assert "Hello Cube" in await m.thread(os.listdir, m.mnt)  # the first mount is untouched
    finally:
        await m.thread(other.rmdir)


async def test_the_endpoint_is_free_again_after_the_first_mount_ends(mount_factory: MountFactory) -> None:
    """The claim is the daemon's for its life, also a kill -9'd one: the kernel drops the lock."""
    m = await mount_factory()
    await m.stop_daemon(signal.SIGKILL)
    res = await m.run(*slfs("umount", m.mnt))
    assert res.returncode == 0 and not is_mounted(m.mnt)
    await m.start_daemon()
    assert "Hello Cube" in await m.thread(os.listdir, m.mnt)


@pytest.mark.own_mount("kills the daemon")
async def test_status_of_a_stale_mount_says_so_and_how_to_clear_it(mounted: Mount) -> None:
    m = mounted
    await m.stop_daemon(signal.SIGKILL)
    real = os.path.realpath(m.mnt)
    assert real in our_fuse_mounts()
    elsewhere = m.mnt.parent.parent
    for argv in (slfs("status", "--mount", m.mnt),  # named
                 slfs("status"),  # the only mount there is
                 slfs("diag", m.mnt / "Hello Cube" / "Hello.lsl")):  # a verb on a path in it
        res = await m.run(*argv, cwd=elsewhere, check=False)
        err = res.stderr.decode()
        assert res.returncode != 0, (argv, res)
        assert f"{real}: stale mount: its daemon (pid " in err and "is gone" in err, (argv, err)
        assert f"clear it with: slfs umount {real}" in err, (argv, err)
    await m.run(*slfs("umount", m.mnt))
    res = await m.run(*slfs("status"), cwd=elsewhere, check=False)
    assert res.returncode != 0 and b"no slfs mount is running" in res.stderr and b"stale" not in res.stderr


async def test_no_usable_dev_fuse_is_said_on_the_terminal(mount_factory: MountFactory, tmp_path: Path) -> None:
    """/dev/fuse the user may not open (root without its capabilities, in a mount namespace where a
    mode-000 file stands for it): the background mount's terminal says `/dev/fuse: Permission
    denied`, not only the log."""
    require_tool("unshare", "setpriv")
    if os.geteuid() != 0:
        pytest.skip("needs root to make a mount namespace")
    m = await mount_factory(start=False)
    blocked = tmp_path / "no-fuse"
    blocked.write_text("")
    blocked.chmod(0)
    script = f'mount --bind "{blocked}" /dev/fuse && exec setpriv --bounding-set -all --inh-caps -all "$@"'
    res = await m.run("unshare", "-m", "sh", "-c", script, "sh",
                      *slfs("mount", "--port", str(m.port), m.mnt), check=False)
    err = res.stderr.decode()
    assert res.returncode == 1, res
    assert "slfs: /dev/fuse: Permission denied" in err, err
    assert not is_mounted(m.mnt)


async def test_a_libfuse_refusal_is_said_on_the_terminal(mount_factory: MountFactory) -> None:
    """A /dev/fuse that opens but is not FUSE (/dev/null bound over it): libfuse's own reason,
    which it prints on the daemon's stderr (the log, for a background mount), reaches the terminal."""
    require_tool("unshare")
    if os.geteuid() != 0:
        pytest.skip("needs root to make a mount namespace")
    m = await mount_factory(start=False)
    script = 'mount --bind /dev/null /dev/fuse && exec "$@"'
    res = await m.run("unshare", "-m", "sh", "-c", script, "sh",
                      *slfs("mount", "--port", str(m.port), m.mnt), check=False)
    err = res.stderr.decode()
    assert res.returncode == 1, res
    assert "slfs: libfuse: mount failed: Invalid argument" in err, err
    assert not is_mounted(m.mnt)
