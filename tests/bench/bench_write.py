"""Write-path benchmark (a script, not collected by pytest):

    /work/venv/bin/python tests/bench/bench_write.py [--latency-ms 20] [--saves 200] [--writers 16] [--rounds 50]

1. save overhead: close() latency of a small write to an existing notecard, minus the latency the
   simulator injects into object.content.save (target <= 5 ms);
2. throughput: `--writers` threads, each saving its own notecard `--rounds` times.
The simulated viewer runs in this process (trio), the mount is a `slfs mount -f` subprocess;
mount points live under ~/.cache/slfs-test-mounts/.
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

from slfs.sim.world import world_from_json


def world(writers: int) -> object:
    inv = [item(u(1), "Note", content="hello\n")]
    inv += [item(u(100 + i), f"W{i:02d}", content="start\n") for i in range(writers)]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Bench",
                            "objects": [{"object_id": u(1, "b"), "object_name": "Bench", "inventory": inv}]})


def save_once(path: Path, data: bytes) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    os.write(fd, data)
    start = time.perf_counter()
    os.close(fd)
    return time.perf_counter() - start


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="slfs-bench-write-"))
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / "run"), XDG_STATE_HOME=str(tmp / "state"),
               XDG_DATA_HOME=str(tmp / "data"), PYTHONUNBUFFERED="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    (tmp / "logs").mkdir()
    async with trio.open_nursery() as nursery:
        m = Mount(nursery, None, new_mountpoint(), free_port(), env, [], True, tmp / "logs")
        try:
            sim = await m.start_sim(world(args.writers),  # type: ignore[arg-type]
                                    method_latency_ms={"object.content.save": args.latency_ms})
            await m.start_daemon(options=["delete_grace=1"])
            box = m.path("Bench")
            await m.thread(os.listdir, box)
            await m.read_bytes("Bench", "Note")

            # 1. save overhead
            times = []
            for i in range(args.saves):
                times.append(await m.thread(save_once, box / "Note", f"save {i}\n".encode()))
            inj = args.latency_ms / 1000
            over = sorted((t - inj) * 1000 for t in times)
            saves = sum(1 for meth, _ in sim.calls if meth == "object.content.save")
            print(f"save overhead ({args.saves} saves, injected {args.latency_ms} ms): "
                  f"median {statistics.median(over):.2f} ms, p90 {over[int(len(over) * 0.9)]:.2f} ms, "
                  f"max {over[-1]:.2f} ms (close() median {statistics.median(times) * 1000:.2f} ms); "
                  f"viewer saves {saves}")

            # 2. throughput
            def writer(i: int) -> None:
                p = box / f"W{i:02d}"
                for r in range(args.rounds):
                    save_once(p, f"writer {i} round {r}\n".encode())

            before = len(sim.calls)
            start = time.perf_counter()
            async with trio.open_nursery() as n:
                for i in range(args.writers):
                    n.start_soon(m.thread, writer, i)
            took = time.perf_counter() - start
            total = args.writers * args.rounds
            got = sum(1 for meth, _ in sim.calls[before:] if meth == "object.content.save")
            wrong = [i for i in range(args.writers)
                     if sim.item(u(100 + i)).content != f"writer {i} round {args.rounds - 1}\n"]
            print(f"throughput: {args.writers} writers x {args.rounds} saves = {total} saves in {took:.2f} s "
                  f"= {total / took:.0f} saves/s (injected {args.latency_ms} ms per save); viewer saves {got}; "
                  f"wrong final contents: {len(wrong)}")
        finally:
            await m.stop_daemon()
            m.stop_sim()
            shutil.rmtree(m.mnt.parent, ignore_errors=True)
            nursery.cancel_scope.cancel()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-ms", type=float, default=20)
    ap.add_argument("--saves", type=int, default=200)
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=50)
    trio.run(main, ap.parse_args())
