"""A mount's whole life: check the mountpoint, mount, serve, shut down in order, unmount."""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence

import attrs
import pyfuse3
import trio

from . import paths
from .control.server import ControlServer
from .debug_hooks import Debug
from .fs.control_dir import Control
from .fs.invalidator import KernelInvalidator
from .fs.lookups import Lookups
from .fs.operations import Operations
from .holders import Holder, mount_holders
from .local.events import EventLog
from .local.keep import RECOVERY, KeptCopies, folder_of
from .model.options import Options
from .model.overlay import Overlay
from .model.scripts import Scripts
from .model.services import Broadcast
from .model.sources import Sources
from .model.syntax import SyntaxFiles
from .model.workspace import Workspace
from .model.writes import Writer
from .registry import EndpointTaken, claim_endpoint, registry_path
from .stats import Stats

log = logging.getLogger(__name__)

HOLDERS_POLL = 0.5  # seconds between unmount attempts while programs hold the mount


def recovery_folder() -> str:
    return str(folder_of(RECOVERY))


class MountError(Exception):
    pass


def fuse_options(options: Options) -> set[str]:
    opts = set(pyfuse3.default_options)
    opts |= {"fsname=slfs", "subtype=slfs"}
    opts |= set(options.fuse)
    return opts


def is_mounted(mountpoint: str) -> bool:
    real = os.path.realpath(mountpoint)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == real for line in f if len(line.split()) > 1)


def _probe(mountpoint: str) -> int:
    """0, or the errno a request to whatever is mounted at `mountpoint` (or the directory) fails with."""
    try:
        # statvfs always reaches the file system: for a FUSE mount whose daemon died (kill -9) it
        # fails with ENOTCONN, where a stat may still be answered from the kernel's attribute cache.
        os.statvfs(mountpoint)
        os.stat(mountpoint)
    except OSError as exc:
        return exc.errno or errno.EIO
    return 0


def prepare_mountpoint(mountpoint: str, *, nonempty: bool = False) -> None:
    """Refuse an unusable mountpoint with a clear reason; clear a stale one left by a crash. A
    directory that holds files is refused unless `nonempty` (the mount would hide them, as sshfs
    says)."""
    error = _probe(mountpoint)
    if error == errno.ENOTCONN:
        log.warning("%s: stale mount of a crashed daemon (Transport endpoint is not connected); "
                    "unmounting it", mountpoint)
        if not unmount(mountpoint, lazy=True):
            raise MountError(f"{mountpoint}: a stale mount is in the way and could not be removed; "
                             f"try: fusermount3 -u -z {mountpoint}")
        error = _probe(mountpoint)
        if error == errno.ENOTCONN:
            raise MountError(f"{mountpoint}: still a stale mount after unmounting one; "
                             f"try: fusermount3 -u -z {mountpoint}")
        log.info("%s: stale mount cleared", mountpoint)
    if error == errno.ENOENT:
        raise MountError(f"{mountpoint}: no such directory")
    if error:
        raise MountError(f"{mountpoint}: {os.strerror(error)}")
    if not os.path.isdir(mountpoint):
        raise MountError(f"{mountpoint}: not a directory")
    if is_mounted(mountpoint):
        raise MountError(f"{mountpoint}: something is already mounted here (slfs umount {mountpoint})")
    if not nonempty:
        with os.scandir(mountpoint) as entries:
            if next(entries, None) is not None:
                raise MountError(f"{mountpoint}: not empty, and the mount would hide what is in it; "
                                 "use an empty directory, or mount anyway with -o nonempty")


def check_fuse_device() -> None:
    """The reason a mount cannot work, before libfuse says only that it failed: /dev/fuse must open."""
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC))
    except OSError as exc:
        hint = {errno.ENOENT: " (no FUSE here: `modprobe fuse`, or give the container --device /dev/fuse)",
                errno.EACCES: " (ask for access to /dev/fuse, e.g. membership of its group)",
                errno.EPERM: " (ask for access to /dev/fuse, e.g. membership of its group)"}
        raise MountError(f"/dev/fuse: {os.strerror(exc.errno or errno.EIO)}{hint.get(exc.errno or 0, '')}") from None


def init_fuse(ops: Operations, mountpoint: str, options: set[str]) -> None:
    """pyfuse3.init, with what libfuse prints on stderr (a failure's only reason: "fuse: ...") kept
    for the error a background mount reports on the terminal, and still written to stderr."""
    with tempfile.TemporaryFile() as said:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(said.fileno(), 2)
        try:
            pyfuse3.init(ops, mountpoint, options)
        except RuntimeError as exc:
            failed: RuntimeError | None = exc
        else:
            failed = None
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        said.seek(0)
        text = said.read(4096).decode(errors="replace")
    if text:
        sys.stderr.write(text)
    if failed is not None:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        raise MountError(f"libfuse: {lines[-1].removeprefix('fuse: ')}" if lines else f"mount failed: {failed}")


def unmount(mountpoint: str, *, lazy: bool = False) -> bool:
    for cmd in (["fusermount3", "-u"], ["fusermount", "-u"], ["umount"]):
        argv = [*cmd, *(["-z"] if lazy and cmd[0].startswith("fuse") else ["-l"] if lazy else []), mountpoint]
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (FileNotFoundError, subprocess.TimeoutExpired):
            continue
        if res.returncode == 0:
            return True
        log.debug("%s: %s", " ".join(argv), res.stderr.strip())
    return False


@attrs.frozen
class Services:
    """Everything one mount runs, built once (build_services)."""

    ws: Workspace
    events: EventLog
    syntax: SyntaxFiles
    writer: Writer
    scripts: Scripts
    control: Control
    ops: Operations
    control_server: ControlServer
    stats: Stats
    kernel_invalidator: KernelInvalidator


def build_services(mountpoint: str, host: str, port: int, options: Options, *, event_log: bool = True,
                   debug: Debug | None = None, socket_path: str = "") -> Services:
    """Every service built once, with its collaborators as constructor arguments: the mount's
    Stats, passed to what records into it or reads it, and the one fan-out (model/services.py) the
    workspace tells its events and invalidation reports through, connected to the services once
    they exist. The tests build them here too, so what they drive is what the daemon runs.
    `socket_path` is where the control server listens (the daemon's; the in-process tests serve
    none), `debug` the test suite's hooks."""
    stats = Stats()
    fanout = Broadcast()
    lookups = Lookups()  # the kernel's counts (fs layer), asked by the tree before it frees a node
    ws = Workspace(host, port, options, mountpoint=mountpoint, fanout=fanout, debug=debug, stats=stats,
                   kernel_knows=lookups.knows)
    # One event log per mount: rotation is not coordinated between processes.
    events = EventLog(paths.state_dir() / f"events-{paths.mount_key(mountpoint)}.jsonl" if event_log else None)
    syntax = SyntaxFiles(ws.calls, ws.spawn)
    overlay = Overlay(ws.tree, shared="allow_other" in options.fuse, session=lambda: ws.info,
                      note_error=ws.note_error)
    sources = Sources(overlay, ws.content, tree=ws.tree, options=ws.options, compiles=ws.compiles,
                      session_info=lambda: ws.info, mountpoint=ws.mountpoint)
    writer = Writer(ws, overlay, KeptCopies(), sources)
    scripts = Scripts(ws.calls, tree=ws.tree, compiles=ws.compiles, emit=ws.emit, note_error=ws.note_error,
                      mountpoint=ws.mountpoint)
    control = Control(ws, ws.content, events, ws.runtime.logs, syntax, scripts, stats)
    ops = Operations(ws, writer, overlay, control, lookups=lookups, stats=stats, debug=debug)
    control_server = ControlServer(ws, scripts, writer, events, stats, socket_path)
    fanout.connect([overlay, events, syntax, writer, writer.unsent, ops, ws.history], ops.invalidation_listeners)
    return Services(ws=ws, events=events, syntax=syntax, writer=writer, scripts=scripts, control=control, ops=ops,
                    control_server=control_server, stats=stats,
                    kernel_invalidator=KernelInvalidator(ws.invalidations, stats))


class Daemon:
    """One mount. `extra_tasks` start in the daemon's nursery before the workspace (e.g. the
    demo's simulated viewer); each is given the nursery."""

    def __init__(self, mountpoint: str, host: str, port: int, options: Options, *, debug: Debug | None = None,
                 extra_tasks: Sequence[Callable[[trio.Nursery], Awaitable[None]]] = ()) -> None:
        self.mountpoint = os.path.realpath(mountpoint)
        self.options = options
        self.socket_path = paths.control_socket_path(mountpoint)
        svc = build_services(self.mountpoint, host, port, options, debug=debug, socket_path=self.socket_path)
        self.ws, self.events, self.syntax, self.writer, self.ops = svc.ws, svc.events, svc.syntax, svc.writer, svc.ops
        self.control_server = svc.control_server
        self.kernel_invalidator = svc.kernel_invalidator
        self.extra_tasks = tuple(extra_tasks)
        self._exit_prepared = False
        self._signals = 0
        self._unmounted = False  # by our fusermount3 (-u, or -z): the kernel has no mount left to unmount
        self._stopping: trio.CancelScope | None = None  # the first stop signal's shutdown
        self.exit_code = 0

    async def serve(self, ready: Callable[[str | None], None] = lambda _e: None) -> None:
        prepare_mountpoint(self.mountpoint, nonempty=self.options.nonempty)
        check_fuse_device()
        try:
            endpoint_lock = claim_endpoint(self.ws.session.endpoint)
        except EndpointTaken as exc:
            raise MountError(str(exc)) from None
        try:
            await self._serve_mounted(ready)
        finally:
            os.close(endpoint_lock)

    async def _serve_mounted(self, ready: Callable[[str | None], None]) -> None:
        # Everything that touches the mountpoint's path happens before init: once mounted, a stat of
        # it would wait for this very process to answer.
        reg = registry_path(self.mountpoint)
        init_fuse(self.ops, self.mountpoint, fuse_options(self.options))
        try:
            async with trio.open_nursery() as nursery:
                for task in self.extra_tasks:
                    await task(nursery)
                await nursery.start(self.ws.run)
                nursery.start_soon(self.kernel_invalidator.run)
                nursery.start_soon(self._watch_signals)
                if self.options.connect_wait:
                    nursery.start_soon(self._first_connection_wait, self.options.connect_wait)
                await nursery.start(self.control_server.serve)
                paths.ensure(reg.parent)
                reg.write_text(json.dumps({"pid": os.getpid(), "mountpoint": self.mountpoint,
                                           "endpoint": self.ws.session.endpoint, "socket": self.socket_path,
                                           "started": time.time()}))
                log.info("mounted %s (viewer at %s)", self.mountpoint, self.ws.session.endpoint)
                ready(None)
                # pyfuse3's own worker limits (min_tasks=1, max_tasks=99): max_tasks 2 and 16 and
                # min_tasks 4 timed the same on a warm grep and find (tests/bench/bench_floor.py
                # --max-tasks); 1 would let a handler waiting for the viewer stall every request.
                await pyfuse3.main()
                log.info("file system loop ended; shutting down")
                if not self._exit_prepared:
                    # Unmounted from outside (slfs umount, fusermount3 -u): finish pending deletes
                    # and saves while the session still runs.
                    await self.before_exit()
                nursery.cancel_scope.cancel()
        finally:
            if not self._exit_prepared:
                # An unexpected exception ended the daemon: the session is gone, so what programs
                # wrote and did not close goes to the recovery folder (only SIGKILL skips this).
                log.error("the daemon is stopping unexpectedly; keeping unsaved files in the recovery folder")
                with trio.CancelScope(shield=True):
                    await self.writer.keep_unsaved(0, save=False)
            reg.unlink(missing_ok=True)
            paths.release_socket_path(self.socket_path)
            pyfuse3.close(unmount=not self._unmounted)
            # The kernel sends no forget for what it still holds at unmount: the unmount itself
            # releases those references. (Exactness is checked while mounted, after drop_caches.)
            log.info("unmounted %s; kernel references at unmount: %d (released by the unmount)",
                     self.mountpoint, self.ops.lookups.total())
            self.events.close()  # the event log's pending lines, written by its own thread

    async def _watch_signals(self) -> None:
        # The receiver stays open until the daemon ends: a signal while the first one's shutdown
        # runs must not kill the daemon with the default action before it has kept what it holds.
        # SIGINT/SIGTERM: unmount when the programs holding the mount let go (which they are told);
        # a second one detaches at once. SIGHUP (the terminal is gone: nobody to press Ctrl-C
        # again) detaches a busy mount lazily after the pending saves.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
            async with trio.open_nursery() as nursery:
                async for signum in signals:
                    name = signal.Signals(signum).name
                    self._signals += 1
                    if self._signals == 1:
                        log.info("%s received: unmounting %s", name, self.mountpoint)
                        self._stopping = trio.CancelScope()
                        nursery.start_soon(self._stop, self._stopping, signum == signal.SIGHUP)
                    elif self._signals == 2 and self._stopping is not None:
                        log.warning("%s received again: detaching %s now", name, self.mountpoint)
                        self._stopping.cancel()
                    else:
                        log.info("%s received: already unmounting %s", name, self.mountpoint)

    async def _stop(self, scope: trio.CancelScope, lazy_when_busy: bool) -> None:
        """The first stop signal: say at once who holds the mount, wait for the pending saves, then
        unmount once nobody holds it. `scope` is cancelled by a second signal: then detach at once."""
        with scope:
            holders = await self._say_holders()
            await self.before_exit()
            await self._unmount(wait_for_holders=not lazy_when_busy, shown=holders)
            return
        await self._detach_now()

    async def _say_holders(self, shown: list[Holder] | None = None) -> list[Holder]:
        holders = await trio.to_thread.run_sync(
            functools.partial(mount_holders, self.mountpoint, exclude=frozenset({os.getpid()})))
        if holders and holders != shown:
            log.warning("%s is in use by %s: the unmount waits until they close their files and leave it "
                        "(pending saves: %d); press Ctrl-C again (or send SIGTERM again) to detach it now",
                        self.mountpoint, ", ".join(map(str, holders)), self.writer.pending_saves)
        return holders

    async def _detach_now(self) -> None:
        """The second signal: what is unsaved goes to the recovery folder (said here, on the
        terminal), the mount is detached lazily (programs still in it get errors) and the daemon
        ends without waiting for them."""
        with trio.CancelScope(shield=True):
            self._exit_prepared = True
            before = self.writer.keeper.kept
            await self.writer.keep_unsaved(0, save=False)
            await self.ws.history.flush(5.0)
            kept = self.writer.keeper.kept - before
            if kept:
                log.warning("kept %d unsaved text(s) in the recovery folder %s (last: %s)", kept,
                            recovery_folder(), self.writer.keeper.last_recovery)
            elif self.writer.pending_saves:
                log.warning("%d save(s) were still under way; see the recovery folder %s",
                            self.writer.pending_saves, recovery_folder())
            res = await self._fusermount("-u", "-z")  # not blocking the loop: it may ask us about the root
            if res is None or res.returncode != 0:
                log.error("could not detach %s lazily (%s); try: fusermount3 -u -z %s", self.mountpoint,
                          "no fusermount3" if res is None else res.stderr.decode(errors="replace").strip(),
                          self.mountpoint)
            else:
                self._unmounted = True
                log.warning("detached %s lazily; programs that still use it now get errors", self.mountpoint)
        pyfuse3.terminate()

    async def _first_connection_wait(self, wait: float) -> None:
        """-o connect_wait (what `slfs open-uri` starts a mount with): a daemon a browser's URI
        started must not go on retrying a port no viewer of ours answers on; it unmounts and exits 1."""
        try:
            await self.ws.session.wait_connected(wait)
            return
        except trio.TooSlowError:
            pass
        why = (f"no viewer connected on {self.ws.session.endpoint} within {wait:g} s (-o connect_wait; "
               f"last state: {self.ws.state_detail}); unmounting {self.mountpoint}")
        log.error("%s", why)
        self.ws.note_error(why)
        self.exit_code = 1
        await self.before_exit()
        await self._unmount()

    async def _unmount(self, *, wait_for_holders: bool = False, shown: list[Holder] | None = None) -> None:
        # Unmount through the kernel while the loop still runs, so requests in flight finish and
        # the session ends in order. A busy mount: with `wait_for_holders`, tried again while the
        # holders are told (a process leaving a directory sends us nothing to wait on, so this
        # polls); without, detached lazily. `shown`: the holders already named.
        unseen = 0  # tries in a row that found the mount busy and no holder
        while True:
            res = await self._fusermount("-u")
            if res is None:
                break
            if res.returncode == 0:
                self._unmounted = True
                break
            why = res.stderr.decode(errors="replace").strip()
            if not wait_for_holders or "busy" not in why:
                log.warning("fusermount3 -u %s: %s", self.mountpoint, why)
                lazy = await self._fusermount("-u", "-z")
                if lazy is not None and lazy.returncode != 0:
                    log.warning("fusermount3 -u -z %s: %s", self.mountpoint,
                                lazy.stderr.decode(errors="replace").strip())
                self._unmounted = lazy is not None and lazy.returncode == 0
                break
            holders = await self._say_holders(shown)
            unseen = unseen + 1 if not holders else 0
            if unseen == 2:  # twice: once may be a holder that left just after the try
                log.warning("%s is busy, but no process this user may see holds it; press Ctrl-C again "
                            "(or send SIGTERM again) to detach it now", self.mountpoint)
            shown = holders
            await trio.sleep(HOLDERS_POLL)
        pyfuse3.terminate()

    async def _fusermount(self, *flags: str) -> subprocess.CompletedProcess[bytes] | None:
        try:
            return await trio.run_process(["fusermount3", *flags, self.mountpoint], check=False,
                                          capture_stdout=True, capture_stderr=True)
        except OSError:
            return None

    async def before_exit(self) -> None:
        """Wait (bounded) for pending saves and deletes, so nothing a program wrote is dropped."""
        self._exit_prepared = True
        writer = self.writer
        writer.hurry_deletes()
        if writer.pending_saves:
            log.info("waiting for %d pending save(s)", writer.pending_saves)
        if not await writer.wait_idle(self.options.shutdown_grace):
            log.error("%d save(s) still pending after %.0f s; unmounting anyway", writer.pending_saves,
                      self.options.shutdown_grace)
        await writer.keep_unsaved(self.options.shutdown_grace)
        if not await self.ws.history.flush(5.0):  # the versions seen last, written before the store closes
            log.error("history: versions still queued at unmount were not written")


def run_foreground(daemon: Daemon, ready_fd: int | None = None) -> int:
    def ready(error: str | None) -> None:
        if ready_fd is not None:
            try:
                os.write(ready_fd, (f"error: {error}" if error else "ok").encode() + b"\n")
                os.close(ready_fd)
            except OSError:
                pass

    try:
        trio.run(daemon.serve, ready)
    except MountError as exc:
        log.error("%s", exc)
        ready(str(exc))
        return 1
    except RuntimeError as exc:  # pyfuse3.init failures (permissions, no /dev/fuse)
        log.error("mount failed: %s", exc)
        ready(f"mount failed: {exc}")
        return 1
    finally:
        paths.release_socket_path(daemon.socket_path)  # also when the mount failed before serving
    return daemon.exit_code


def spawn_background(argv: list[str], mountpoint: str, timeout: float = 30.0) -> int:
    """Start `slfs mount -f` detached and return once it reports the mount live (or failed)."""
    log_dir = paths.ensure(paths.state_dir())
    log_file = log_dir / f"mount-{paths.mount_key(mountpoint)}.log"
    rfd, wfd = os.pipe()
    with open(log_file, "ab", opener=paths.private_opener) as logf:
        proc = subprocess.Popen(
            [sys.executable, "-m", "slfs", *argv, "--ready-fd", str(wfd)],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, pass_fds=(wfd,), start_new_session=True,
        )
    os.close(wfd)
    deadline = time.monotonic() + timeout
    buf = b""
    timed_out = False
    try:
        # poll, not a blocking read: a daemon that hangs before it answers must not hang us too.
        poller = select.poll()
        poller.register(rfd, select.POLLIN)
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not poller.poll(max(1, int(left * 1000))):
                continue  # the deadline is checked again
            chunk = os.read(rfd, 4096)
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(rfd)
    msg = buf.decode(errors="replace").strip()
    if msg == "ok":
        print(f"slfs: mounted {mountpoint} (pid {proc.pid}, log {log_file})")
        return 0
    if timed_out:
        # Whatever it is stuck on, it is not a mount we reported: stop it rather than leave it behind.
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
        print(f"slfs: the daemon (pid {proc.pid}) did not report within {timeout:g} s; stopped it "
              f"(log: {log_file})", file=sys.stderr)
        return 1
    if not msg:
        try:
            code: int | None = proc.wait(2)  # the pipe closes just before the exit status is there
        except subprocess.TimeoutExpired:
            code = None
        msg = f"daemon exited with status {code}" if code is not None else "no answer from the daemon"
    print(f"slfs: {msg.removeprefix('error: ')} (log: {log_file})", file=sys.stderr)
    return 1
