"""Request accounting: counts and latency percentiles of every FUSE handler and every viewer RPC
since the daemon started (`.slfs/stats`, `slfs stats`).

Each mount has its own Stats, built with its services (daemon.build_services) and passed to what
records into it or reads it: the session its calls, the fs layer its handlers (guarded.bind_handlers)
and the kernel invalidations it sends, the control file and socket. It sits below every layer (it
imports nothing of slfs).

A record costs no allocation beyond the integers themselves: latencies go into a fixed array of
log-linear buckets (HDR-style: 8 buckets per power of two of nanoseconds, so a percentile read from
it is at most 12.5 % above the true value), plus an exact count and error count, and the sum and
maximum of the latencies timed.

A FUSE handler's wrapper (fs/guarded.py) counts every call and every error exactly. It times every
call until the handler has `SAMPLE_FROM` latencies, and from then on every call that waits (a
save, a fetch) and one in `SAMPLE_EVERY` of the others, which answer at once (a warm open, flush
or release): each of those stands for `SAMPLE_EVERY` calls in the buckets (its weight), so the
percentiles stay estimates of every call's. Timing each of the three requests a warm `grep -r`
makes per file (two clock reads and an append) cost it about 0.05x in wall-clock time
(tests/bench/bench_floor.py); counting costs a fraction of that. A timed answer at once only
appends its latency to a short array of machine integers (`Histogram.add`), folded into the
buckets every `FOLD_AT` latencies and before anything reads them. The array keeps no int object
alive and stays small (4 KiB), so the requests' own data stays in the CPU's first-level cache; a
fold sorts the batch and counts each bucket's run in it (a few bisections, not a Python step per
value).
"""

from __future__ import annotations

import time
from array import array
from bisect import bisect_right
from typing import Any

SUB_BITS = 3
SUB = 1 << SUB_BITS  # buckets per power of two
LINEAR = 2 * SUB  # values below this have a bucket each
NBUCKETS = 64 * SUB  # enough for any latency below 2**63 ns
PERCENTILES = ((50, "p50_us"), (90, "p90_us"), (99, "p99_us"))
FOLD_AT = 512  # latencies a histogram holds unfolded (Histogram.add)
SAMPLE_FROM = 4096  # a handler times all its calls until its histogram holds this many
SAMPLE_EVERY = 8  # then one in this many of those that answer at once (a power of two)


def bucket_of(ns: int) -> int:
    if ns < LINEAR:
        return ns if ns > 0 else 0
    shift = ns.bit_length() - SUB_BITS - 1
    return (shift << SUB_BITS) + (ns >> shift)


def bucket_high(index: int) -> int:
    """The largest value that falls into bucket `index`."""
    if index < LINEAR:
        return index
    shift = (index >> SUB_BITS) - 1
    mantissa = (index & (SUB - 1)) + SUB
    return ((mantissa + 1) << shift) - 1


class Histogram:
    """Count, errors, and the sum, max and bucketed distribution of the latencies timed, each
    weighted by the number of calls it stands for.

    A handler's wrapper times a call answered at once when the call's count has none of `mask`'s
    bits set: every call (mask 0, weight 1) until the histogram holds SAMPLE_FROM latencies, then
    one in SAMPLE_EVERY (weight SAMPLE_EVERY). Only a fold changes the two, after filing what was
    added under the old ones, and the wrapper adds a latency in the same step as it decides to
    time the call (no await between), so every latency is filed with the weight it was taken at."""

    __slots__ = ("add", "buckets", "count", "errors", "mask", "max_ns", "pending", "timed", "total_ns", "weight")

    def __init__(self) -> None:
        # Latencies not yet in the buckets, each of weight `weight`; `add` appends one. The array
        # is never replaced, so a bound `add` taken once (the handler wrappers) stays good.
        self.pending = array("q")
        self.add = self.pending.append
        self.clear()

    def clear(self) -> None:
        del self.pending[:]
        self.count = 0  # calls: record() counts its own, a handler's wrapper counts every call
        self.errors = 0
        self.timed = 0  # the calls the buckets stand for (the sum of the weights)
        self.total_ns = 0
        self.max_ns = 0
        self.buckets = [0] * NBUCKETS
        self.weight = 1
        self.mask = 0

    def fold(self) -> None:
        """Move the pending latencies into the buckets; from SAMPLE_FROM latencies on, sample."""
        pending = self.pending
        if not pending:
            return
        batch = sorted(pending)
        del pending[:]
        buckets = self.buckets
        weight = self.weight
        n = len(batch)
        self.timed += n * weight
        self.total_ns += sum(batch) * weight
        self.max_ns = max(self.max_ns, batch[-1])
        i = 0
        while i < n:  # one step per bucket the batch reaches
            index = bucket_of(batch[i])
            j = bisect_right(batch, bucket_high(index), i)
            buckets[index] += (j - i) * weight
            i = j
        if self.timed >= SAMPLE_FROM:
            self.weight = SAMPLE_EVERY
            self.mask = SAMPLE_EVERY - 1

    def latency(self, ns: int) -> None:
        """One call's latency, of weight 1 (a call that waited: every one is timed)."""
        self.timed += 1
        self.total_ns += ns
        if ns > self.max_ns:
            self.max_ns = ns
        if ns < LINEAR:  # bucket_of(ns), inlined
            self.buckets[ns if ns > 0 else 0] += 1
        else:
            shift = ns.bit_length() - SUB_BITS - 1
            self.buckets[(shift << SUB_BITS) + (ns >> shift)] += 1

    def record(self, ns: int, failed: bool = False) -> None:
        """One call, counted and timed (the viewer's calls)."""
        self.count += 1
        if failed:
            self.errors += 1
        self.latency(ns)

    def percentile_ns(self, q: float) -> int:
        """The value at or below which `q` percent of the records lie (bucket resolution, capped by
        the exact maximum); 0 when nothing was recorded."""
        self.fold()
        if not self.timed:
            return 0
        rank = max(1, -(-self.timed * q // 100))  # ceil(timed * q / 100)
        seen = 0
        for index, n in enumerate(self.buckets):
            seen += n
            if seen >= rank:
                return min(bucket_high(index), self.max_ns)
        return self.max_ns

    def snapshot(self) -> dict[str, Any]:
        self.fold()
        out: dict[str, Any] = {"count": self.count, "errors": self.errors}
        for q, key in PERCENTILES:
            out[key] = round(self.percentile_ns(q) / 1000, 1)
        out["max_us"] = round(self.max_ns / 1000, 1)
        out["mean_us"] = round(self.total_ns / self.timed / 1000, 1) if self.timed else 0.0
        return out


class Stats:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.fuse: dict[str, Histogram] = {}
        self.rpc: dict[str, Histogram] = {}
        # Kernel cache invalidations sent by the fs layer's invalidator, by kind.
        self.invalidations: dict[str, int] = {"entry": 0, "inode": 0}

    def handler(self, name: str) -> Histogram:
        """The histogram of a FUSE handler (taken once, when the handler is defined)."""
        return self.fuse.setdefault(name, Histogram())

    def rpc_done(self, method: str, ns: int, failed: bool) -> None:
        hist = self.rpc.get(method)
        if hist is None:
            hist = self.rpc[method] = Histogram()
        hist.record(ns, failed)

    def invalidated(self, kind: str) -> None:
        self.invalidations[kind] = self.invalidations.get(kind, 0) + 1

    def reset(self) -> None:
        """Start counting afresh (tests; the histograms the handlers hold stay theirs)."""
        self.started = time.monotonic()
        for hist in [*self.fuse.values(), *self.rpc.values()]:
            hist.clear()
        self.rpc.clear()
        self.invalidations = dict.fromkeys(self.invalidations, 0)

    def snapshot(self) -> dict[str, Any]:
        """Everything, as JSON-ready data: what `slfs stats --json` prints."""
        return {
            "uptime_s": round(time.monotonic() - self.started, 1),
            "fuse": {name: h.snapshot() for name, h in sorted(self.fuse.items())},
            "rpc": {name: h.snapshot() for name, h in sorted(self.rpc.items())},
            "invalidations": dict(self.invalidations),
        }


_COLUMNS = ("count", "errors", "p50_us", "p90_us", "p99_us", "max_us")


def render(snap: dict[str, Any]) -> str:
    """The text of `.slfs/stats` and of `slfs stats`: one line per operation, fixed-width columns,
    so the file's size does not change between a stat and a read unless an operation is added."""
    lines = [f"# since start: {snap.get('uptime_s', 0):12.1f} s; latencies in microseconds",
             f"{'kind':<6}{'operation':<26}{'count':>12}{'errors':>10}{'p50':>11}{'p90':>11}{'p99':>11}"
             f"{'max':>12}"]
    for kind in ("fuse", "rpc"):
        for name, row in (snap.get(kind) or {}).items():
            values = [row.get(c, 0) for c in _COLUMNS]
            lines.append(f"{kind:<6}{name:<26}{values[0]:>12}{values[1]:>10}{values[2]:>11.1f}{values[3]:>11.1f}"
                         f"{values[4]:>11.1f}{values[5]:>12.1f}")
    for kind, n in (snap.get("invalidations") or {}).items():
        lines.append(f"{'inval':<6}{kind:<26}{n:>12}")
    return "\n".join(lines) + "\n"
