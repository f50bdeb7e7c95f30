"""Mounts shared by the tests of a module (S3QL's t4_fuse mounts once per group of checks, rclone's
vfstest once per mode): one `slfs mount -f` daemon per module and viewer, over a simulated viewer
that runs in its own thread (tests/support/simthread.py), so that it outlives each test's trio loop.

A test on a shared mount starts from the state a fresh mount would give it:
- the world: after each test the sim's world is compared with the one the mount started with; if
  the test changed it (a save, a run state, a rename), the viewer is restarted with the original
  world and the daemon reconnects to it (its caches follow the new session), so the next test
  reads what a fresh mount reads;
- the log: each test's part of the daemon log is checked on its own (support/logcheck.py);
- events: `SharedMount.events_from` is the event log's length when the test began (tests that
  read the events file read from there).
A test that restarts, stops or reconfigures the mount, or depends on state only a first mount has
(its first event, an empty history), takes its own mount: `@pytest.mark.own_mount("why")`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from slfs.sim import World
from slfs.sim.world import world_from_json
from support import logcheck
from support.mount import (
    DAEMON_PIDS,
    READY_TIMEOUT,
    STOP_TIMEOUT,
    Mount,
    force_unmount,
    free_port,
    is_mounted,
    new_mountpoint,
    parse_status,
    stopped_meanwhile,
    viewer_tmpdir,
)
from support.simthread import SimBridge, SimThread

SIM_DEFAULTS: dict[str, Any] = {"latency_ms": 0, "publish_delay": 0.01, "apply_delay": 0.01}

# What a daemon may log while its viewer restarts under it (a reset), each with its reason.
RESET_LOG = (
    # G1 lists nothing (viewer-source.md §2): the daemon asks for each object shown again, and the
    # viewer answers object.request for an object the user may not modify with -32003 "Permission
    # denied" (viewer-source.md, object.request); the reset explores it instead.
    (r"^WARNING slfs\.model\.workspace: could not ask the viewer to publish .* again: .*Permission denied",
     "G1: a no-modify object is not published on request"),
)


class SharedMount(Mount):
    """A mount that lives for a module's tests of one viewer. Tests use it as a Mount; what would
    change the mount itself (restarting the daemon or the viewer) is refused: such a test takes its
    own mount."""

    def __init__(self, world_factory: Callable[[], World], viewer: str, version: int, generation: str | None,
                 base: Path, options: list[str]) -> None:
        mnt = new_mountpoint()
        env = dict(os.environ)
        env.update(XDG_RUNTIME_DIR=str(base / "run"), XDG_STATE_HOME=str(base / "state"),
                   XDG_DATA_HOME=str(base / "data"), PYTHONUNBUFFERED="1")
        os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
        logdir = base / "logs"
        logdir.mkdir(parents=True, exist_ok=True)
        super().__init__(None, None, mnt, free_port(), env, [], False, logdir, version, generation)  # type: ignore[arg-type]
        self.viewer = viewer
        self.world_factory = world_factory
        self.options = options
        self.world_json = world_factory().to_json()
        self.simthread: SimThread | None = None
        self.popen: subprocess.Popen[bytes] | None = None
        self.events_from = 0  # the event log's length in bytes when the current test began
        self.log_from = 0  # the daemon log's length when the current test began

    # --- life of the shared mount (sync: module fixtures run outside the tests' trio loops) -------

    def _start_sim(self) -> None:
        self.simthread = SimThread(world_from_json(self.world_json), self.port, viewer_version=self.viewer_version,
                                   generation=self.generation, tmpdir=str(viewer_tmpdir(self.logdir)), **SIM_DEFAULTS)
        self.simthread.start()
        self.sim = SimBridge(self.simthread)  # type: ignore[assignment]

    def _stop_sim(self) -> None:
        if self.simthread is not None:
            self.simthread.stop()
            self.simthread = None

    def open(self) -> None:
        self._start_sim()
        log = self.logdir / "daemon-0.log"
        self.logs.append(log)
        argv = [sys.executable, "-m", "slfs", "mount", "-f", "--port", str(self.port)]
        for o in self.options:
            argv += ["-o", o]
        argv.append(str(self.mnt))
        with open(log, "wb") as logf:
            self.popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=self.env)
        DAEMON_PIDS.add(self.popen.pid)
        stopped_meanwhile(self.popen.pid)
        self._wait_connected()
        self._explore()

    def _wait_connected(self, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen is not None and self.popen.poll() is not None:
                raise AssertionError(f"daemon exited with {self.popen.returncode}:\n{self.log_text()}")
            if is_mounted(self.mnt):
                try:
                    if parse_status((self.mnt / ".slfs" / "status").read_text()).get("state") == "connected":
                        return
                except OSError:
                    pass
            time.sleep(0.02)
        raise AssertionError(f"shared mount not connected within {timeout} s:\n{self.log_text()}")

    def _explore(self) -> None:
        """G1 has no object.list: the user explores the published objects again (Mount.explore_published)."""
        if self.generation != "G1":
            return
        assert self.simthread is not None
        world = world_from_json(self.world_json)
        for obj in world.objects.values():
            if not obj.published:
                continue
            trio.run(self.simthread.call_async, self.simthread.sim.publish, obj.object_id)
            by_id = self.mnt / ".slfs" / "by-id" / obj.object_id
            deadline = time.monotonic() + 10
            while not os.path.lexists(by_id):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{obj.name} not published within 10 s:\n{self.log_text()}")
                time.sleep(0.02)
        # After a reset the daemon still shows the objects it kept across the drop, so by-id is
        # there before the new publish is applied: wait until the daemon has handled what the
        # viewer sent (a test starting meanwhile saw a script's .state sidecar missing, under load).
        trio.run(self.simthread.call_async, self.simthread.sim.quiesce)

    def close(self) -> list[str]:
        """Stop the daemon and the sim; the problems found (still mounted, a record at WARNING or
        above logged after the last test: the shutdown's, which no test declares)."""
        problems = []
        self.log_from = self._log_size()
        popen = self.popen
        if popen is not None and popen.poll() is None:
            popen.send_signal(signal.SIGTERM)
            try:
                popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                force_unmount(self.mnt)
                popen.kill()
                popen.wait(5)
                problems.append(f"shared daemon did not stop within {STOP_TIMEOUT} s of SIGTERM")
        if popen is not None and popen.returncode is not None:
            DAEMON_PIDS.discard(popen.pid)
        force_unmount(self.mnt)
        self._stop_sim()
        if self.logs:
            bad = logcheck.unexpected(self.new_log_text(), [re.compile(p) for p, _why in logcheck.ALWAYS])
            if bad:
                problems.append(f"the shared daemon's shutdown logged: {bad}")
        if is_mounted(self.mnt):
            problems.append(f"{self.mnt} still mounted")
        else:
            shutil.rmtree(self.mnt.parent, ignore_errors=True)
        return problems

    # --- between tests -----------------------------------------------------------------------

    def begin_test(self) -> None:
        """The test's cursors: its part of the log and of the event log; the viewer's call log
        starts empty, as a fresh viewer's would (after the mount's handshake and listing)."""
        assert self.simthread is not None
        self.simthread.call_sync(self.simthread.sim.calls.clear)
        self.log_from = self._log_size()
        events = self.mnt / ".slfs" / "events"
        self.events_from = events.stat().st_size

    def _log_size(self) -> int:
        try:
            return self.logs[-1].stat().st_size
        except OSError:
            return 0

    def new_log_text(self) -> str:
        with open(self.logs[-1], "rb") as f:
            f.seek(self.log_from)
            return f.read().decode(errors="replace")

    def world_changed(self) -> bool:
        assert self.simthread is not None
        return bool(self.simthread.call_sync(lambda: self.simthread.sim.world.to_json() != self.world_json))  # type: ignore[union-attr]

    def settle(self, timeout: float = 30.0) -> None:
        """Until the daemon has nothing pending (saves, creates, deletes in their grace period,
        background fetches) and the viewer has handled what it sent (the sim's sync point)."""
        deadline = time.monotonic() + timeout
        while True:
            status = parse_status((self.mnt / ".slfs" / "status").read_text())
            # A listing's prefetch runs on after the test: its calls would land in the next test's log.
            if status.get("pending_saves") == "0" and status.get("fetches_pending") == "0":
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"the shared daemon had saves or fetches pending after {timeout} s: {status}")
            time.sleep(0.02)
        assert self.simthread is not None
        trio.run(self.simthread.call_async, self.simthread.sim.quiesce)

    def reset(self) -> list[str]:
        """The viewer restarts with the original world; the daemon reconnects and reloads it. The
        problems its log shows (what a reconnect may log is in RESET_LOG)."""
        self.log_from = self._log_size()
        self._stop_sim()
        self._start_sim()
        self._wait_reconnected()
        self._explore()
        bad = logcheck.unexpected(self.new_log_text(), [re.compile(p) for p, _why in (*logcheck.ALWAYS, *RESET_LOG)])
        return [f"the shared daemon logged while its viewer was reset: {bad}"] if bad else []

    def _wait_reconnected(self, timeout: float = READY_TIMEOUT) -> None:
        """Connected to the new sim: it has seen the daemon's handshake and the daemon says so."""
        assert self.simthread is not None
        deadline = time.monotonic() + timeout
        sim = self.simthread.sim
        while time.monotonic() < deadline:
            if sim.connections > 0:
                self._wait_connected(max(0.1, deadline - time.monotonic()))
                trio.run(self.simthread.call_async, sim.quiesce)
                return
            time.sleep(0.02)
        raise AssertionError(f"the daemon did not reconnect within {timeout} s:\n{self.log_text()}")

    # --- what a shared mount refuses ------------------------------------------------------------

    def _own(self, what: str) -> None:
        raise AssertionError(f"{what} changes the shared mount: mark the test @pytest.mark.own_mount('why')")

    async def start_sim(self, world: World | None = None, **kwargs: Any) -> Any:
        self._own("start_sim")

    def stop_sim(self) -> None:
        self._own("stop_sim")

    async def start_daemon(self, **kwargs: Any) -> None:
        self._own("start_daemon")

    async def stop_daemon(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int | None:
        self._own("stop_daemon")
        return None

    async def restart_daemon(self, **kwargs: Any) -> None:
        self._own("restart_daemon")

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid


class SharedMounts:
    """The module-scoped holder: one SharedMount at a time, made when a test first asks for it for
    its viewer (tests are grouped by viewer, tests/conftest.py), closed when the viewer changes or
    the module ends."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.current: SharedMount | None = None
        self.key: tuple[Any, ...] | None = None
        self.problems: list[str] = []
        self.made = 0

    def get(self, key: tuple[Any, ...], world_factory: Callable[[], World], viewer: str, version: int,
            generation: str | None, options: list[str]) -> SharedMount:
        if self.current is not None and self.key == key:
            return self.current
        self.close()
        self.made += 1
        m = SharedMount(world_factory, viewer, version, generation, self.base / f"shared{self.made}", options)
        self.current, self.key = m, key
        m.open()
        return m

    def close(self) -> None:
        if self.current is not None:
            self.problems += self.current.close()
            self.current, self.key = None, None
