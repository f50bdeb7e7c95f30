"""The daemon's life: -f and background mode, umount, a stale mountpoint; parallel readers."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from support.mount import Mount, MountFactory, is_mounted
from support.worlds import item, u

from slfs.sim.world import world_from_json

# G1 differs in ways tests/e2e/test_viewer_generations.py covers (no object.list, set_running or
# commands; notecards need copy+modify; runtime output only for live-sync subscribers).
pytestmark = pytest.mark.generations("G2", "G3", "G4")


def registry(m: Mount) -> list[dict[str, object]]:
    folder = Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts"
    return [json.loads(p.read_text()) for p in folder.glob("*.json")] if folder.is_dir() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.own_mount("signals the daemon to stop")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_foreground_signal_unmounts_cleanly(mounted: Mount, sig: int) -> None:
    m = mounted
    await m.run("ls", "-lR", m.mnt)
    await m.run("cat", m.path("Hello Cube/Hello.lsl"))
    code = await m.stop_daemon(sig)
    assert code == 0
    assert not is_mounted(m.mnt)
    log = m.log_text()
    # The kernel sends no forget at unmount (the unmount releases what it held), so the count is
    # only reported here; its exactness is checked while mounted after drop_caches.
    refs = re.search(r"unmounted .*; kernel references at unmount: (\d+)", log)
    assert refs is not None, log
    m.assert_clean_log()


@pytest.mark.own_mount("unmounts")
async def test_unmount_after_drop_caches_reports_zero_refs(mounted: Mount) -> None:
    """When the kernel has forgotten everything before the unmount, the daemon's count is 0."""
    m = mounted
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        pytest.skip("needs root to drop the kernel's caches")
    await m.run("ls", "-lR", m.mnt)
    await m.run("cat", m.path("Hello Cube/Hello.lsl"))
    await m.sh("sync; echo 3 > /proc/sys/vm/drop_caches")
    assert await m.stop_daemon() == 0
    assert "kernel references at unmount: 0 " in m.log_text()


async def test_background_mode_and_umount(mount_factory: MountFactory) -> None:
    m = await mount_factory(start=False)
    slfs = [sys.executable, "-m", "slfs"]
    pid = None
    try:
        with trio.fail_after(20):
            res = await m.run(*slfs, "mount", "--port", str(m.port), m.mnt)
        assert b"mounted" in res.stdout
        assert is_mounted(m.mnt)
        entries = registry(m)
        assert len(entries) == 1 and entries[0]["mountpoint"] == os.path.realpath(m.mnt)
        pid = int(entries[0]["pid"])  # type: ignore[call-overload]
        assert alive(pid)
        await m.wait_live("connected")
        assert "Hello Cube" in await m.out("ls", m.mnt)
        with trio.fail_after(20):
            await m.run(*slfs, "umount", m.mnt)
        assert not is_mounted(m.mnt)
        await m.wait_for(lambda: _dead(pid), 10, "daemon exited")
        assert registry(m) == []
        log = Path(m.env["XDG_STATE_HOME"]) / "slfs"
        logs = list(log.glob("mount-*.log"))
        assert logs and "Traceback" not in logs[0].read_text()
    finally:
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)


async def _dead(pid: int) -> bool:
    return not alive(pid)


async def test_background_mount_reports_failure(mount_factory: MountFactory) -> None:
    m = await mount_factory(start=False)
    res = await m.run(sys.executable, "-m", "slfs", "mount", "--port", str(m.port), m.mnt / "nope", check=False)
    assert res.returncode == 1 and b"no such directory" in res.stderr


async def test_kernel_flag_with_a_value_is_a_usage_error(mount_factory: MountFactory) -> None:
    """Found by a black-box probe: `-o ro=1` reached fuse_session_new, which failed the mount (exit
    1, a libfuse message). It is refused before anything is mounted; `-o ro` still mounts read-only."""
    m = await mount_factory(start=False)
    for opt in ("ro=1", "allow_other=yes"):
        with trio.fail_after(20):
            res = await m.run(sys.executable, "-m", "slfs", "mount", "-f", "--port", str(m.port), "-o", opt, m.mnt,
                              check=False)
        assert res.returncode == 2, res
        name = opt.partition("=")[0]
        assert res.stderr.decode().splitlines() == [
            f"slfs: -o {name} takes no value (it is passed to the kernel as -o {name}), got {opt!r}"]
        assert not is_mounted(m.mnt)
    await m.start_daemon(options=["ro"])
    assert "Hello Cube" in await m.out("ls", m.mnt)
    with open("/proc/self/mounts") as f:
        (line,) = [ln for ln in f if ln.split()[1] == os.path.realpath(m.mnt)]
    assert "ro" in line.split()[3].split(","), line


@pytest.mark.allow_log(r"^WARNING slfs\.daemon:")
@pytest.mark.own_mount("kills the daemon")
async def test_stale_mountpoint_after_kill_9(mounted: Mount) -> None:
    """`kill -9` of the daemon, then `slfs mount` on the same mount point: the stale mount is
    cleared (the fixture's teardown unmounts whatever is left)."""
    m = mounted
    await m.run("ls", m.mnt)
    # The kernel now has the root's attributes cached (attr_timeout): a stat of the dead mount
    # succeeds from that cache, so only a call that reaches the daemon tells it is gone.
    await m.run("stat", m.mnt)
    await m.stop_daemon(signal.SIGKILL)
    assert is_mounted(m.mnt)
    await m.thread(os.stat, m.mnt)
    res = await m.run("ls", m.mnt, check=False)
    assert res.returncode != 0 and b"Transport endpoint is not connected" in res.stderr
    await m.start_daemon()
    assert "Hello Cube" in await m.out("ls", m.mnt)
    assert "Hello" in await m.out("cat", m.path("Hello Cube", "Hello.lsl"))
    log = m.log_text()
    assert "stale mount of a crashed daemon" in log and "stale mount cleared" in log, log
    m.assert_clean_log()


@pytest.mark.own_mount("kills the daemon")
async def test_umount_of_a_stale_mount_removes_its_registry_entry(mounted: Mount) -> None:
    """Found by a black-box probe: `slfs umount` of the stale mount a `kill -9` left unmounted it
    but kept the dead daemon's registry file."""
    m = mounted
    await m.stop_daemon(signal.SIGKILL)
    assert is_mounted(m.mnt)
    res = await m.run("ls", m.mnt, check=False)
    assert b"Transport endpoint is not connected" in res.stderr
    assert [e["mountpoint"] for e in registry(m)] == [os.path.realpath(m.mnt)]
    with trio.fail_after(30):
        await m.run(sys.executable, "-m", "slfs", "umount", m.mnt)
    assert not is_mounted(m.mnt)
    assert registry(m) == []


async def test_mount_over_a_live_mount_is_refused(mounted: Mount) -> None:
    m = mounted
    res = await m.run(sys.executable, "-m", "slfs", "mount", "-f", "--port", str(m.port), m.mnt, check=False)
    assert res.returncode == 1
    assert b"something is already mounted here" in res.stderr + res.stdout
    assert "Hello Cube" in await m.out("ls", m.mnt)  # the live mount is untouched
    if os.geteuid() != 0:
        return  # mounting a tmpfs needs root
    # Not slfs: a tmpfs mounted over the directory is refused too.
    other = m.mnt.parent / "other"
    other.mkdir()
    await m.run("mount", "-t", "tmpfs", "none", other)
    try:
        res = await m.run(sys.executable, "-m", "slfs", "mount", "-f", "--port", str(m.port), other, check=False)
        assert res.returncode == 1 and b"something is already mounted here" in res.stderr + res.stdout
    finally:
        await m.run("umount", other)


def parallel_world() -> object:
    items = [item(u(i + 1), f"note {i}", content=f"note {i}\n" + f"{i:04d} " * (50 + 40 * i) + "\n") for i in range(16)]
    items += [
        item(u(i + 101), f"s{i}", "script", f"// script {i} \u2713\n" * (10 + i) + "default { }\n") for i in range(16)
    ]
    return world_from_json({"objects": [{"object_id": u(1, "b"), "object_name": "P", "inventory": items}]})


async def test_32_parallel_readers(mount_factory: MountFactory) -> None:
    world = parallel_world()
    m = await mount_factory(world, sim_kwargs={"method_latency_ms": {"object.content.get": 30}})
    assert m.sim is not None
    want = {}
    for it in m.sim.world.objects[u(1, "b")].root.inventory:
        name = it.name + (".lsl" if it.type == "script" else "")
        want[str(m.path("P", name))] = it.content.encode()
    paths = sorted(want)
    assert len(paths) == 32

    def reader(i: int) -> list[tuple[str, bool]]:
        out = []
        # every thread reads its own file first (concurrent cold fetches), then a shared one
        for path in (paths[i], paths[(i * 7) % 32], paths[0]):
            res = subprocess.run(["cat", path], capture_output=True, timeout=30, check=False)
            out.append((path, res.returncode == 0 and res.stdout == want[path]))
        return out

    results: list[list[tuple[str, bool]]] = [[] for _ in range(32)]

    async def one(i: int) -> None:
        results[i] = await trio.to_thread.run_sync(reader, i, limiter=trio.CapacityLimiter(1))

    with trio.fail_after(60):
        async with trio.open_nursery() as n:
            for i in range(32):
                n.start_soon(one, i)
    bad = [(p, ok) for r in results for p, ok in r if not ok]
    assert not bad
    # one fetch per item: concurrent reads of one file were coalesced
    gets = [p["item_id"] for meth, p in m.sim.calls if meth == "object.content.get"]
    assert len(gets) == len(set(gets)) == 32


async def test_a_mountpoint_that_is_not_empty_is_refused_unless_nonempty(mount_factory: MountFactory) -> None:
    """As sshfs: a mount over files would hide them, so it is refused with the reason on the
    terminal, unless -o nonempty."""
    m = await mount_factory(start=False)
    await m.thread((m.mnt / "notes.txt").write_text, "mine\n")
    res = await m.run(sys.executable, "-m", "slfs", "mount", "-f", "--port", str(m.port), m.mnt, check=False)
    err = res.stderr.decode()
    assert res.returncode == 1 and "not empty" in err and "-o nonempty" in err, (res.returncode, err)
    assert not is_mounted(m.mnt)
    await m.start_daemon(options=["nonempty"])
    if m.generation == "G1":
        await m.explore_published()
    assert "Hello Cube" in await m.thread(os.listdir, m.mnt)
    await m.stop_daemon()
    assert await m.thread((m.mnt / "notes.txt").read_text) == "mine\n"  # there again, untouched
