"""`slfs top` with 2,000 objects (a script, not collected by pytest):

    .venv/bin/python tests/bench/bench_top.py [--objects 2000] [--items 4] [--events 50] [--burst 500]

A mount of `--objects` objects of `--items` items each (half of them scripts: 2,000 x 4 is 2,000
object rows and 4,000 script rows), the simulated viewer in this process (trio), the daemon a
`slfs mount -f` subprocess; the view is the real app (slfs/cli/top/app.py) run headless by
Textual's pilot in a thread of its own, reading through the client layer as `slfs top` does.

1. snapshot: status, recursive listing and event backlog read (what `slfs top` does first), and
   `--once`'s frame rendered from it;
2. the table built whole (the first frame, and what a filter or a publish costs), and the app's
   drain of one batch that changes no row (its floor);
3. event-to-screen: a script's runtime line emitted by the viewer until the script's row in the
   table holds it, `--events` times one after another (target: within 0.5 s), and the part of it
   in the app (from the feed's thread reading it off the control socket);
4. a burst of `--burst` runtime lines at once over as many scripts: until the last is on screen,
   and how long a key (down) takes to be handled meanwhile (responsiveness).
Nothing here asserts; each line says whether its target is met on this machine, this run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.mount import Mount, free_port, new_mountpoint
from support.worlds import many_items_world

from slfs.cli.top.app import TopApp
from slfs.cli.top.feed import snapshot
from slfs.cli.top.frame import render
from slfs.client import MountClient
from slfs.sim.world import world_from_json


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


async def one_mount(nursery: trio.Nursery, tmp: Path, world: Any) -> Mount:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / "run"), XDG_STATE_HOME=str(tmp / "state"),
               XDG_DATA_HOME=str(tmp / "data"), PYTHONUNBUFFERED="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    (tmp / "logs").mkdir()
    os.environ["XDG_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]  # the client finds the mount in its registry
    m = Mount(nursery, None, new_mountpoint(), free_port(), env, [], True, tmp / "logs")
    await m.start_sim(world)
    await m.start_daemon()
    return m


def scripts_of(m: Mount) -> list[tuple[str, str]]:
    """(item id, mount-relative path) of every script: "Object N/Script I.lsl" (names are unique)."""
    assert m.sim is not None
    out = []
    for obj in m.sim.world.objects.values():
        for item in obj.root.inventory:
            if item.is_script:
                out.append((item.item_id, f"{obj.root.name}/{item.name}.lsl"))
    return out


def drive_app(m: Mount, args: argparse.Namespace, model: Any, scripts: list[tuple[str, str]],
              out: dict[str, Any], token: trio.lowlevel.TrioToken) -> None:
    """In a thread of its own (Textual runs on asyncio): the app headless, events from the viewer
    (trio, through trio.from_thread), the table read until it shows them."""
    client = MountClient.find(str(m.mnt))
    assert m.sim is not None
    sim = m.sim

    received: dict[str, float] = {}  # a runtime line's message -> when the feed's thread had it

    class Stamped:
        """The feed's queue, noting when each runtime line came off the control socket."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def put(self, message: Any) -> None:
            kind, data = message
            if kind == "event" and data.get("type") == "runtime.debug":
                received[str(data.get("message"))] = time.perf_counter()
            self.inner.put(message)

        def get_nowait(self) -> Any:
            return self.inner.get_nowait()

    async def main() -> None:
        app = TopApp(client, model)
        app.feed.out = Stamped(app.feed.out)  # type: ignore[assignment]
        start = time.perf_counter()
        async with app.run_test(size=(160, 50)) as pilot:
            out["first_frame"] = time.perf_counter() - start
            table = app.table()
            start = time.perf_counter()
            app.rebuild()
            out["rebuild"] = time.perf_counter() - start
            start = time.perf_counter()
            app.drain()
            out["drain_floor"] = time.perf_counter() - start

            def shows(path: str, marker: str) -> bool:
                return marker in str(table.get_cell(path, "output"))

            latencies: list[float] = []
            in_app: list[float] = []  # from the feed's thread to the table
            for i in range(args.events):
                item_id, path = scripts[(i * 7919) % len(scripts)]
                marker = f"top-bench-{i}"
                start = time.perf_counter()
                trio.from_thread.run(sim.emit_debug, item_id, marker)
                while not shows(path, marker):
                    await pilot.pause(0.002)
                seen = time.perf_counter()
                latencies.append(seen - start)
                in_app.append(seen - received.get(marker, seen))
            out["latencies"] = latencies
            out["in_app"] = in_app

            burst = [scripts[i % len(scripts)] for i in range(args.burst)]

            async def emit_all() -> None:
                for n, (item_id, _path) in enumerate(burst):
                    await sim.emit_debug(item_id, f"burst-{n}")

            start = time.perf_counter()
            done = threading.Event()
            threading.Thread(target=lambda: (trio.from_thread.run(emit_all, trio_token=token), done.set()),
                             daemon=True).start()
            keys = []
            last_path = burst[-1][1]
            while not (done.is_set() and shows(last_path, f"burst-{len(burst) - 1}")):
                before = table.cursor_row
                key_start = time.perf_counter()
                await pilot.press("down")
                while table.cursor_row == before and before < len(app.shown) - 1:
                    await pilot.pause(0.001)
                keys.append(time.perf_counter() - key_start)
                if time.perf_counter() - start > 60:
                    break
            out["burst"] = time.perf_counter() - start
            out["keys"] = keys
            app.feed.stop()

    asyncio.run(main())


async def bench(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="slfs-bench-top-"))
    world = world_from_json(many_items_world(args.objects, args.items))
    async with trio.open_nursery() as nursery:
        m = await one_mount(nursery, tmp, world)
        try:
            client = MountClient.find(str(m.mnt))
            start = time.perf_counter()
            model = await trio.to_thread.run_sync(snapshot, client)
            snap = time.perf_counter() - start
            start = time.perf_counter()
            frame = render(model, 160)
            once = time.perf_counter() - start
            rows = len(model.order)
            print(f"top, {args.objects} objects x {args.items} items: {rows} rows "
                  f"({model.counts()['scripts']} scripts)")
            print(f"   1. snapshot (status, listing, events) {ms(snap)}; --once frame rendered in {ms(once)} "
                  f"({len(frame.splitlines())} lines)")
            out: dict[str, Any] = {}
            await trio.to_thread.run_sync(drive_app, m, args, model, scripts_of(m), out,
                                         trio.lowlevel.current_trio_token())
            print(f"   2. the app up and its first frame {ms(out['first_frame'])}; the table built whole "
                  f"{ms(out['rebuild'])}; an empty drain {ms(out['drain_floor'])}")
            lat = sorted(out["latencies"])
            p50, p90, worst = statistics.median(lat), lat[int(len(lat) * 0.9)], lat[-1]
            print(f"   3. event-to-screen over {len(lat)} runtime lines: p50 {ms(p50)}, p90 {ms(p90)}, "
                  f"max {ms(worst)} (target 500 ms: {verdict(worst <= 0.5)}); of which in the app (the "
                  f"control socket's line read to the table's cell): p50 {ms(statistics.median(out['in_app']))}, "
                  f"max {ms(max(out['in_app']))}")
            keys = sorted(out["keys"]) or [0.0]
            print(f"   4. a burst of {args.burst} runtime lines on screen in {ms(out['burst'])}; "
                  f"{len(out['keys'])} keys (down) meanwhile: p50 {ms(statistics.median(keys))}, "
                  f"max {ms(keys[-1])}")
        finally:
            await m.stop_daemon()
            m.stop_sim()
            shutil.rmtree(m.mnt.parent, ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)
        nursery.cancel_scope.cancel()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--items", type=int, default=4)
    ap.add_argument("--events", type=int, default=50)
    ap.add_argument("--burst", type=int, default=500)
    trio.run(bench, ap.parse_args())
    return 0


if __name__ == "__main__":
    sys.exit(main())
