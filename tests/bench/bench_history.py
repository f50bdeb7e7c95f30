"""History benchmark (a script, not collected by pytest):

    .venv/bin/python tests/bench/bench_history.py [--saves 200] [--rounds 3] [--versions 1000]

1. what the history store adds to a save's close(): the p50 (and p90) of close() of a small write
   to an existing notecard, each save a new text (so each is a new version), on a mount with the
   store and on one with `-o history_max=0`, alternating in rounds (target: at most 1 ms more);
2. listing an item with `--versions` versions: `ls` and `ls -l` of its `.slfs/history/FILE/`, the
   store filled beforehand (target: under 50 ms).
The simulated viewer runs in this process (trio), each mount is a `slfs mount -f` subprocess.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.mount import Mount, free_port, new_mountpoint
from support.worlds import item, u

from slfs.local.history_store import Place, Store
from slfs.model.history import agent_key
from slfs.sim.world import world_from_json

AGENT = u(99, "e")
NOTE = u(1)
OBJ = u(1, "b")


def world() -> object:
    return world_from_json({"agent_id": AGENT, "agent_name": "Bench", "objects": [
        {"object_id": OBJ, "object_name": "Bench", "inventory": [item(NOTE, "Note", content="hello\n")]}]})


def save_once(path: Path, data: bytes) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, data)
    start = time.perf_counter()
    os.close(fd)
    return time.perf_counter() - start


def fill_store(data_home: Path, versions: int) -> None:
    folder = data_home / "slfs" / "history"
    folder.mkdir(parents=True, mode=0o700)
    store = Store(folder / f"{agent_key(AGENT, 'Bench')}.sqlite3")
    place = Place(item_id=NOTE, item_type="notecard", file_name="Note", item_name="Note", object_id=OBJ,
                  object_name="Bench", prim_id=OBJ, prim_name="Bench", path="Bench/Note")
    now = time.time() - versions
    with store._transaction():
        for i in range(versions):
            store.add(place, "saved", f"version {i}\n".encode() * 20, None, now + i)
    store.close()


def _counts(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[0] == "fuse" and parts[2].isdigit():
            out[parts[1]] = int(parts[2])
    return out


def _delta(before: str, after: str) -> str:
    a, b = _counts(before), _counts(after)
    return ", ".join(f"{k} {b[k] - a.get(k, 0)}" for k in sorted(b) if b[k] - a.get(k, 0))


async def one_mount(nursery: trio.Nursery, tmp: Path, name: str, options: list[str]) -> Mount:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / name / "run"), XDG_STATE_HOME=str(tmp / name / "state"),
               XDG_DATA_HOME=str(tmp / name / "data"), PYTHONUNBUFFERED="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    (tmp / name / "logs").mkdir()
    m = Mount(nursery, None, new_mountpoint(), free_port(), env, [], True, tmp / name / "logs")
    await m.start_sim(world())  # type: ignore[arg-type]
    await m.start_daemon(options=options)
    await m.read_bytes("Bench", "Note")
    return m


async def stop(m: Mount) -> None:
    await m.stop_daemon()
    m.stop_sim()
    shutil.rmtree(m.mnt.parent, ignore_errors=True)


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="slfs-bench-history-"))
    async with trio.open_nursery() as nursery:
        # 1. close() with and without the store, alternating.
        times: dict[str, list[float]] = {"history": [], "history_max=0": []}
        for r in range(args.rounds):
            for label, options in (("history", []), ("history_max=0", ["history_max=0"])):
                m = await one_mount(nursery, tmp, f"{label}-{r}", options)
                try:
                    note = m.path("Bench", "Note")
                    for i in range(args.saves):
                        text = f"round {r} save {i}\n".encode() * 40  # ~800 bytes, a new text each time
                        times[label].append(await m.thread(save_once, note, text))
                    if label == "history":
                        status = await m.status()
                        print(f"  round {r}: {status['history']}", flush=True)
                finally:
                    await stop(m)
        p50 = {k: statistics.median(v) * 1000 for k, v in times.items()}
        p90 = {k: sorted(v)[int(len(v) * 0.9)] * 1000 for k, v in times.items()}
        on, off = "history", "history_max=0"
        print(f"close() of a save, {args.rounds} x {args.saves} saves each: with the store p50 {p50[on]:.2f} ms "
              f"(p90 {p90[on]:.2f}), history_max=0 p50 {p50[off]:.2f} ms (p90 {p90[off]:.2f}); "
              f"the store adds {p50[on] - p50[off]:+.2f} ms at p50")

        # 2. listing an item with many versions.
        fill_store(tmp / "list" / "data", args.versions)
        m = await one_mount(nursery, tmp, "list", [])
        try:
            folder = m.path("Bench", ".slfs", "history", "Note")
            seen: list[str] = []

            async def listed() -> bool:
                seen[:] = await m.thread(os.listdir, folder)
                return len(seen) >= args.versions
            await m.wait_for(listed, 30, "the store's versions listed")
            await trio.sleep(0.5)
            ls, ls_l = [], []
            for _ in range(5):
                start = time.perf_counter()
                await m.run("ls", folder)
                ls.append(time.perf_counter() - start)
                start = time.perf_counter()
                await m.run("ls", "-l", folder)
                ls_l.append(time.perf_counter() - start)
            start = time.perf_counter()
            await m.thread(os.listdir, folder)
            one = time.perf_counter() - start
            before = await m.thread((m.mnt / ".slfs" / "stats").read_text)
            await m.run("ls", "-l", folder)
            after = await m.thread((m.mnt / ".slfs" / "stats").read_text)
            print("requests of one `ls -l`:", _delta(before, after))
            print(f"listing {len(seen)} versions: os.listdir {one * 1000:.1f} ms; `ls` median "
                  f"{statistics.median(ls) * 1000:.1f} ms, `ls -l` median {statistics.median(ls_l) * 1000:.1f} ms "
                  "(each including the program's own start, ~2 ms)")
        finally:
            await stop(m)
        nursery.cancel_scope.cancel()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--saves", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--versions", type=int, default=1000)
    trio.run(main, ap.parse_args())
