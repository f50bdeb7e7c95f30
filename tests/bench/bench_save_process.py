"""Save overhead with the simulated viewer in its own process (a script, not collected by pytest):

    /work/venv/bin/python tests/bench/bench_save_process.py [--latency-ms 20] [--saves 200]

bench_write.py runs the simulator inside the benchmark's own trio loop, so its figure includes the
simulator's Python work competing with the benchmark threads. Here the simulator, the mount and
the writer are three processes, as with a real viewer: close() latency minus the injected latency
is what slfs and the transport add (target <= 5 ms).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wait(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency-ms", type=int, default=20)
    ap.add_argument("--saves", type=int, default=200)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="slfs-bench-"))
    mnt = Path.home() / ".cache" / "slfs-test-mounts" / f"bench-save-{os.getpid()}"
    mnt.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state"), "XDG_DATA_HOME": str(work / "data"),
           "XDG_RUNTIME_DIR": str(work / "run")}
    (work / "run").mkdir()
    sim = subprocess.Popen([sys.executable, "-m", "slfs.sim", "--port", "0", "--latency-ms", str(args.latency_ms)],
                           stdout=subprocess.PIPE, text=True)
    daemon = None
    try:
        assert sim.stdout is not None
        port = int(sim.stdout.readline().rsplit(":", 1)[1])
        with open(work / "mount.log", "wb") as log:
            daemon = subprocess.Popen([sys.executable, "-m", "slfs", "mount", "-f", "--port", str(port), str(mnt)],
                                      env=env, stderr=log)
        status = mnt / ".slfs" / "status"
        wait(lambda: os.path.ismount(mnt) and "state: connected" in status.read_text(), 20, "the mount")
        target = mnt / "Hello Cube" / "Notes\u2215Todo"
        target.read_bytes()
        times = []
        for i in range(args.saves):
            fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
            os.write(fd, f"save {i}\n".encode())
            t0 = time.perf_counter()
            os.close(fd)
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        med = statistics.median(times)
        print(f"save overhead, simulator in its own process ({args.saves} saves, injected {args.latency_ms} ms): "
              f"median {med - args.latency_ms:.2f} ms, p90 {times[int(len(times) * 0.9)] - args.latency_ms:.2f} ms "
              f"(close() median {med:.2f} ms)")
    finally:
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            try:
                daemon.wait(30)
            except subprocess.TimeoutExpired:
                daemon.kill()
        if os.path.ismount(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)
        sim.send_signal(signal.SIGTERM)
        sim.wait(10)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
