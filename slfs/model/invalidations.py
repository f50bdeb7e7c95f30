"""Kernel cache invalidations waiting to be sent, merged.

The tree reports every name and inode whose cached copy may be stale; a reconnect with 100,000
items can report each many times. Pending ones are kept as a set: an inode is queued once however
often it changes (a content change wins over an attribute-only one), a name once per folder, and the
file system layer takes them in batches from its background task.
"""

from __future__ import annotations

import trio

from ..world.tree import EntryChanged, InodeChanged, Invalidation, StatChanged
from .services import Broadcast


class PendingInvalidations:
    def __init__(self, fanout: Broadcast | None = None) -> None:
        self._entries: dict[tuple[int, str], None] = {}
        self._inodes: dict[int, bool] = {}  # inode -> whether cached pages are stale too
        self._ready = trio.Event()
        # Its listeners are told each report as it is made, before it is merged (the fs layer's
        # attribute and listing caches), StatChanged reports included, which go no further.
        self._fanout = fanout or Broadcast()

    def __len__(self) -> int:
        return len(self._entries) + len(self._inodes)

    def add(self, inv: Invalidation) -> None:
        for listener in self._fanout.listeners:
            listener(inv)
        if isinstance(inv, StatChanged):
            return  # nothing for the kernel
        if isinstance(inv, EntryChanged):
            self._entries[(inv.parent, inv.name)] = None
        else:
            self._inodes[inv.inode] = self._inodes.get(inv.inode, False) or inv.data
        self._ready.set()

    def take_now(self) -> list[Invalidation]:
        """Everything pending, oldest first (names before inodes), and the set emptied."""
        out: list[Invalidation] = [EntryChanged(parent, name) for parent, name in self._entries]
        out += [InodeChanged(inode, data=data) for inode, data in self._inodes.items()]
        self._entries.clear()
        self._inodes.clear()
        self._ready = trio.Event()
        return out

    async def take(self) -> list[Invalidation]:
        """Wait until something is pending, then take it all."""
        while not self:
            await self._ready.wait()
        return self.take_now()
