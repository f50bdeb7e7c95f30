"""Read-path benchmark (a script, not collected by pytest):

    /work/venv/bin/python tests/bench/bench_read.py [--quick] [--items 100000]

1. cold `ls -lR` of one 200-item object with the sim at --latency-ms 50 (target <= 1 s);
2. warm `grep -r` over 1,000 objects x 20 items, against a tmpfs copy and (if installed) an
   `rclone mount` of an on-disk copy;
3. the daemon's RSS with 100,000 published items, and the time of `find MOUNT` over them.
The sim and the mount run as subprocesses; mount points live under ~/.cache/slfs-bench/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.worlds import many_items_world

BASE = Path.home() / ".cache" / "slfs-bench"
PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mounted(path: Path) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(len(p := line.split()) > 1 and p[1] == real for line in f)


def wait(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise SystemExit(f"timed out: {what}")


@contextlib.contextmanager
def sim_process(world: dict, latency_ms: int, workdir: Path) -> Iterator[int]:  # type: ignore[type-arg]
    wfile = workdir / "world.json"
    wfile.write_text(json.dumps(world))
    port = free_port()
    log = open(workdir / "sim.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([PY, "-m", "slfs.sim", "--port", str(port), "--world", str(wfile),
                             "--latency-ms", str(latency_ms)], stdout=subprocess.PIPE, stderr=log)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    if "listening" not in line:
        raise SystemExit(f"sim did not start: {line!r}")
    try:
        yield port
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def status(mnt: Path) -> dict[str, str]:
    text = (mnt / ".slfs" / "status").read_text()
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


@contextlib.contextmanager
def slfs_mount(port: int, workdir: Path, items: int, options: list[str] | None = None) -> Iterator[tuple[Path, int]]:
    mnt = workdir / "mnt"
    mnt.mkdir()
    log = open(workdir / "mount.log", "wb")  # noqa: SIM115
    argv = [PY, "-m", "slfs", "mount", "-f", "--port", str(port)]
    for o in options or []:
        argv += ["-o", o]
    proc = subprocess.Popen([*argv, str(mnt)], stdout=log, stderr=log)
    try:
        wait(lambda: mounted(mnt), 30, "mount live")

        def ready() -> bool:
            try:
                s = status(mnt)
            except OSError:
                return False
            return s.get("state") == "connected" and int(s.get("items", -1)) == items

        wait(ready, 300, "connected with every item")
        yield mnt, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)
            proc.kill()
            proc.wait()
        if mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)
        log.close()
        text = (workdir / "mount.log").read_text(errors="replace")
        if "Traceback" in text:
            print(f"  !! daemon logged a traceback, see {workdir / 'mount.log'}")


def timed(argv: list[str], **kw) -> tuple[float, subprocess.CompletedProcess[bytes]]:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    res = subprocess.run(argv, capture_output=True, check=False, **kw)
    return time.perf_counter() - t, res


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def workdir(name: str) -> Path:
    BASE.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=BASE))


def bench_cold_ls(latency: int) -> float:
    print(f"1. cold ls -lR of one 200-item object, sim latency {latency} ms")
    world = many_items_world(1, 200)
    wd = workdir("cold")
    with sim_process(world, latency, wd) as port, slfs_mount(port, wd, 200) as (mnt, _pid):
        t, res = timed(["ls", "-lR", str(mnt)])
        assert res.returncode == 0, res.stderr
        sizes = [int(line.split()[4]) for line in res.stdout.decode().splitlines() if line.startswith("-")]
        zero = sum(1 for s in sizes if s == 0)
        print(f"   {t:.3f} s for {len(sizes)} files (target <= 1 s; {zero} sizes shown as 0) "
              f"{'OK' if t <= 1 else 'MISSED'}")
        t2, _ = timed(["ls", "-lR", str(mnt)])
        print(f"   second ls -lR: {t2:.3f} s; content fetches: {status(mnt)['content_fetches']}")
    shutil.rmtree(wd, ignore_errors=True)
    return t


def copy_tree(src: Path, dst: Path) -> None:
    subprocess.run(["cp", "-r", f"{src}/.", str(dst)], check=True)


def bench_grep(objects: int, items: int) -> None:
    print(f"2. warm grep -r over {objects} objects x {items} items")
    world = many_items_world(objects, items)
    wd = workdir("grep")
    pattern = "object 7 item 2$"
    with sim_process(world, 0, wd) as port, slfs_mount(port, wd, objects * items) as (mnt, _pid):
        t_cold, res = timed(["grep", "-r", "-c", pattern, str(mnt)])
        print(f"   cold pass: {t_cold:.3f} s (exit {res.returncode})")
        runs = [timed(["grep", "-r", pattern, str(mnt)])[0] for _ in range(3)]
        t_warm = min(runs)
        print(f"   slfs warm:  {t_warm:.3f} s (best of 3: {', '.join(f'{r:.3f}' for r in runs)})")
        shm = Path(tempfile.mkdtemp(prefix="slfs-bench-", dir="/dev/shm"))
        disk = wd / "disk"
        disk.mkdir()
        try:
            copy_tree(mnt, shm)
            copy_tree(mnt, disk)
            t_shm = min(timed(["grep", "-r", pattern, str(shm)])[0] for _ in range(3))
            print(f"   tmpfs:      {t_shm:.3f} s -> slfs/tmpfs = {t_warm / t_shm:.1f}x")
            if shutil.which("rclone"):
                rmnt = wd / "rclone"
                rmnt.mkdir()
                rproc = subprocess.Popen(["rclone", "mount", "--read-only", str(disk), str(rmnt)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    wait(lambda: mounted(rmnt), 20, "rclone mount")
                    timed(["grep", "-r", pattern, str(rmnt)])
                    t_rc = min(timed(["grep", "-r", pattern, str(rmnt)])[0] for _ in range(3))
                    print(f"   rclone:     {t_rc:.3f} s -> slfs/rclone = {t_warm / t_rc:.2f}x")
                finally:
                    subprocess.run(["fusermount3", "-u", "-z", str(rmnt)], check=False)
                    rproc.terminate()
                    rproc.wait(10)
            else:
                print("   rclone: not installed, skipped")
        finally:
            shutil.rmtree(shm, ignore_errors=True)
    shutil.rmtree(wd, ignore_errors=True)


def bench_rss(total: int) -> None:
    objects = total // 100
    print(f"3. daemon RSS with {total} published items ({objects} objects x 100)")
    world = many_items_world(objects, 100, size=60)
    wd = workdir("rss")
    with sim_process(world, 0, wd) as port:
        t0 = time.perf_counter()
        with slfs_mount(port, wd, total) as (mnt, pid):
            print(f"   mounted and loaded in {time.perf_counter() - t0:.1f} s")
            print(f"   RSS after load: {rss_kib(pid) / 1024:.1f} MiB")
            t, res = timed(["find", str(mnt)])
            n = len(res.stdout.splitlines())
            print(f"   find MOUNT: {t:.2f} s for {n} entries (exit {res.returncode})")
            t, res = timed(["find", str(mnt)])
            print(f"   find MOUNT again (warm): {t:.2f} s")
            st = status(mnt)
            print(f"   RSS after find: {rss_kib(pid) / 1024:.1f} MiB; {st.get('kernel_refs')} kernel refs; "
                  f"{st.get('content_fetches')} content fetches (prefetch started by find's opendir)")
    shutil.rmtree(wd, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--latency-ms", type=int, default=50)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--only", choices=["ls", "grep", "rss"])
    args = ap.parse_args()
    if args.only in (None, "ls"):
        bench_cold_ls(args.latency_ms)
    if args.only in (None, "grep"):
        bench_grep(100 if args.quick else 1000, 20)
    if args.only in (None, "rss"):
        bench_rss(5000 if args.quick else args.items)
    return 0


if __name__ == "__main__":
    sys.exit(main())
