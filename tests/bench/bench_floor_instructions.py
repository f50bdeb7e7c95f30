"""The floor, counted: instructions slfs's daemon executes serving a warm `grep -r` and `find -type f`,
against the floor file system of bench_floor.py serving the same files (a script, not collected by
pytest; needs valgrind):

    .venv/bin/python tests/bench/bench_floor_instructions.py [--objects 100] [--items 20] [--also L=SRC]

Wall-clock ratios on a small shared machine move by 10-20 % from one mount to the next
(bench_floor.py says why), more than the changes they are meant to judge. Each serving process runs
here under callgrind with instrumentation off; it is switched on only around two warm runs of each
command (after one that fills the caches), and the counts are read from a dump: instructions (Ir),
first-level data cache misses and last-level misses of callgrind's cache model. Those counts are
the same from run to run, so a ratio of them says what the daemon's own work costs beside the
floor's (the kernel's side and the commands are the same for both and not counted). Valgrind slows
Python some fifty times: the default tree is 2,000 files, and a run takes about five minutes.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import bench_floor as bf
import bench_read as br

Counts = dict[str, int]


def callgrind(out: Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--cache-sim=yes",
            f"--callgrind-out-file={out}/%p.out"]


def read_dumps(out: Path, pid: int) -> Counts:
    """The totals of every dump file of `pid` (one per thread), summed, by event name."""
    totals: Counts = {}
    for dump in out.glob(f"{pid}.out*"):
        events: list[str] = []
        with open(dump) as f:
            for line in f:
                if line.startswith("events:"):
                    events = line.split()[1:]
                elif line.startswith(("summary:", "totals:")):
                    for name, value in zip(events, line.split()[1:], strict=False):
                        totals[name] = totals.get(name, 0) + int(value)
                    break
        dump.unlink()
    return totals


def count(pid: int, root: Path, out: Path) -> dict[str, Counts]:
    """Per command, the counts of two warm runs served by process `pid` at `root`."""
    result = {}
    for name in bf.COMMANDS:
        argv = bf.argv_for(name, root)
        subprocess.run(argv, capture_output=True, check=False)  # fills the caches
        for old in out.glob(f"{pid}.out*"):
            old.unlink()
        subprocess.run(["callgrind_control", "-z", str(pid)], capture_output=True, check=True)
        subprocess.run(["callgrind_control", "-i", "on", str(pid)], capture_output=True, check=True)
        for _ in range(2):
            subprocess.run(argv, capture_output=True, check=False)
        subprocess.run(["callgrind_control", "-d", str(pid)], capture_output=True, check=True)
        subprocess.run(["callgrind_control", "-i", "off", str(pid)], capture_output=True, check=True)
        result[name] = read_dumps(out, pid)
    return result


@contextlib.contextmanager
def slfs_under_callgrind(port: int, wd: Path, items: int, out: Path, src: str | None) -> Iterator[tuple[Path, int]]:
    mnt = wd / "slfs"
    mnt.mkdir()
    env = dict(os.environ, XDG_RUNTIME_DIR=str(wd / "run"), XDG_STATE_HOME=str(wd / "state"),
               XDG_DATA_HOME=str(wd / "data"))
    if src is not None:
        env["PYTHONPATH"] = src
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    with open(wd / "mount.log", "ab") as log:
        proc = subprocess.Popen([*callgrind(out), bf.PY, "-m", "slfs", "mount", "-f", "--port", str(port), str(mnt)],
                                stdout=log, stderr=log, env=env, cwd=src)
        try:
            def ready() -> bool:
                try:
                    s = br.status(mnt)
                except OSError:
                    return False
                return s.get("state") == "connected" and int(s.get("items", -1)) == items

            br.wait(ready, 900, "slfs (under valgrind) connected with every item")
            subprocess.run(bf.argv_for("grep -r", mnt), capture_output=True, check=False)  # fetches all
            yield mnt, proc.pid
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(300)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if br.mounted(mnt):
                subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)


@contextlib.contextmanager
def floor_under_callgrind(src: Path, mnt: Path, out: Path) -> Iterator[tuple[Path, int]]:
    mnt.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([*callgrind(out), bf.PY, bf.__file__, "--serve-floor", str(src), str(mnt)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    try:
        if proc.stdout.readline().strip() != b"ready":
            raise SystemExit("the floor file system did not start")
        br.wait(lambda: br.mounted(mnt), 300, "floor mount live")
        yield mnt, proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(300)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if br.mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)


def report(counts: dict[str, dict[str, Counts]]) -> None:
    floor = counts["floor"]
    for name in bf.COMMANDS:
        print(f"   {name} (two warm runs):")
        f = floor[name]
        f_d1, f_ll = f["D1mr"] + f["D1mw"], f["DLmr"] + f["DLmw"]
        for label, per in counts.items():
            c = per[name]
            d1, ll = c["D1mr"] + c["D1mw"], c["DLmr"] + c["DLmw"]
            ratios = "" if label == "floor" else (f"  /floor: Ir {c['Ir'] / f['Ir']:.3f}x, L1d misses "
                                                  f"{d1 / f_d1:.2f}x, LL misses {ll / max(1, f_ll):.2f}x")
            print(f"      {label:<8} Ir {c['Ir']:>14,}  L1d misses {d1:>12,}  LL misses {ll:>9,}{ratios}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--also", action="append", default=[], metavar="LABEL=SRC",
                    help="also count the slfs of source tree SRC (a change being tried)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (apt install valgrind)")
    total = args.objects * args.items
    print(f"floor, counted: callgrind over {args.objects} objects x {args.items} items ({total} files)")
    wd = br.workdir("floor-instructions")
    out = wd / "callgrind"
    out.mkdir()
    shm = Path(tempfile.mkdtemp(prefix="slfs-floor-ir-", dir="/dev/shm"))
    counts: dict[str, dict[str, Counts]] = {}
    try:
        with br.sim_process(br.many_items_world(args.objects, args.items), 0, wd) as port:
            for label, src in [("slfs", None), *(a.partition("=")[::2] for a in args.also)]:
                sub = wd / f"mount-{len(counts)}"
                sub.mkdir()
                with slfs_under_callgrind(port, sub, total, out, os.path.abspath(src) if src else None) as (mnt, pid):
                    if not any(shm.iterdir()):
                        br.copy_tree(mnt, shm)
                    counts[label] = count(pid, mnt, out)
            with floor_under_callgrind(shm, wd / "floor", out) as (mnt, pid):
                counts["floor"] = count(pid, mnt, out)
        report(counts)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(wd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
