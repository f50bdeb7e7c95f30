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
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_floor as bf
import bench_read as br

Counts = dict[str, int]
SLOW = 10  # how much longer than natively starting and stopping may take under valgrind


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
        print("floor, counted: skipped, needs valgrind (apt install valgrind)")
        return 0
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
                with bf.slfs_mount(port, sub, total, None, os.path.abspath(src) if src else None,
                                   prefix=callgrind(out), slow=SLOW) as (mnt, pid):
                    subprocess.run(bf.argv_for("grep -r", mnt), capture_output=True, check=False)  # fetches all
                    if not any(shm.iterdir()):
                        br.copy_tree(mnt, shm)
                    counts[label] = count(pid, mnt, out)
            with bf.floor_mount(shm, wd / "floor", prefix=callgrind(out), slow=SLOW) as (mnt, pid):
                counts["floor"] = count(pid, mnt, out)
        report(counts)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
        shutil.rmtree(wd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
