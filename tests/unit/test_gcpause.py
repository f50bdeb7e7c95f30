"""Pausing and freezing the cycle collector around large work (slfs/gcpause.py)."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from slfs.gcpause import paused_gc


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def garbage_cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()  # what a test froze goes back where the collector reaches it


def test_the_collector_is_off_in_the_block_and_as_it_was_after() -> None:
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block's pause holds
    assert gc.isenabled()


def test_freezing_after_collecting_the_young_frees_their_garbage_cycles() -> None:
    gc.collect()
    with paused_gc(freeze=True, young_first=True):
        dead = garbage_cycle()
        alive = Node()
    assert dead() is None  # collected, not frozen
    assert gc.get_freeze_count() > 0 and alive.other is None


def test_freezing_alone_keeps_a_garbage_cycle_out_of_reach() -> None:
    gc.collect()
    with paused_gc(freeze=True):
        kept = garbage_cycle()
    gc.collect()
    assert kept() is not None  # frozen: the price young_first avoids for a small block
    gc.unfreeze()
    gc.collect()
    assert kept() is None
