"""Request accounting (slfs/stats.py): buckets, percentiles, snapshots and the rendered table."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from slfs.stats import FOLD_AT, NBUCKETS, SAMPLE_EVERY, SAMPLE_FROM, Histogram, Stats, bucket_high, bucket_of, render


@given(st.integers(min_value=0, max_value=2**62))
def test_every_value_falls_into_a_bucket_whose_bounds_hold_it(ns: int) -> None:
    index = bucket_of(ns)
    assert 0 <= index < NBUCKETS
    assert ns <= bucket_high(index)
    low = bucket_high(index - 1) + 1 if index else 0
    assert low <= ns
    # a bucket is at most 1/8 of its lower bound wide: percentiles are within 12.5 %
    assert bucket_high(index) - low <= max(0, low // 8)


def test_buckets_are_contiguous_and_ordered() -> None:
    for index in range(1, 400):
        assert bucket_high(index) > bucket_high(index - 1)
        assert bucket_of(bucket_high(index - 1) + 1) == index


def test_percentiles_within_bucket_resolution() -> None:
    rng = random.Random(7)
    values = [int(rng.lognormvariate(10, 1.5)) for _ in range(10_000)]
    h = Histogram()
    for v in values:
        h.record(v)
    ordered = sorted(values)
    for q in (50, 90, 99):
        exact = ordered[-(-len(ordered) * q // 100) - 1]
        got = h.percentile_ns(q)
        assert exact <= got <= exact * 1.125 + 1, (q, exact, got)
    assert h.percentile_ns(100) == h.max_ns == max(values)
    assert h.count == h.timed == len(values) and h.total_ns == sum(values)


def test_empty_and_single() -> None:
    h = Histogram()
    assert h.percentile_ns(50) == 0
    assert h.snapshot() == {"count": 0, "errors": 0, "p50_us": 0.0, "p90_us": 0.0, "p99_us": 0.0,
                            "max_us": 0.0, "mean_us": 0.0}
    h.record(12_345, failed=True)
    snap = h.snapshot()
    assert snap["count"] == 1 and snap["errors"] == 1
    assert snap["p50_us"] == snap["p99_us"] == snap["max_us"] == 12.3  # capped by the exact maximum


def test_stats_snapshot_and_reset() -> None:
    s = Stats()
    lookup = s.handler("lookup")
    assert s.handler("lookup") is lookup
    lookup.record(1000)
    s.rpc_done("object.content.get", 2_000_000, False)
    s.rpc_done("object.content.get", 3_000_000, True)
    s.invalidated("entry")
    s.invalidated("inode")
    s.invalidated("inode")
    snap = s.snapshot()
    assert snap["fuse"]["lookup"]["count"] == 1
    assert snap["rpc"]["object.content.get"]["count"] == 2
    assert snap["rpc"]["object.content.get"]["errors"] == 1
    assert snap["invalidations"] == {"entry": 1, "inode": 2}
    s.reset()
    assert s.handler("lookup") is lookup and lookup.count == 0
    assert s.snapshot()["rpc"] == {} and s.snapshot()["invalidations"] == {"entry": 0, "inode": 0}


def test_render_is_fixed_width() -> None:
    s = Stats()
    for name in ("lookup", "open", "flush"):
        s.handler(name)
    before = render(s.snapshot())
    for _ in range(999):
        s.handler("open").record(5_000)
    s.handler("flush").record(999_999)
    after = render(s.snapshot())
    # the size a stat reports stays that of the next read as counts grow
    assert len(before) == len(after)
    lines = after.splitlines()
    assert lines[0].startswith("# since start:")
    row = next(line for line in lines if line.split()[:2] == ["fuse", "open"])
    assert row.split()[2:] == ["999", "0", "5.0", "5.0", "5.0", "5.0"]
    assert any(line.split() == ["inval", "entry", "0"] for line in lines)


@given(st.lists(st.integers(min_value=0, max_value=2**50), min_size=1, max_size=50))
def test_record_files_each_value_where_bucket_of_says(values: list[int]) -> None:
    h = Histogram()
    for v in values:
        h.record(v)
    expected = [0] * NBUCKETS
    for v in values:
        expected[bucket_of(v)] += 1
    assert h.buckets == expected


def test_added_latencies_fill_the_buckets_as_records_do() -> None:
    """The handlers' path (Histogram.add, folded later) files what record() files, before and
    after a fold, and after clear() the same bound `add` still feeds the histogram. The calls are
    the wrapper's to count (record() counts its own)."""
    rng = random.Random(11)
    values = [int(rng.lognormvariate(9, 2)) for _ in range(FOLD_AT + 100)]
    added, recorded = Histogram(), Histogram()
    add = added.add
    for v in values:
        add(v)
        recorded.record(v)
        if len(added.pending) >= FOLD_AT:
            added.fold()
    added.count = len(values)
    added.record(5, failed=True)
    recorded.record(5, failed=True)
    assert added.snapshot() == recorded.snapshot()
    assert added.buckets == recorded.buckets and not added.pending
    added.clear()
    add(2_000)
    assert added.snapshot()["count"] == 0 and added.percentile_ns(50) == 2_000 and added.timed == 1


def test_sampled_latencies_stand_for_the_calls_they_sample() -> None:
    """Once a histogram holds SAMPLE_FROM latencies, a fold sets the mask to time one call in
    SAMPLE_EVERY, and each latency added from then on stands for SAMPLE_EVERY calls: percentiles
    and the mean are those of every call, estimated; the maximum is that of the calls timed."""
    h = Histogram()
    for n in range(1, SAMPLE_FROM + 1):
        assert not n & h.mask  # every call timed, until the fold that reaches SAMPLE_FROM
        h.add(1_000)
        if len(h.pending) >= FOLD_AT:
            h.fold()
    assert h.mask == SAMPLE_EVERY - 1 and h.weight == SAMPLE_EVERY and h.timed == SAMPLE_FROM
    for _ in range(SAMPLE_FROM):  # as many calls again, slower: a sample of them is timed
        h.add(3_000)
    h.count = SAMPLE_FROM + SAMPLE_FROM * SAMPLE_EVERY
    h.latency(1_000_000)  # a call that waited: always timed, weight 1
    snap = h.snapshot()
    assert h.timed == SAMPLE_FROM * (1 + SAMPLE_EVERY) + 1
    slow = round(bucket_high(bucket_of(3_000)) / 1000, 1)  # the bucket 3,000 ns falls in
    assert snap["p50_us"] == snap["p90_us"] == slow and snap["max_us"] == 1000.0
    assert 1.0 <= h.percentile_ns(10) / 1000 <= 1.125
    expected_mean = (SAMPLE_FROM * 1_000 + SAMPLE_FROM * SAMPLE_EVERY * 3_000 + 1_000_000) / h.timed / 1000
    assert snap["mean_us"] == round(expected_mean, 1)
    h.clear()  # afresh: every call timed again
    assert (h.mask, h.weight, h.timed) == (0, 1, 0)


@given(st.lists(st.one_of(st.integers(min_value=0, max_value=40), st.integers(min_value=0, max_value=2**50)),
                min_size=1, max_size=3 * FOLD_AT // 2))
def test_a_fold_files_each_added_value_where_bucket_of_says(values: list[int]) -> None:
    """The sorted, bisected fold counts what a record per value counts: runs of one bucket, values
    on bucket edges, repeated values, a fold part way (FOLD_AT) and one at the end."""
    added, recorded = Histogram(), Histogram()
    for v in values:
        added.add(v)
        recorded.record(v)
        if len(added.pending) >= FOLD_AT:
            added.fold()
    added.fold()
    assert added.buckets == recorded.buckets
    assert (added.timed, added.total_ns, added.max_ns) == (recorded.timed, recorded.total_ns, recorded.max_ns)
