"""The handler wrapper (slfs/fs/guarded.py): exact counts, errno answers, and the latencies it
times - every call at first, then every call that waits and a sample of those answered at once."""

from __future__ import annotations

import errno
import time
from collections.abc import Coroutine, Iterator
from typing import Any

import pyfuse3
import pytest

from slfs.fs.guarded import bind_handlers, guarded_sync
from slfs.stats import SAMPLE_EVERY, SAMPLE_FROM, Histogram, Stats
from slfs.world.fs_errors import FsError, NameRefused

NAME = "guarded_test_handler"  # a name no real handler has: its histogram is removed afterwards
STATS = Stats()  # the handlers' (a mount's is built with its services)


class Handlers:
    shown_epoch = 0

    def __init__(self) -> None:
        self.explained: list[tuple[str, str]] = []
        bind_handlers(self, STATS)

    def waited(self) -> None:  # as Operations.waited
        self.shown_epoch += 1

    @guarded_sync
    def guarded_test_handler(self, kind: int) -> Any:
        if kind == 0:
            return "at once"
        if kind == 1:
            raise FsError(errno.ENOENT, "")
        if kind == 2:
            return self._wait()
        if kind == 4:
            raise NameRefused(errno.EILSEQ, "'é': in-world names are printable ASCII; 'é' is not")
        if kind == 5:
            raise FsError(errno.EINVAL, "an error the errno explains")
        raise RuntimeError("a bug")

    def explain(self, handler: str, exc: FsError) -> None:
        self.explained.append((handler, exc.message))

    async def _wait(self) -> str:
        time.sleep(0.002)  # a wait the clock can see, inside the coroutine the wrapper awaits
        return "waited"


def call(h: Handlers, kind: int) -> Any:
    """Run one call to its end (nothing in these handlers suspends)."""
    coro: Coroutine[Any, Any, Any] = h.guarded_test_handler(kind)
    with pytest.raises(StopIteration) as done:
        coro.send(None)
    return done.value.value


@pytest.fixture
def hist() -> Iterator[Histogram]:
    h = STATS.handler(NAME)  # the histogram every Handlers() binds
    h.clear()
    yield h
    h.clear()


@pytest.fixture(scope="module", autouse=True)
def _no_test_handler_in_the_stats() -> Iterator[None]:
    yield
    STATS.fuse.pop(NAME, None)


def test_every_call_is_counted_and_a_sample_timed(hist: Histogram) -> None:
    h = Handlers()
    calls = 3 * SAMPLE_FROM
    for _ in range(calls):
        assert call(h, 0) == "at once"
    snap = hist.snapshot()
    assert snap["count"] == calls and snap["errors"] == 0
    # all of the first SAMPLE_FROM, then one in SAMPLE_EVERY, each standing for SAMPLE_EVERY
    assert abs(hist.timed - calls) < SAMPLE_EVERY
    assert hist.weight == SAMPLE_EVERY and hist.mask == SAMPLE_EVERY - 1
    assert 0 < snap["p50_us"] <= snap["p99_us"] <= snap["max_us"]
    assert h.shown_epoch == 0  # nothing waited


def test_errors_are_counted_whether_timed_or_not(hist: Histogram) -> None:
    h = Handlers()
    for _ in range(SAMPLE_FROM):  # past the first SAMPLE_FROM: sampling from here on
        call(h, 0)
    hist.snapshot()
    assert hist.mask
    for _ in range(100):
        with pytest.raises(pyfuse3.FUSEError) as err:
            call(h, 1)
        assert err.value.errno == errno.ENOENT
    with pytest.raises(pyfuse3.FUSEError) as err:
        call(h, 3)
    assert err.value.errno == errno.EIO
    snap = hist.snapshot()
    assert snap["count"] == SAMPLE_FROM + 101 and snap["errors"] == 101


def test_every_wait_is_timed(hist: Histogram) -> None:
    """A call that waits (a save, a fetch) is timed whatever its count, weight 1: its latency
    is in the maximum, and it moves shown_epoch."""
    h = Handlers()
    for _ in range(SAMPLE_FROM):
        call(h, 0)
    hist.snapshot()
    assert hist.weight == SAMPLE_EVERY
    timed = hist.timed
    for _ in range(SAMPLE_EVERY):  # whichever of them the sample would have taken
        assert call(h, 2) == "waited"
    snap = hist.snapshot()
    assert hist.timed == timed + SAMPLE_EVERY
    assert snap["max_us"] >= 2000 and snap["count"] == SAMPLE_FROM + SAMPLE_EVERY
    assert h.shown_epoch == SAMPLE_EVERY


def test_a_stats_read_within_a_call_keeps_the_weights_right(hist: Histogram) -> None:
    """A call that reads the stats (a `.slfs/stats` open folds every histogram, its own too) may
    start the sampling while it runs: its latency is filed only if the call is one the new mask
    times, so the timed total still stands for the calls made."""

    class Reading:
        shown_epoch = 0

        @guarded_sync
        def guarded_test_handler(self, kind: int) -> str:
            hist.snapshot()
            return "read"

    r = Reading()
    bind_handlers(r, STATS)
    for _ in range(3 * SAMPLE_FROM):
        call(r, 0)  # type: ignore[arg-type]
    hist.snapshot()
    assert hist.count == 3 * SAMPLE_FROM and abs(hist.timed - hist.count) < SAMPLE_EVERY


def test_an_error_its_errno_does_not_explain_goes_to_explain(hist: Histogram) -> None:
    """A name the viewer cannot hold: the handlers' object says why (status, log, event); other
    errors only the log line."""
    h = Handlers()
    with pytest.raises(pyfuse3.FUSEError) as err:
        call(h, 4)
    assert err.value.errno == errno.EILSEQ
    assert h.explained == [(NAME, "'é': in-world names are printable ASCII; 'é' is not")]
    with pytest.raises(pyfuse3.FUSEError) as err:
        call(h, 5)
    assert err.value.errno == errno.EINVAL and len(h.explained) == 1
