"""Pending kernel invalidations are merged: an inode once however often it changes."""

from __future__ import annotations

import trio
import trio.testing

from slfs.model.invalidations import PendingInvalidations
from slfs.world.tree import EntryChanged, InodeChanged


def test_merged() -> None:
    p = PendingInvalidations()
    for _ in range(1000):
        p.add(InodeChanged(5, data=False))
        p.add(EntryChanged(1, "Box"))
    p.add(InodeChanged(5, data=True))  # a content change wins over attribute-only ones
    p.add(InodeChanged(5, data=False))
    p.add(InodeChanged(6, data=False))
    assert len(p) == 3
    assert p.take_now() == [EntryChanged(1, "Box"), InodeChanged(5, data=True), InodeChanged(6, data=False)]
    assert len(p) == 0 and p.take_now() == []


async def test_take_waits_for_the_next_change() -> None:
    p = PendingInvalidations()
    got: list[object] = []

    async def consumer() -> None:
        got.extend(await p.take())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(consumer)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        p.add(InodeChanged(7))
    assert got == [InodeChanged(7)]
