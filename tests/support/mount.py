"""The end-to-end harness: a real slfs mount (daemon subprocess) over an in-process simulated viewer.

The fixtures that use it live in tests/e2e/conftest.py (`mount_factory`, `mounted`, `wm`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from slfs.sim import SimViewer, World, sample_world
from support import logcheck

IN_CI = bool(os.environ.get("CI"))
MOUNT_BASE = Path.home() / ".cache" / "slfs-test-mounts"
READY_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0


def missing(what: str) -> None:
    """A prerequisite is missing: fail in CI, skip locally."""
    if IN_CI:
        pytest.fail(f"{what} (required in CI)")
    pytest.skip(what)


def require_tool(*tools: str) -> None:
    for tool in tools:
        if shutil.which(tool) is None:
            missing(f"{tool} is not installed")


def require_fuse() -> None:
    if not os.path.exists("/dev/fuse"):
        missing("/dev/fuse is not available")
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
        os.close(fd)
    except OSError as exc:
        missing(f"/dev/fuse cannot be opened: {exc.strerror}")
    require_tool("fusermount3")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# What this process made, for the last sweep (sweep(), at the end of the session however it ends).
MADE_MOUNTPOINTS: list[Path] = []
DAEMON_PIDS: set[int] = set()


def _signal(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:  # it ended meanwhile
        return False


def _reaped(pid: int) -> bool:
    """Collect `pid` if it is our child and has exited (a zombie still has its /proc entry)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return not _our_daemon(pid)


def new_mountpoint() -> Path:
    """A fresh empty directory outside /tmp (editors treat /tmp specially)."""
    if STOPPING:
        raise RuntimeError("the test run is stopping: no new mount")
    path = MOUNT_BASE / uuid.uuid4().hex[:12] / "mnt"
    path.mkdir(parents=True)
    MADE_MOUNTPOINTS.append(path)
    return path


STOPPING = False  # set by a stop signal: no new mount starts (tests/conftest.py)


def _our_daemon(pid: int) -> bool:
    """Still our daemon, not a process that reused its number."""
    try:
        return b"slfs\0mount" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def stopped_meanwhile(pid: int) -> None:
    """A daemon started while the run began stopping (the check before it passed): killed now, as
    the sweep may have taken its list already."""
    if STOPPING:
        _signal(pid, signal.SIGKILL)


def sweep(grace: float = 0.0) -> list[str]:
    """Stop the daemons this process started that still run (SIGTERM, which unmounts, then after
    `grace` seconds SIGKILL), detach its mounts that are still mounted, remove its mountpoints:
    what an interrupted teardown left. Returns what it had to do."""
    done = []
    pids = [pid for pid in sorted(DAEMON_PIDS) if _our_daemon(pid)]
    if grace > 0:
        for pid in pids:
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_our_daemon(pid) and not _reaped(pid) for pid in pids):
            time.sleep(0.05)
    # Again from the set: a test thread may have started a daemon during the grace (its
    # mountpoint was made before the stop), which would otherwise outlive the run.
    for pid in sorted(set(pids) | {p for p in DAEMON_PIDS if _our_daemon(p)}):
        if _our_daemon(pid) and not _reaped(pid) and _signal(pid, signal.SIGKILL):
            done.append(f"killed daemon {pid}")
            _reaped(pid)
    DAEMON_PIDS.clear()
    for path in MADE_MOUNTPOINTS:
        if is_mounted(path):
            force_unmount(path)
            done.append(f"detached {path}")
        if not is_mounted(path):
            shutil.rmtree(path.parent, ignore_errors=True)
    MADE_MOUNTPOINTS.clear()
    return done


def viewer_tmpdir(beside: Path) -> Path:
    """The simulated viewer's temp dir (its live-sync files): one per mount, not /tmp, because a
    script's temp file name is the same in every test (`sl_script_<name>_<md5>`) and tests run in
    parallel (a test that is about the temp dir itself gives its own)."""
    path = beside.parent / f"{beside.name}-viewer-tmp"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def parse_status(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def is_mounted(path: Path) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(len(p := line.split()) > 1 and p[1] == real for line in f)


def force_unmount(path: Path) -> None:
    """Last resort: detach whatever is mounted at `path` (never blocks on a dead daemon)."""
    for _ in range(3):
        if not is_mounted(path):
            return
        subprocess.run(["fusermount3", "-u", "-z", str(path)], capture_output=True, timeout=15, check=False)


class Mount:
    """One slfs mount driven from a test."""

    def __init__(
        self,
        nursery: trio.Nursery,
        sim: SimViewer | None,
        mnt: Path,
        port: int,
        env: dict[str, str],
        args: Sequence[str],
        allow_traceback: bool,
        logdir: Path,
        viewer_version: int = 1,
        generation: str | None = None,
    ) -> None:
        self.nursery = nursery
        self.sim = sim
        self.mnt = mnt
        self.port = port
        self.env = env
        self.args = list(args)
        self.allow_traceback = allow_traceback
        self.proc: trio.Process | None = None
        self.logs: list[Path] = []
        self.logdir = logdir
        self._sim_scope: trio.CancelScope | None = None
        # The version every start_sim uses unless told otherwise; a start_sim with its own version
        # makes that the default for later restarts, so a restarted viewer stays the same viewer.
        self.viewer_version = viewer_version
        self.generation = generation  # G1-G4, or None: the documents' readings

    # --- the simulated viewer ----------------------------------------------------------------

    async def start_sim(self, world: World | None = None, **kwargs: Any) -> SimViewer:
        """Start (or replace) the sim on this mount's port (same viewer version as before unless given)."""
        if "viewer_version" not in kwargs:
            kwargs["viewer_version"] = self.viewer_version
            kwargs.setdefault("generation", self.generation)
        kwargs.setdefault("latency_ms", 0)
        kwargs.setdefault("publish_delay", 0.01)
        kwargs.setdefault("apply_delay", 0.01)
        if kwargs.get("windows_paths") is None:
            kwargs.setdefault("tmpdir", str(viewer_tmpdir(self.logdir)))
        sim = SimViewer(world or sample_world(), **kwargs)

        async def serve(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            with trio.CancelScope() as scope:
                self._sim_scope = scope
                await sim.serve(self.port, task_status=task_status)

        for _ in range(50):  # the port may linger briefly after a stop
            try:
                await self.nursery.start(serve)
                break
            except OSError:
                await trio.sleep(0.1)
        else:
            raise RuntimeError(f"could not listen on port {self.port}")
        self.sim = sim
        self.viewer_version = sim.viewer_version
        self.generation = getattr(sim, "generation", None)
        return sim

    async def explore_published(self) -> None:
        """G1 has no object.list (viewer-source.md §2): what it published before slfs connected is
        unknown to slfs until the user explores it again. Do that for each published object, and
        wait until the mount shows it."""
        assert self.sim is not None
        for obj in list(self.sim.world.objects.values()):
            if not obj.published:
                continue
            await self.sim.publish(obj.object_id)
            by_id = self.path(".slfs", "by-id", obj.object_id)

            async def shown(by_id: Path = by_id) -> bool:
                return await self.thread(os.path.lexists, by_id)
            await self.wait_for(shown, 10, f"{obj.name} published")
        # An object kept across a reconnect shows in by-id before its new publish is applied.
        await self.sim.quiesce()

    def stop_sim(self) -> None:
        """Kill the sim entirely (the viewer quit): connections and the listener go away."""
        if self._sim_scope is not None:
            self._sim_scope.cancel()
            self._sim_scope = None

    # --- the daemon ----------------------------------------------------------------------------

    @property
    def log_path(self) -> Path:
        return self.logs[-1]

    def log_text(self) -> str:
        """The daemon's log, every run of it so far."""
        return "".join(p.read_text(errors="replace") for p in self.logs if p.exists())

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start_daemon(
        self,
        *,
        wait_state: str | None = "connected",
        extra_env: dict[str, str] | None = None,
        options: Sequence[str] = (),
    ) -> None:
        """`slfs mount -f` as a subprocess; returns once the mount is live (and in `wait_state`)."""
        log = self.logdir / f"daemon-{len(self.logs)}.log"
        self.logs.append(log)
        env = {**self.env, **(extra_env or {})}
        argv = [sys.executable, "-m", "slfs", "mount", "-f", "--port", str(self.port), *self.args]
        for o in options:
            argv += ["-o", o]
        argv.append(str(self.mnt))
        if STOPPING:
            raise RuntimeError("the test run is stopping: no new daemon")
        with open(log, "wb") as logf:
            self.proc = await trio.lowlevel.open_process(
                argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env
            )
        DAEMON_PIDS.add(self.proc.pid)
        stopped_meanwhile(self.proc.pid)
        await self.wait_live(wait_state)

    async def wait_live(self, state: str | None = "connected", timeout: float = READY_TIMEOUT) -> None:
        with trio.move_on_after(timeout) as scope:
            while True:
                if self.proc is not None and self.proc.returncode is not None:
                    raise AssertionError(f"daemon exited with {self.proc.returncode}:\n{self.log_text()}")
                if await trio.to_thread.run_sync(is_mounted, self.mnt):
                    if state is None:
                        return
                    try:
                        if (await self.status()).get("state") == state:
                            return
                    except OSError:
                        pass
                await trio.sleep(0.05)
        if scope.cancelled_caught:
            status = await self.status_or_error()
            raise AssertionError(
                f"mount not live in state {state!r} within {timeout} s (status: {status}):\n{self.log_text()}"
            )

    async def stop_daemon(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int | None:
        """Stop the daemon (SIGTERM by default) and make sure nothing stays mounted."""
        proc = self.proc
        if proc is not None and proc.returncode is None:
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass
            with trio.move_on_after(timeout):
                await proc.wait()
            if proc.returncode is None:
                await trio.to_thread.run_sync(force_unmount, self.mnt)
                with trio.move_on_after(5):
                    await proc.wait()
            if proc.returncode is None:
                proc.kill()
                with trio.move_on_after(5):
                    await proc.wait()
        if sig != signal.SIGKILL:
            await trio.to_thread.run_sync(force_unmount, self.mnt)
        if proc is not None and proc.returncode is not None:
            DAEMON_PIDS.discard(proc.pid)
        return proc.returncode if proc is not None else None

    async def restart_daemon(self, **kwargs: Any) -> None:
        await self.stop_daemon()
        await self.start_daemon(**kwargs)

    # --- driving the mount -------------------------------------------------------------------

    def path(self, *parts: str) -> Path:
        return self.mnt.joinpath(*parts)

    async def thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run blocking file I/O on the mount in a worker thread."""
        return await trio.to_thread.run_sync(fn, *args)

    async def run(
        self,
        *argv: str | os.PathLike[str],
        check: bool = True,
        timeout: float = 30.0,
        input: bytes | None = None,
        cwd: str | os.PathLike[str] | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run a real program; stdout/stderr captured; bounded in time."""
        with trio.fail_after(timeout):
            res = await trio.run_process(
                [os.fspath(a) for a in argv],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                stdin=input,
                cwd=cwd,
                env=self.env,
            )
        if check and res.returncode != 0:
            raise AssertionError(f"{argv} exited {res.returncode}: stdout={res.stdout!r} stderr={res.stderr!r}")
        return res

    async def out(self, *argv: str | os.PathLike[str], **kw: Any) -> str:
        return (await self.run(*argv, **kw)).stdout.decode()

    async def sh(self, script: str, **kw: Any) -> subprocess.CompletedProcess[bytes]:
        return await self.run("sh", "-c", script, **kw)

    async def read_bytes(self, *parts: str) -> bytes:
        return await self.thread(self.path(*parts).read_bytes)

    async def status(self) -> dict[str, str]:
        text = await self.thread((self.mnt / ".slfs" / "status").read_text)
        return parse_status(text)

    async def status_or_error(self) -> dict[str, str] | str:
        try:
            with trio.move_on_after(3):
                return await self.status()
            return "timed out"
        except OSError as exc:
            return repr(exc)

    async def wait_for(self, predicate: Callable[[], Awaitable[bool]], timeout: float, what: str = "") -> float:
        """Poll an async predicate; returns the seconds it took, fails after `timeout`."""
        start = trio.current_time()
        with trio.move_on_after(timeout):
            while not await predicate():
                await trio.sleep(0.02)
            return trio.current_time() - start
        raise AssertionError(f"not within {timeout} s: {what}")

    def assert_clean_log(self) -> None:
        text = self.log_text()
        assert "Traceback" not in text, f"daemon logged a traceback:\n{text}"


MountFactory = Callable[..., Awaitable[Mount]]


@asynccontextmanager
async def open_mounts(nursery: trio.Nursery, tmp_path: Path, viewer_version: int,
                      viewer_generation: str | None, node: pytest.Item) -> AsyncIterator[MountFactory]:
    """The `mount_factory` fixture: `await make(world=None, sim=True, sim_kwargs={}, args=(), env={},
    wait_state=..., allow_traceback=False, start=True)` -> Mount. On exit every mount is stopped,
    and the test fails if one stayed mounted or its daemon logged what the test did not declare
    (support/logcheck.py)."""
    require_fuse()
    mounts: list[Mount] = []

    async def make(
        world: World | None = None,
        *,
        sim: bool = True,
        sim_kwargs: dict[str, Any] | None = None,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        wait_state: str | None = "connected",
        allow_traceback: bool = False,
        start: bool = True,
        options: Sequence[str] = (),
    ) -> Mount:
        mnt = new_mountpoint()
        full_env = dict(os.environ)
        # Registry, logs and overlay stay inside the test's own directories.
        full_env.update(
            XDG_RUNTIME_DIR=str(tmp_path / f"run{len(mounts)}"),
            XDG_STATE_HOME=str(tmp_path / f"state{len(mounts)}"),
            XDG_DATA_HOME=str(tmp_path / f"data{len(mounts)}"),
            PYTHONUNBUFFERED="1",
        )
        os.makedirs(full_env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
        full_env.update(env or {})
        logdir = tmp_path / f"logs{len(mounts)}"
        logdir.mkdir()
        m = Mount(nursery, None, mnt, free_port(), full_env, args, allow_traceback, logdir, viewer_version,
                  viewer_generation)
        mounts.append(m)
        if sim:
            await m.start_sim(world, **(sim_kwargs or {}))
        if start:
            await m.start_daemon(wait_state=wait_state if sim else (wait_state or None), options=options)
            if sim and wait_state == "connected" and m.generation == "G1":
                await m.explore_published()  # G1 has no object.list: the user explores again
        return m

    try:
        yield make
    finally:
        problems = []
        with trio.CancelScope(shield=True):
            for m in mounts:
                await m.stop_daemon()
                if is_mounted(m.mnt):
                    problems.append(f"{m.mnt} still mounted")
                problems += logcheck.report(m.log_text(), node, f"daemon {m.mnt}", m.allow_traceback)
                if not is_mounted(m.mnt):
                    shutil.rmtree(m.mnt.parent, ignore_errors=True)
        if problems:
            pytest.fail("\n".join(problems))
