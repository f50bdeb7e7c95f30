"""The floor: slfs against a minimal pyfuse3 file system serving the same files (a script, not
collected by pytest):

    .venv/bin/python tests/bench/bench_floor.py [--quick] [--runs 5] [--pin S,C] [--max-tasks 2,16,4:16] [--also L=SRC]
                                                [--bare] [--model-floor]

One run, side by side: slfs (a `slfs mount -f` over the simulated viewer), the floor (this script
with `--serve-floor`: every directory and file in memory, the same kernel options as slfs -
pyfuse3.default_options, readdirplus, keep_cache on open, 60 s entry and attribute timeouts - and
handlers that do nothing but answer, flush included) and tmpfs, over the same 20,000 files
(1,000 objects x 20 items, copied out of the slfs mount). Each is timed warm (after a pass that
fills the caches) on `grep -r` and `find -type f`, best of --runs, interleaved in a new random order
each run so that machine noise hits all of them alike. Prints the times and the ratios slfs/floor and slfs/tmpfs,
and the CPU time the serving process (slfs's daemon, the floor) spent in its best run, which
other load on the machine disturbs less than the wall-clock time.

`--pin S,C` pins every serving process (all its threads) to CPU S and the timed commands to CPU C:
on a small machine the scheduler's placement of a server and its client moves these ratios by
10-20 % from one mount to the next, which pinning removes (the same placement for every file
system).

`--max-tasks 2,16,4:16` mounts slfs once more for each pyfuse3.main() worker limit given (MAX, or
MIN:MAX for min_tasks too; a wrapper sets it), timed in the same interleaved runs as the others, to
pick the setting; the floor runs pyfuse3.main()'s defaults. `--also LABEL=SRC` mounts the slfs of
another source tree alongside (a change being tried). `--bare` mounts one more slfs whose warm open,
flush and release are the floor's own handlers (no accounting, no checks): the ratio that slfs
still has then comes from its process (the rest of the daemon and its heap), not from its handlers.
`--model-floor` mounts one more floor whose process also holds slfs's live model (its services
built as the daemon builds them, connected to the same simulated viewer, every item's content
fetched) that no request touches: what merely holding a model and a session costs the floor.
Mount points and the slfs daemon's XDG dirs live under ~/.cache/slfs-bench/.
bench_floor_instructions.py counts, under callgrind, the instructions behind these times.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import random
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import bench_read as br

if TYPE_CHECKING:
    import trio

PY = sys.executable
PATTERN = "object 7 item 2$"
WRAPPER = (  # slfs with pyfuse3.main's worker limits set: argv[1] is MAX or MIN:MAX
    "import functools, sys, pyfuse3\n"
    "low, _, high = sys.argv.pop(1).rpartition(':')\n"
    "kw = {'max_tasks': int(high), **({'min_tasks': int(low)} if low else {})}\n"
    "pyfuse3.main = functools.partial(pyfuse3.main, **kw)\n"
    "from slfs.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
BARE = (  # slfs whose warm open, flush and release are the floor's own handlers: no accounting
    # wrapper, no epoch; an inode slfs once opened warm is answered at once (this is a measuring
    # device, not a correct file system: it misses every later change)
    "import sys, pyfuse3\n"
    "from slfs.fs import operations as o\n"
    "warm = set()\n"
    "slow_open, slow_flush, slow_release = o.Operations.open, o.Operations.flush, o.Operations.release\n"
    "async def open(self, inode, flags, ctx):\n"
    "    if inode in warm:\n"
    "        return pyfuse3.FileInfo(fh=o.BARE_FH + inode, keep_cache=True)\n"
    "    fi = await slow_open(self, inode, flags, ctx)\n"
    "    if fi.fh >= o.BARE_FH and fi.keep_cache:\n"
    "        warm.add(inode)\n"
    "    return fi\n"
    "async def flush(self, fh):\n"
    "    if fh < o.BARE_FH:\n"
    "        await slow_flush(self, fh)\n"
    "async def release(self, fh):\n"
    "    if fh < o.BARE_FH:\n"
    "        await slow_release(self, fh)\n"
    "o.Operations.open, o.Operations.flush, o.Operations.release = open, flush, release\n"
    "from slfs.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


# --- the floor file system ---------------------------------------------------------------------


def serve_floor(src: str, mnt: str, model: tuple[int, int] | None = None) -> None:
    """Serve a copy of the tree at `src` from memory at `mnt` until unmounted or SIGTERM. With
    `model` (port, items), the process also holds slfs's model of the simulated viewer at that port,
    connected and with every item's content fetched, which no request touches (--model-floor)."""
    import pyfuse3
    import trio

    timeout = 60.0
    attrs: dict[int, pyfuse3.EntryAttributes] = {}
    children: dict[int, dict[bytes, int]] = {}
    listing: dict[int, list[tuple[bytes, int]]] = {}
    data: dict[int, bytes] = {}
    now = time.time_ns()

    def attr(ino: int, mode: int, size: int) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino = ino
        a.st_mode = mode
        a.st_size = size
        a.st_nlink = 2 if stat.S_ISDIR(mode) else 1
        a.st_uid, a.st_gid = os.getuid(), os.getgid()
        a.st_blksize = 4096
        a.st_blocks = (size + 511) // 512
        a.st_atime_ns = a.st_mtime_ns = a.st_ctime_ns = now
        a.entry_timeout = a.attr_timeout = timeout
        return a

    next_ino = pyfuse3.ROOT_INODE

    def load(path: str, ino: int) -> None:
        nonlocal next_ino
        attrs[ino] = attr(ino, stat.S_IFDIR | 0o755, 0)
        kids: dict[bytes, int] = {}
        for de in sorted(os.scandir(path), key=lambda d: d.name):
            next_ino += 1
            child = next_ino
            kids[os.fsencode(de.name)] = child
            if de.is_dir(follow_symlinks=False):
                load(de.path, child)
            else:
                with open(de.path, "rb") as f:
                    data[child] = f.read()
                attrs[child] = attr(child, stat.S_IFREG | 0o644, len(data[child]))
        children[ino] = kids
        listing[ino] = sorted(kids.items())

    load(src, pyfuse3.ROOT_INODE)

    class Floor(pyfuse3.Operations):
        supports_dot_lookup = True
        enable_writeback_cache = False

        async def lookup(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
            ino = children.get(parent_inode, {}).get(name)
            if ino is None:
                raise pyfuse3.FUSEError(errno.ENOENT)
            return attrs[ino]

        async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
            pass

        async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
            return attrs[inode]

        async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
            s = pyfuse3.StatvfsData()
            s.f_bsize = s.f_frsize = 4096
            s.f_blocks = s.f_bfree = s.f_bavail = s.f_files = s.f_ffree = s.f_favail = 1 << 20
            s.f_namemax = 255
            return s

        async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
            return inode

        async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
            entries = listing[fh]
            for i in range(start_id, len(entries)):
                name, ino = entries[i]
                if not pyfuse3.readdir_reply(token, name, attrs[ino], i + 1):
                    return

        async def releasedir(self, fh: int) -> None:
            pass

        async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
            return pyfuse3.FileInfo(fh=inode, keep_cache=True)

        async def read(self, fh: int, off: int, size: int) -> bytes:
            return data[fh][off : off + size]

        async def flush(self, fh: int) -> None:
            pass

        async def release(self, fh: int) -> None:
            pass

        async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
            raise pyfuse3.FUSEError(errno.ENODATA)

    options = set(pyfuse3.default_options) | {"fsname=floor", "subtype=floor"}
    pyfuse3.init(Floor(), mnt, options)

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            async def on_signal() -> None:
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        pyfuse3.terminate()
                        return

            nursery.start_soon(on_signal)
            if model is not None:
                await hold_model(nursery, *model)
            print("ready", flush=True)
            await pyfuse3.main()
            nursery.cancel_scope.cancel()

    try:
        trio.run(run)
    finally:
        pyfuse3.close(unmount=True)


async def hold_model(nursery: trio.Nursery, port: int, items: int) -> None:
    """slfs's workspace and services, as the daemon builds them, connected to the viewer at `port`
    until it holds `items` items, each one's content fetched: the live model and session an slfs
    daemon keeps beside its handlers."""
    import trio

    from slfs.daemon import build_services
    from slfs.model.options import Options
    from slfs.world.tree import Item

    services = build_services(os.environ["SLFS_FLOOR_MODEL_MOUNT"], "127.0.0.1", port, Options(), event_log=False)
    HELD.append(services)
    await nursery.start(services.ws.run)
    if not await services.ws.wait_for_world(lambda: services.ws.tree.item_count >= items, 300):
        raise SystemExit(f"the floor's slfs model did not reach {items} items")
    with trio.fail_after(300):
        for node in list(services.ws.tree.nodes.values()):
            if type(node) is Item:
                await services.ws.content.read_content(node)


HELD: list[object] = []  # what hold_model keeps alive


@contextlib.contextmanager
def floor_mount(src: Path, mnt: Path, prefix: Sequence[str] = (), slow: int = 1,
                model: tuple[int, int] | None = None) -> Iterator[tuple[Path, int]]:
    """The floor serving a copy of `src` at `mnt`; `prefix` runs it under another program (valgrind),
    `slow` times slower (its timeouts scale); `model` (port, items) as for serve_floor."""
    mnt.mkdir(parents=True, exist_ok=True)
    argv = [*prefix, PY, __file__, "--serve-floor", str(src), str(mnt)]
    env = None
    if model is not None:
        argv += ["--model", str(model[0]), str(model[1])]
        state = mnt.parent / f"{mnt.name}-state"
        env = dict(os.environ, XDG_RUNTIME_DIR=str(state / "run"), XDG_STATE_HOME=str(state / "state"),
                   XDG_DATA_HOME=str(state / "data"), SLFS_FLOOR_MODEL_MOUNT=str(state / "mnt"))
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL if prefix else None, env=env)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != b"ready":
        raise SystemExit("the floor file system did not start")
    try:
        br.wait(lambda: br.mounted(mnt), 30 * slow, "floor mount live")
        yield mnt, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20 * slow)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if br.mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)


# --- slfs ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def slfs_mount(port: int, wd: Path, items: int, tasks: str | None,
               src: str | None = None, prefix: Sequence[str] = (), slow: int = 1,
               bare: bool = False) -> Iterator[tuple[Path, int]]:
    """`slfs mount -f` over the simulated viewer at `port`, connected with every item; `src` another
    source tree, `prefix` a program to run it under (valgrind), `slow` times slower, `bare` with
    the floor's handlers for warm opens (BARE)."""
    mnt = wd / "slfs"
    mnt.mkdir()
    env = dict(os.environ, XDG_RUNTIME_DIR=str(wd / "run"), XDG_STATE_HOME=str(wd / "state"),
               XDG_DATA_HOME=str(wd / "data"))
    if src is not None:  # another slfs source tree (a variant being tried)
        env["PYTHONPATH"] = src
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    head = [PY, "-c", BARE] if bare else [PY, "-m", "slfs"] if tasks is None else [PY, "-c", WRAPPER, tasks]
    log = open(wd / "mount.log", "ab")  # noqa: SIM115
    proc = subprocess.Popen([*prefix, *head, "mount", "-f", "--port", str(port), str(mnt)], stdout=log, stderr=log,
                            env=env, cwd=src)
    try:
        br.wait(lambda: br.mounted(mnt), 30 * slow, "slfs mount live")

        def ready() -> bool:
            try:
                s = br.status(mnt)
            except OSError:
                return False
            return s.get("state") == "connected" and int(s.get("items", -1)) == items

        br.wait(ready, 300 * slow, "connected with every item")
        yield mnt, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30 * slow)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)
            proc.kill()
            proc.wait()
        if br.mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)
        log.close()
        if "Traceback" in (wd / "mount.log").read_text(errors="replace"):
            print(f"   !! the slfs daemon logged a traceback, see {wd / 'mount.log'}")


# --- timing --------------------------------------------------------------------------------------

COMMANDS = {"grep -r": ["grep", "-r", PATTERN], "find -type f": ["find", "{}", "-type", "f"]}


def argv_for(name: str, root: Path) -> list[str]:
    cmd = COMMANDS[name]
    return [a.replace("{}", str(root)) for a in cmd] if "{}" in cmd else [*cmd, str(root)]


def check_same(roots: dict[str, Path]) -> None:
    """Every file system serves the same tree (names and what grep finds)."""
    outputs = {}
    for label, root in roots.items():
        res = subprocess.run(argv_for("grep -r", root), capture_output=True, check=False)
        found = sorted(line.split(b":", 1)[0].decode()[len(str(root)):] for line in res.stdout.splitlines())
        names = subprocess.run(argv_for("find -type f", root), capture_output=True, check=True).stdout
        outputs[label] = (found, sorted(p[len(str(root)):] for p in names.decode().splitlines()))
    first = next(iter(outputs.values()))
    for label, out in outputs.items():
        if out != first:
            raise SystemExit(f"{label} serves a different tree than {next(iter(outputs))}")


TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int | None) -> float:
    """utime + stime of a process (its threads included), in seconds; 0 for None (tmpfs)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


Times = dict[tuple[str, str], list[tuple[float, float]]]


def pin(roots: dict[str, tuple[Path, int | None]], spec: str) -> None:
    """--pin S,C: every server (all its threads) on CPU S, this process and its children on C."""
    server, client = (int(c) for c in spec.split(","))
    for _root, pid in roots.values():
        if pid is not None:
            subprocess.run(["taskset", "-a", "-p", "-c", str(server), str(pid)], capture_output=True, check=True)
    os.sched_setaffinity(0, {client})


def time_all(roots: dict[str, tuple[Path, int | None]], runs: int) -> Times:
    """Per (file system, command), (wall seconds, server CPU seconds) of every run, in run order."""
    times: Times = {}
    for name in COMMANDS:
        for root, _pid in roots.values():  # warm every cache first
            subprocess.run(argv_for(name, root), capture_output=True, check=False)
        order = list(roots.items())
        for _ in range(runs):
            random.shuffle(order)  # no file system always runs first, or right after the same one
            for label, (root, pid) in order:
                cpu = cpu_s(pid)
                t, _res = br.timed(argv_for(name, root))
                times.setdefault((label, name), []).append((t, cpu_s(pid) - cpu))
    return times


def report(times: Times, labels: list[str]) -> None:
    """Per command and file system: best wall time and server CPU; for slfs the ratio to the floor
    of the best times, and the median of the ratios within each run (the two ran a few seconds
    apart, so a slow spell of the machine weighs on both)."""
    for name in COMMANDS:
        floor_runs = times[("floor", name)]
        floor, floor_cpu = min(w for w, _ in floor_runs), min(c for _, c in floor_runs)
        tmpfs = min(w for w, _ in times[("tmpfs", name)])
        print(f"   {name}:")
        for label in labels:
            runs = times[(label, name)]
            wall, cpu = min(w for w, _ in runs), min(c for _, c in runs)
            line = f"      {label:<18} {wall:7.3f} s"
            if label != "tmpfs":
                line += f"  (server CPU {cpu:6.2f} s)"
            if label not in ("floor", "tmpfs"):
                paired = statistics.median(w / f for (w, _), (f, _) in zip(runs, floor_runs, strict=True))
                paired_cpu = statistics.median(c / fc for (_, c), (_, fc) in zip(runs, floor_runs, strict=True)
                                               if fc)
                cpu_ratio = f"{cpu / floor_cpu:.2f}x" if floor_cpu else "-"
                line += (f"  /floor: best {wall / floor:.2f}x (CPU {cpu_ratio}), median per run {paired:.2f}x "
                         f"(CPU {paired_cpu:.2f}x)  /tmpfs {wall / tmpfs:.0f}x")
            elif label == "floor":
                line += f"  floor/tmpfs {floor / tmpfs:.0f}x"
            print(line)


def warm_ratios(runs: int, objects: int = 1000, items: int = 20) -> dict[str, tuple[float, float]]:
    """slfs against the floor over objects x items files, unpinned (as a user runs it), interleaved
    as in main: per command, (the median of the per-run ratios slfs/floor, best/best)."""
    wd = br.workdir("floor")
    shm = Path(tempfile.mkdtemp(prefix="slfs-floor-", dir="/dev/shm"))
    try:
        with br.sim_process(br.many_items_world(objects, items), 0, wd) as port, contextlib.ExitStack() as stack:
            sub = wd / "default"
            sub.mkdir()
            roots: dict[str, tuple[Path, int | None]] = {
                "slfs": stack.enter_context(slfs_mount(port, sub, objects * items, None))}
            subprocess.run(argv_for("grep -r", roots["slfs"][0]), capture_output=True, check=False)  # fetch all
            br.copy_tree(roots["slfs"][0], shm)
            roots["floor"] = stack.enter_context(floor_mount(shm, wd / "floor"))
            roots["tmpfs"] = (shm, None)
            check_same({label: root for label, (root, _pid) in roots.items()})
            times = time_all(roots, runs)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(wd, ignore_errors=True)
    out = {}
    for name in COMMANDS:
        ours, floor = times[("slfs", name)], times[("floor", name)]
        paired = statistics.median(w / f for (w, _), (f, _) in zip(ours, floor, strict=True))
        out[name] = (paired, min(w for w, _ in ours) / min(f for f, _ in floor))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="2,000 files (a smoke run)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--max-tasks", default="",
                    help="comma-separated pyfuse3.main() worker limits, MAX or MIN:MAX: an slfs mount "
                         "each, timed alongside the one that runs slfs/daemon.py's own setting")
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=SRC",
                    help="also mount the slfs of source tree SRC (a variant being tried), timed alongside")
    ap.add_argument("--pin", metavar="S,C", help="servers on CPU S, the timed commands on CPU C")
    ap.add_argument("--bare", action="store_true",
                    help="also mount slfs with the floor's own handlers for warm opens, flushes and releases "
                         "(no accounting): what is left of the ratio is not slfs's handlers' doing")
    ap.add_argument("--model-floor", action="store_true",
                    help="also mount the floor with slfs's live model held beside it (connected, every "
                         "item fetched, never touched by a request): what holding a model costs")
    ap.add_argument("--serve-floor", nargs=2, metavar=("SRC", "MNT"), help=argparse.SUPPRESS)
    ap.add_argument("--model", nargs=2, type=int, metavar=("PORT", "ITEMS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_floor:
        src, mnt = args.serve_floor
        serve_floor(src, mnt, model=(args.model[0], args.model[1]) if args.model else None)
        return 0
    objects, items = (100, 20) if args.quick else (1000, 20)
    total = objects * items
    settings: list[str | None] = [None, *(v.strip() for v in args.max_tasks.split(",") if v.strip())]
    print(f"floor: warm grep -r and find -type f over {objects} objects x {items} items ({total} files), "
          f"best of {args.runs}, interleaved")
    wd = br.workdir("floor")
    shm = Path(tempfile.mkdtemp(prefix="slfs-floor-", dir="/dev/shm"))
    try:
        with br.sim_process(br.many_items_world(objects, items), 0, wd) as port, contextlib.ExitStack() as stack:
            roots: dict[str, tuple[Path, int | None]] = {}
            for setting in settings:
                label = "slfs" if setting is None else f"slfs tasks={setting}"
                sub = wd / ("default" if setting is None else f"tasks-{setting.replace(':', '-')}")
                sub.mkdir()
                mnt, pid = stack.enter_context(slfs_mount(port, sub, total, setting))
                t0 = time.perf_counter()
                res = subprocess.run(argv_for("grep -r", mnt), capture_output=True, check=False)
                print(f"   {label}: cold grep -r (fetches every item) {time.perf_counter() - t0:.1f} s, "
                      f"exit {res.returncode}")
                roots[label] = (mnt, pid)
            if args.bare:
                sub = wd / "bare"
                sub.mkdir()
                mnt, pid = stack.enter_context(slfs_mount(port, sub, total, None, bare=True))
                subprocess.run(argv_for("grep -r", mnt), capture_output=True, check=False)
                roots["slfs bare handlers"] = (mnt, pid)
            for also in args.also:
                label, _, src = also.partition("=")
                sub = wd / f"also-{len(roots)}"
                sub.mkdir()
                mnt, pid = stack.enter_context(slfs_mount(port, sub, total, None, os.path.abspath(src)))
                subprocess.run(argv_for("grep -r", mnt), capture_output=True, check=False)
                roots[label] = (mnt, pid)
            br.copy_tree(roots["slfs"][0], shm)
            roots["floor"] = stack.enter_context(floor_mount(shm, wd / "floor"))
            if args.model_floor:
                roots["floor + slfs model"] = stack.enter_context(
                    floor_mount(shm, wd / "floor-model", model=(port, total)))
            roots["tmpfs"] = (shm, None)
            check_same({label: root for label, (root, _pid) in roots.items()})
            if args.pin:
                pin(roots, args.pin)
                print(f"   pinned: servers on CPU {args.pin.split(',')[0]}, commands on CPU {args.pin.split(',')[1]}")
            report(time_all(roots, args.runs), list(roots))
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(wd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
