"""The kernel's lookup counts, keyed by inode.

The kernel counts references per inode (lookup, create and readdirplus add one, forget removes
some), so the count stays with the inode number whatever node the model puts behind it: a rename
over a file, a file moved to the overlay or a live file saved from a temp file need no hand copy.
The fs layer owns the table; the model only asks `knows(inode)` (given to the Tree at
construction) when it decides whether a detached node can be freed.
"""

from __future__ import annotations

from ..world.nodes import ROOT_INODE


class Lookups:
    def __init__(self) -> None:
        self._counts: dict[int, int] = {}

    def add(self, inode: int) -> None:
        self._counts[inode] = self._counts.get(inode, 0) + 1

    def forget(self, inode: int, count: int) -> bool:
        """Remove `count` references; true when the kernel no longer knows the inode."""
        left = self._counts.pop(inode, 0) - count
        if left > 0:
            self._counts[inode] = left
            return False
        return True

    def knows(self, inode: int) -> bool:
        return inode in self._counts

    def total(self) -> int:
        """Sum of the kernel's references on everything but the root (`.slfs/status` kernel_refs)."""
        return sum(self._counts.values()) - self._counts.get(ROOT_INODE, 0)
