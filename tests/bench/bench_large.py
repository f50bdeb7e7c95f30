"""Large inventories, measured (a script, not collected by pytest):

    .venv/bin/python tests/bench/bench_large.py [--items 100000] [--viewer-version 1|2]
                                                [--publish-items 1000] [--profile]
    .venv/bin/python tests/bench/bench_large.py --harness-world [--rounds 3] [--publish-runs 5] [--profile]

The simulated viewer runs in this process (its world built here: --items published items, 100 per
object, plus one unpublished object of --publish-items items); the mount is a `slfs mount -f`
subprocess. Measured:

1. load: from the viewer's `object.list` answer (its text ready to send) until the mount is usable
   (the root lists every object and one object's directory lists); also what the viewer spent
   building the answer and the daemon's own object.list latency (`slfs stats`: send to answer
   handled, the tree built);
2. publish: from the viewer's `object.publish` of the --publish-items object until its directory
   resolves and lists every item (best and median of several);
3. reconnect: the viewer drops the connection; the time until slfs is connected again with the
   mount answering, the longest time the mount did not answer in between (probed from a process of
   its own, and from this one, whose threads also wait on the simulated viewer's GIL), when the last kernel
   invalidation went out, and how many were sent (entry and inode; counted by the fs layer).

With --profile, the daemon runs under `py-spy record` (pip install py-spy) during the load and the
reconnect, and the samples are summed by where they fall (WebSocket framing, JSON, decoding into
attrs, building the tree, kernel invalidations, the FUSE loop); an in-process breakdown of the same
stages over the same answer text follows (cProfile-free, plain timers; needs no mount).
Targets (issue 9; not asserted): usable within 2 s of the answer, a 1,000-item publish applied
within 50 ms, no invalidations for unchanged items on reconnect.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_read import rss_kib
from support.mount import Mount, free_port, new_mountpoint
from support.worlds import item, many_items_world

from slfs.client.connection import ControlClient
from slfs.sim.world import world_from_json

BIG_ID = "b16b16b1-0000-4000-8000-000000000000"
BIG_NAME = "Big Object"


def build_world(items: int, publish_items: int) -> dict[str, Any]:
    data = many_items_world(max(1, items // 100), 100 if items >= 100 else items, size=60)
    inv = [item(f"b16b16b1-{i:04x}-4000-8000-000000000003", f"Big {i}", content=f"big {i}\n")
           for i in range(publish_items)]
    data["objects"].append({"object_id": BIG_ID, "object_name": BIG_NAME, "published": False, "inventory": inv})
    return data


class Marks:
    """Timestamps the simulated viewer's hooks record (time.perf_counter())."""

    def __init__(self) -> None:
        self.list_request: list[float] = []
        self.list_answer: list[float] = []
        self.list_text: str = ""
        self.list_result: Any = None


def hook(sim: Any, marks: Marks) -> None:
    """Record when object.list is asked and when its answer's text is ready to send."""
    handler = sim._handlers["object.list"]

    async def object_list(params: Any, ctx: Any) -> Any:
        marks.list_request.append(time.perf_counter())
        result = await handler(params, ctx)
        marks.list_result = result
        return result

    sim._handlers["object.list"] = object_list
    result_text = sim._result_text

    def text_of(rid: Any, result: Any) -> str:
        text = str(result_text(rid, result))
        if result is marks.list_result and result is not None:
            marks.list_answer.append(time.perf_counter())
            marks.list_text = text
        return text

    sim._result_text = text_of


def poll(pred: Any, timeout: float, interval: float = 0.001) -> float:
    """Call pred() until it is true; the time.perf_counter() it first was. Blocking (a thread)."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        try:
            if pred():
                return time.perf_counter()
        except OSError:
            pass
        time.sleep(interval)
    raise TimeoutError(f"not within {timeout} s")


# A listing of argv[1] every 10 ms until the file argv[2] exists; prints the gaps between listings.
PROBE = """
import json, os, sys, time
last = time.perf_counter()
gaps = []
while not os.path.exists(sys.argv[2]):
    try:
        os.listdir(sys.argv[1])
    except OSError:
        pass
    now = time.perf_counter()
    gaps.append(now - last)
    last = now
    time.sleep(0.01)
print(json.dumps(gaps))
"""

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds: steadier than wall time when other
    work shares the machine."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def fmt(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


class Spy:
    """py-spy record on the daemon for one phase (raw collapsed stacks)."""

    def __init__(self, pid: int, out: Path) -> None:
        exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        self.out = out
        self.pid = pid
        self.proc = subprocess.Popen([exe, "record", "--pid", str(pid), "--rate", "250", "--format", "raw",
                                      "--threads", "--output", str(out), "--nonblocking"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)  # attached

    def stop(self) -> dict[str, int]:
        self.proc.send_signal(2)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return parse_raw(self.out, self.pid)

    def stop_raw(self) -> Path:
        self.stop()
        return self.out


# (label, substrings of a py-spy frame "function (file:line)"; py-spy shortens some paths to the
# file name, so files are matched by name). The innermost frame that matches decides.
CATEGORIES = [
    ("trio loop, idle", ("get_events (", "_io_epoll.py:")),
    ("kernel invalidations", ("invalidate_inode", "invalidate_entry")),
    ("WebSocket framing (wsproto, trio_websocket)", ("wsproto", "trio_websocket")),
    ("JSON parse", ("json/decoder.py:", "json/__init__.py:", "decoder.py:")),
    ("JSON-RPC message", ("jsonrpc.py:",)),
    ("decoding into attrs (codec)", ("codec.py:", "cattrs", "types.py:", "attrs generated", "attr/")),
    ("tree: names.resolve", ("names.py:", "naming_rules.py:")),
    ("tree: building and relayout", ("tree.py:", "object_records.py:", "inventories.py:", "node_registry.py:",
                                     "layout.py:", "listed.py:", "tree_reports.py:")),
    ("workspace, events", ("workspace.py:", "content.py:", "calls.py:", "events.py:", "syntax.py:")),
    ("FUSE handlers", ("operations.py:", "files.py:", "attributes.py:", "control.py:", "dirs.py:", "readdir.py:",
                       "xattrs.py:", "guarded.py:")),
    ("session", ("session.py:",)),
    ("trio scheduling, threads", ("trio/",)),
]
# Anything under these frames counts for this label, whatever it runs (trio's thread machinery).
WHOLE_STACK = ("kernel invalidations", ("invalidator.py:",))


def parse_raw(path: Path, main_tid: int) -> dict[str, int]:
    """py-spy raw output with --threads: `thread (TID);frame;frame;... count` lines (outermost
    first) -> samples by category. The trio thread's (the main thread's) samples are classified;
    of the worker threads only those inside pyfuse3.invalidate_inode count (the rest wait)."""
    out: collections.Counter[str] = collections.Counter()
    if not path.exists():
        return {}
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = stack.split(";")
        if frames and frames[0].startswith("thread (") and not frames[0].startswith(f"thread ({main_tid})"):
            if "_invalidate_inodes (" in stack:
                out["kernel invalidations (worker threads)"] += int(n)
            continue
        label = "other"
        if any(k in stack for k in WHOLE_STACK[1]):  # the invalidator's thread round trips
            out[WHOLE_STACK[0]] += int(n)
            continue
        for frame in reversed(frames):
            hit = next((name for name, keys in CATEGORIES if any(k in frame for k in keys)), None)
            if hit is not None:
                label = hit
                break
        out[label] += int(n)
    return dict(out)


def show_profile(title: str, samples: dict[str, int]) -> None:
    worker = "kernel invalidations (worker threads)"
    total = sum(v for k, v in samples.items() if k != worker)
    if not total:
        print(f"   profile of {title}: no samples (py-spy not installed or not permitted?)")
        return
    busy = {k: v for k, v in samples.items() if k != "trio loop, idle"}
    print(f"   profile of {title} (py-spy, the trio thread: {total} samples at 250 Hz, {total / 250:.1f} s):")
    for label, n in sorted(busy.items(), key=lambda kv: -kv[1]):
        print(f"      {label:<46} {n / 250:6.2f} s  {100 * n / total:5.1f} %")
    idle = samples.get("trio loop, idle", 0)
    print(f"      {'trio loop, idle':<46} {idle / 250:6.2f} s  {100 * idle / total:5.1f} %")


def show_top(path: Path, main_tid: int, rows: int = 22) -> None:
    """Busy samples of every thread (the decode runs in a worker): by own frame, and the slfs
    frames by cumulative time."""
    own: collections.Counter[str] = collections.Counter()
    cum: collections.Counter[str] = collections.Counter()
    for line in path.read_text(errors="replace").splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit() or "get_events (" in stack or "_io_epoll" in stack or "wait (threading" in stack:
            continue
        frames = stack.split(";")[1:]
        if not frames:
            continue
        own[frames[-1]] += int(n)
        for f in set(frames):
            cum[f] += int(n)
    print(f"   py-spy, every thread: {sum(own.values()) / 250:.2f} s busy; by own time:")
    for f, n in own.most_common(rows):
        print(f"      {n / 250:5.2f} s  {f[:110]}")
    print("   slfs frames by cumulative time:")
    for f, n in [(f, n) for f, n in cum.most_common(200) if "slfs/" in f][:rows]:
        print(f"      {n / 250:5.2f} s  {f[:110]}")


# --- in-process breakdown --------------------------------------------------------------------------


def breakdown(text: str, viewer_version: int) -> None:
    """The stages a daemon runs on the object.list answer, timed one by one over the same text."""
    from wsproto.connection import Connection, ConnectionType
    from wsproto.events import TextMessage

    from slfs.protocol.jsonrpc import parse_message
    from slfs.protocol.types import ObjectListResponse
    from slfs.session.session import ViewerSession
    from slfs.world.tree import Tree

    print(f"   in-process stages over the same answer ({len(text.encode()) / 1e6:.1f} MB):")

    # WebSocket framing as trio_websocket reads it: wsproto fed 4 KiB at a time (trio_websocket's
    # default receive size), and 1 MiB for comparison; parts joined into one message.
    wire = Connection(ConnectionType.SERVER).send(TextMessage(data=text))
    for chunk in (4096, 1 << 20):
        conn = Connection(ConnectionType.CLIENT)
        parts: list[str] = []
        t = time.perf_counter()
        for i in range(0, len(wire), chunk):
            conn.receive_data(wire[i : i + chunk])
            for ev in conn.events():
                if isinstance(ev, TextMessage):
                    parts.append(ev.data)
        joined = "".join(parts)
        elapsed = time.perf_counter() - t
        assert joined == text
        print(f"      wsproto, {chunk // 1024:>4} KiB reads:    {fmt(elapsed):>8}  ({-(-len(wire) // chunk)} reads)")

    t = time.perf_counter()
    json.loads(text)
    print(f"      json.loads:                 {fmt(time.perf_counter() - t):>8}")
    t = time.perf_counter()
    msg = parse_message(text)
    print(f"      parse_message (JSON-RPC):   {fmt(time.perf_counter() - t):>8}")
    session = ViewerSession(None, "127.0.0.1", 1)  # type: ignore[arg-type]
    t = time.perf_counter()
    objects = session.decode(ObjectListResponse, msg.result, "object.list result").objects  # type: ignore[union-attr]
    print(f"      decode into attrs:          {fmt(time.perf_counter() - t):>8}  ({len(objects)} objects)")
    counts: collections.Counter[str] = collections.Counter()
    tree = Tree(on_invalidate=lambda inv: counts.update([type(inv).__name__]))
    t = time.perf_counter()
    tree.replace_all(objects)
    print(f"      Tree.replace_all (first):   {fmt(time.perf_counter() - t):>8}  "
          f"({tree.item_count} items; invalidations {dict(counts) or 'none'})")
    counts.clear()
    again = session.decode(ObjectListResponse, parse_message(text).result, "object.list result").objects  # type: ignore[union-attr]
    t = time.perf_counter()
    tree.replace_all(again)
    print(f"      Tree.replace_all (same, as on reconnect): {fmt(time.perf_counter() - t):>8}  "
          f"(invalidations {dict(counts) or 'none'}; viewer {viewer_version})")

    # Where, by function: cProfile over decoding and building a fresh tree (cProfile's own overhead
    # inflates the total; the shares are what to read).
    import cProfile
    import pstats

    prof = cProfile.Profile()
    result = parse_message(text).result  # type: ignore[union-attr]
    prof.enable()
    decoded = session.decode(ObjectListResponse, result, "object.list result").objects
    Tree().replace_all(decoded)
    prof.disable()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # type: ignore[attr-defined]
    print("   cProfile of decode + Tree.replace_all, top functions by own time:")
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:14]  # type: ignore[attr-defined]
    for (file, line, func), (_cc, calls, own, _cum, _callers) in rows:
        where = "/".join(Path(file).parts[-2:]) if file.startswith("/") else file
        print(f"      {100 * own / total:5.1f} %  {calls:>9} calls  {where}:{line} {func}")


# --- the run ---------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> None:
    t = time.perf_counter()
    data = build_world(args.items, args.publish_items)
    world = world_from_json(data)
    print(f"large inventories: {args.items} published items ({len(data['objects']) - 1} objects), viewer "
          f"{args.viewer_version}; world built in {time.perf_counter() - t:.1f} s")
    tmp = Path(tempfile.mkdtemp(prefix="slfs-bench-large-"))
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / "run"), XDG_STATE_HOME=str(tmp / "state"),
               XDG_DATA_HOME=str(tmp / "data"), PYTHONUNBUFFERED="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    (tmp / "logs").mkdir()
    marks = Marks()
    nobjects = len(data["objects"]) - 1
    first = data["objects"][0]["object_name"]
    async with trio.open_nursery() as nursery:
        m = Mount(nursery, None, new_mountpoint(), free_port(), env, [], True, tmp / "logs",
                  viewer_version=args.viewer_version)
        try:
            sim = await m.start_sim(world, publish_delay=0, apply_delay=0)
            hook(sim, marks)
            mnt = m.mnt

            def usable() -> bool:
                return len(os.listdir(mnt)) >= nobjects and len(os.listdir(mnt / first)) > 0

            # 1. load
            await m.start_daemon(wait_state=None)
            spy = Spy(m.pid, tmp / "load.raw") if args.profile else None
            cpu0 = cpu_s(m.pid)
            t_usable = await trio.to_thread.run_sync(poll, usable, 600)
            load_cpu = cpu_s(m.pid) - cpu0
            load_profile = spy.stop() if spy is not None else {}
            await m.wait_live("connected", timeout=60)
            sock = json.loads(next((tmp / "run" / "slfs" / "mounts").glob("*.json")).read_text())["socket"]
            client = await trio.to_thread.run_sync(ControlClient, sock)
            stats = await trio.to_thread.run_sync(client.request, "stats")
            answer, request = marks.list_answer[0], marks.list_request[0]
            print("1. load")
            print(f"   viewer built the object.list answer in {fmt(answer - request)} "
                  f"({len(marks.list_text.encode()) / 1e6:.1f} MB)")
            print(f"   usable {fmt(t_usable - answer)} after the answer (target 2 s); the daemon's CPU time from "
                  f"its start to usable: {fmt(load_cpu)}")
            ol = stats["rpc"]["object.list"]
            print(f"   daemon's object.list call: {fmt(ol['max_us'] / 1e6)} from its request to the tree built "
                  f"(stats); invalidations sent {stats['invalidations']}")
            if args.profile:
                show_profile("the load", load_profile)

            # 2. publish
            print(f"2. publish of a {args.publish_items}-item object")
            big = mnt / BIG_NAME

            def resolved() -> bool:
                return len(os.listdir(big)) >= args.publish_items

            times = []
            for _ in range(args.publish_runs):
                done = threading.Event()

                async def watch(box: list[float], done: threading.Event = done) -> None:
                    box.append(await trio.to_thread.run_sync(poll, resolved, 60))
                    done.set()

                box: list[float] = []
                async with trio.open_nursery() as inner:
                    inner.start_soon(watch, box)
                    await trio.sleep(0.05)  # the watcher polls
                    t0 = time.perf_counter()
                    await sim.publish(BIG_ID)
                times.append(box[0] - t0)
                await sim.unpublish(BIG_ID)
                await trio.to_thread.run_sync(poll, lambda: not big.exists(), 30)
            print(f"   applied (directory lists every item) {fmt(min(times))} best, "
                  f"{fmt(statistics.median(times))} median of {len(times)} (target 50 ms)")

            # 3. reconnect
            print(f"3. reconnect with {args.items} items")
            before = (await trio.to_thread.run_sync(client.request, "stats"))["invalidations"]
            gaps: list[float] = []
            stop = threading.Event()

            def prober() -> None:
                # A request the kernel cannot answer from its caches: a listing of the first object.
                last = time.perf_counter()
                while not stop.is_set():
                    try:
                        os.listdir(mnt / first)
                    except OSError:
                        pass
                    now = time.perf_counter()
                    gaps.append(now - last)
                    last = now
                    time.sleep(0.01)

            spy = Spy(m.pid, tmp / "reconnect.raw") if args.profile else None
            probe = threading.Thread(target=prober, daemon=True)
            probe.start()
            # The same probe from a process of its own: the bench process's threads wait whenever the
            # simulated viewer holds the GIL (its json.dumps of the 20 MB answer, a third of a second).
            stop_file = tmp / "probe.stop"
            probe_proc = subprocess.Popen([sys.executable, "-c", PROBE, str(mnt / first), str(stop_file)],
                                          stdout=subprocess.PIPE, text=True)
            answering = threading.Event()
            moves: list[float] = []

            def watch_invalidations() -> None:
                """Every time the count of invalidations sent is seen to move, until it has not moved
                for 1 s after the mount answers again."""
                total = sum(before.values())
                own = ControlClient(sock)  # a client is not for two threads at once
                while True:
                    now = sum(own.request("stats")["invalidations"].values())
                    t = time.perf_counter()
                    if now != total:
                        moves.append(t)
                        total = now
                    elif answering.is_set() and t - max([*moves, t_answering[0]]) > 1:
                        own.close()
                        return
                    time.sleep(0.02)

            t_answering: list[float] = []
            watcher = threading.Thread(target=watch_invalidations, daemon=True)
            cpu0 = cpu_s(m.pid)
            t0 = time.perf_counter()
            await sim.disconnect_all()
            watcher.start()
            await trio.sleep(0.05)

            def connected_again() -> bool:
                return bool(client.request("status").get("state") == "connected")

            t_connected = await trio.to_thread.run_sync(poll, connected_again, 120, 0.01)
            t_listing = await trio.to_thread.run_sync(poll, usable, 120)
            reconnect_cpu = cpu_s(m.pid) - cpu0

            t_answering.append(t_listing)
            answering.set()
            await trio.to_thread.run_sync(watcher.join)
            t_first, t_last = (moves[0], moves[-1]) if moves else (0.0, 0.0)
            stop.set()
            probe.join()
            stop_file.touch()
            own_gaps = json.loads(probe_proc.communicate(timeout=30)[0])
            reconnect_profile = spy.stop() if spy is not None else {}
            after = (await trio.to_thread.run_sync(client.request, "stats"))["invalidations"]
            sent = {k: after[k] - before.get(k, 0) for k in after}
            print(f"   connected again {fmt(t_connected - t0)} after the drop, the mount listing "
                  f"{fmt(t_listing - t0)} (daemon CPU {fmt(reconnect_cpu)}); longest the mount did not answer: "
                  f"{fmt(max(own_gaps))} (a probe in a process of its own; {fmt(max(gaps))} as the bench process "
                  "saw it)")
            span = (f"counted (as the invalidator takes them) from {fmt(t_first - t0)} to {fmt(t_last - t0)} "
                    "after the drop" if t_first else "none")
            print(f"   kernel invalidations: {sent} (target: none for unchanged items); {span}")
            if args.profile:
                show_profile("the reconnect", reconnect_profile)
            await trio.to_thread.run_sync(client.close)
            m.assert_clean_log()
        finally:
            await m.stop_daemon()
            m.stop_sim()
            nursery.cancel_scope.cancel()
    if args.profile and marks.list_text:
        breakdown(marks.list_text, args.viewer_version)
        print(f"   py-spy samples (raw, collapsed stacks) kept in {tmp}/*.raw")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


# --- the outside harness's world (issue 23) ---------------------------------------------------------


PERMS = {"owner": 0x7FFFFFFF, "next_owner": 0x82000}


def harness_object(o: int, items: int) -> dict[str, Any]:
    """One object as the outside harness sends it: every item with item_id, name, type,
    subtype/vm (scripts), running, permissions {owner, next_owner}, description and creator_id;
    the object with object_description, region, owner_id, permissions and can_save_back."""
    inv = []
    for i in range(items):
        entry: dict[str, Any] = {"item_id": f"{o:08x}-{i:04x}-4000-8000-00000000000a", "name": f"Item {i}",
                                 "description": f"item {i} of object {o}",
                                 "creator_id": f"{i:08x}-0000-4000-8000-00000000000c", "permissions": PERMS}
        if i % 2:
            entry.update(type="script", subtype=0, vm="mono", running=True)
        else:
            entry.update(type="notecard")
        inv.append(entry)
    return {"object_id": f"{o:08x}-ffff-4000-8000-00000000000b", "object_name": f"Object {o}",
            "object_description": "a benchmark object", "region": "Bench Region",
            "owner_id": "00000000-0000-4000-8000-000000000099", "permissions": PERMS,
            "can_save_back": True, "inventory": inv}


def harness_answer(objects: int = 2000, items: int = 50) -> dict[str, Any]:
    """The object.list result the outside harness answers with: `objects` harness objects of
    `items` items each, all in one message."""
    return {"objects": [harness_object(o, items) for o in range(objects)]}


def last_item_name(obj: dict[str, Any]) -> str:
    last = obj["inventory"][-1]
    return last["name"] + (".lsl" if last["type"] == "script" else "")


def harness_sim_world(publish_items: int) -> dict[str, Any]:
    """The simulated viewer's own world in the harness mode: one small object (its object.list
    answer is replaced) and, unpublished, the harness object it publishes, with every item's text
    (a stat through the mount fetches it: the size must be exact)."""
    data = build_world(1, 0)
    big = harness_object(0xB16, publish_items)
    for i, entry in enumerate(big["inventory"]):
        entry["content"] = f"default {{ state_entry() {{ llOwnerSay(\"{i}\"); }} }}\n" \
            if entry["type"] == "script" else f"notecard {i}\n"
    data["objects"].append({**big, "published": False})
    return data


async def harness_publishes(sim: Any, mnt: Path, runs: int, items: int) -> list[float]:
    """Publish the harness object of `items` items `runs` times (unpublished in between): each
    time, from its object.publish frame written to the socket until `os.stat` of its last item
    through the mount succeeds (polled from a thread of this process, every 0.2 ms). The stat
    looks the item up, which fetches its text (its size is exact), as the outside harness's does."""
    obj = harness_object(0xB16, items)
    path = mnt / obj["object_name"] / last_item_name(obj)

    def stat_ok() -> bool:
        os.stat(path)
        return True

    times = []
    for _ in range(runs):
        ready = threading.Event()
        box: list[float] = []

        def watch(ready: threading.Event = ready, box: list[float] = box) -> None:
            ready.set()
            box.append(poll(stat_ok, 60, 0.0002))

        async with trio.open_nursery() as inner:
            inner.start_soon(trio.to_thread.run_sync, watch)
            await trio.to_thread.run_sync(ready.wait)
            await sim.publish(obj["object_id"])  # returns once the frame is written
            t0 = time.perf_counter()
        times.append(box[0] - t0)
        await sim.unpublish(obj["object_id"])
        await trio.to_thread.run_sync(poll, lambda: not path.parent.exists(), 30)
    return times


def log_time(log: str, needle: str) -> float | None:
    """time.time() of the first daemon log line holding `needle` (its timestamp, ms resolution)."""
    for line in log.splitlines():
        if needle in line:
            stamp = line[:23]  # 2026-12-03 12:07:41,785
            try:
                return time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S")) + int(stamp[20:23]) / 1000
            except ValueError:
                return None
    return None


@attrs.frozen
class HarnessRound:
    ready_s: float  # the answer (ready to send) -> the daemon's "session ready" log line
    root_s: float  # the answer -> the first listing of the root that holds every object
    cpu_s: float  # the daemon's CPU time from its start to that listing
    rss_mib: float  # the daemon's RSS once loaded (objects listed; their items built when first read)
    publish_s: list[float]  # each publish: its frame written -> os.stat of its last item
    find_s: float  # then a first `find -type f` of the whole mount, which builds every object
    built_rss_mib: float  # the daemon's RSS after it (every object and item in the tree)


async def harness_round(args: argparse.Namespace, result: dict[str, Any], env: dict[str, str],
                        tmp: Path) -> HarnessRound:
    """One load of the harness's answer by a fresh daemon, then its publishes."""
    nobjects = len(result["objects"])
    out: HarnessRound | None = None
    answered: list[float] = []
    async with trio.open_nursery() as nursery:
        # No prefetch: the simulated viewer holds none of the answer's items, and the first listing
        # of a prim would start fetching them (the figures here are of listings and names).
        m = Mount(nursery, None, new_mountpoint(), free_port(), env, ["-o", "prefetch=0"], True, tmp / "logs",
                  viewer_version=args.viewer_version)
        try:
            sim = await m.start_sim(world_from_json(harness_sim_world(args.publish_items)), publish_delay=0,
                                    apply_delay=0)

            async def object_list(params: Any, ctx: Any) -> Any:
                return result

            sim._handlers["object.list"] = object_list
            result_text = sim._result_text

            def text_of(rid: Any, res: Any) -> str:
                text = str(result_text(rid, res))
                if res is result:
                    answered.append(time.time())
                return text

            sim._result_text = text_of
            mnt = m.mnt
            await m.start_daemon(wait_state=None)
            # Attached before the handshake: the simulated viewer (this process) waits while Spy does.
            spy = Spy(m.pid, tmp / "harness.raw") if args.profile else None
            cpu0 = cpu_s(m.pid)
            t_root = await trio.to_thread.run_sync(poll, lambda: len(os.listdir(mnt)) >= nobjects, 600)
            cpu = cpu_s(m.pid) - cpu0
            if spy is not None:
                show_top(spy.stop_raw(), m.pid)
            wall_root = time.time() - (time.perf_counter() - t_root)
            await m.wait_live("connected", timeout=60)
            ready = log_time(m.log_text(), "session ready")
            assert ready is not None and answered, "no session ready line or no answer"
            rss = rss_kib(m.pid) / 1024
            pub = await harness_publishes(sim, mnt, args.publish_runs, args.publish_items)
            t_find = time.perf_counter()
            found = await trio.to_thread.run_sync(functools.partial(
                subprocess.run, ["find", str(mnt), "-type", "f", "-not", "-path", f"{mnt}/.slfs/*"],
                capture_output=True, check=True))
            find_s = time.perf_counter() - t_find
            nfiles = found.stdout.count(b"\n")
            assert nfiles >= sum(len(o["inventory"]) for o in result["objects"]), nfiles
            out = HarnessRound(ready - answered[0], wall_root - answered[0], cpu, rss, pub, find_s,
                               rss_kib(m.pid) / 1024)
            print(f"   answer -> session ready {fmt(out.ready_s)}, -> the root lists every object "
                  f"{fmt(out.root_s)} (daemon CPU {fmt(cpu)}, RSS {rss:.0f} MiB); {args.publish_items}-item "
                  "publish -> its last item stats: " + ", ".join(f"{t * 1000:.1f}" for t in pub) + " ms; "
                  f"first find -type f of the mount ({nfiles} files) {fmt(find_s)}, RSS {out.built_rss_mib:.0f} MiB")
            m.assert_clean_log()
        finally:
            await m.stop_daemon()
            m.stop_sim()
            nursery.cancel_scope.cancel()
    assert out is not None
    return out


async def harness_rounds(args: argparse.Namespace) -> list[HarnessRound]:
    """The load as the outside harness measures it: its world in one object.list answer, timed
    from the answer (ready to send) to the daemon's "session ready" and to the first `ls` of the
    root that lists every object; then its 1,000-item publishes. The simulated viewer answers
    object.list with that result; its own world is one small object and the object it publishes."""
    result = harness_answer()
    nobjects = len(result["objects"])
    tmp = Path(tempfile.mkdtemp(prefix="slfs-bench-harness-"))
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / "run"), XDG_STATE_HOME=str(tmp / "state"),
               XDG_DATA_HOME=str(tmp / "data"), PYTHONUNBUFFERED="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    (tmp / "logs").mkdir()
    print(f"the outside harness's world: {nobjects} objects of {len(result['objects'][0]['inventory'])} items, "
          f"every field, viewer {args.viewer_version}")
    try:
        return [await harness_round(args, result, env, tmp) for _ in range(args.rounds)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def harness_summary(rounds: list[HarnessRound], publish_items: int) -> dict[str, float]:
    pubs = [t for r in rounds for t in r.publish_s]
    return {"ready_s": statistics.median(r.ready_s for r in rounds),
            "root_s": statistics.median(r.root_s for r in rounds),
            "rss_mib": max(r.rss_mib for r in rounds),
            "built_rss_mib": max(r.built_rss_mib for r in rounds),
            "find_s": statistics.median(r.find_s for r in rounds),
            "publish_s": statistics.median(pubs), "publish_best_s": min(pubs), "publishes": len(pubs),
            "publish_items": publish_items}


async def run_harness(args: argparse.Namespace) -> None:
    s = harness_summary(await harness_rounds(args), args.publish_items)
    print(f"   median of {args.rounds}: session ready {fmt(s['ready_s'])}, root listed {fmt(s['root_s'])} "
          f"(target 2 s); RSS at most {s['rss_mib']:.0f} MiB, {s['built_rss_mib']:.0f} MiB once a find "
          f"built every object (target 300 MiB); that first find {fmt(s['find_s'])} (median)")
    print(f"   {args.publish_items}-item publish, frame written -> os.stat of its last item: median "
          f"{s['publish_s'] * 1000:.1f} ms of {s['publishes']} (best {s['publish_best_s'] * 1000:.1f}) "
          "(target 50 ms)")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness-world", action="store_true",
                    help="only the load, of the outside harness's 100,000-item world (every field)")
    ap.add_argument("--rounds", type=int, default=3, help="with --harness-world: how many loads")
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--publish-items", type=int, default=1000)
    ap.add_argument("--publish-runs", type=int, default=5)
    ap.add_argument("--viewer-version", type=int, choices=(1, 2), default=1)
    ap.add_argument("--profile", action="store_true", help="py-spy the daemon; stage breakdown in-process")
    return ap


def main() -> int:
    ap = parser()
    args = ap.parse_args()
    trio.run(run_harness if args.harness_world else run, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
