"""What the tree tells the file system layer: each name or inode whose cached copy in the kernel
may be stale, except what an object folder being built changes (the kernel never saw it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .nodes import EntryChanged, Folder, InodeChanged, Invalidation, Item, Node, StatChanged


class TreeReports:
    def __init__(self, on_invalidate: Callable[[Invalidation], None]) -> None:
        self._report = on_invalidate
        self._building: int | None = None  # the inode of the object folder being built

    def __call__(self, change: Invalidation) -> None:
        # A folder being built shows the kernel nothing new: it never saw what was not built (a
        # read of it builds it first), and its own attributes are the listing's.
        if self._building is None or isinstance(change, EntryChanged) or change.inode != self._building:
            self._report(change)

    @contextmanager
    def building(self, folder: Folder) -> Iterator[None]:
        """While `folder` is built, what it reports of itself is not passed on."""
        outer, self._building = self._building, folder.inode
        try:
            yield
        finally:
            self._building = outer

    def entry(self, folder: Folder, name: str) -> None:
        """A name the kernel may have cached in `folder` means something else now (or nothing)."""
        self(EntryChanged(folder.inode, name))

    def item(self, item: Item, *, data: bool) -> None:
        self(InodeChanged(item.inode, data=data))

    def stat_changed(self, node: Node) -> None:
        """A change of what stat shows of `node` that the kernel has no copy of (StatChanged)."""
        self(StatChanged(node.inode))

    def touch(self, node: Node) -> None:
        self(InodeChanged(node.inode, data=False))
