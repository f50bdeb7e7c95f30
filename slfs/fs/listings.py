"""What opendir hands readdir, and the folder listings kept between opendirs (a warm `find`).

A folder's listing is built once from the very mapping the tree holds (a relayout always replaces
it) and serves every opendir while that mapping stays, the model reports no change of the folder's
names and it has no overlay entries or new files. It also keeps the attributes it last answered
with, replayed while the handlers' shown epoch has not moved.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

import pyfuse3

from ..model.overlay import Overlay
from ..world.tree import EntryChanged, Folder, Invalidation, Node, OverlayNode, Tree


def is_dir(path: str) -> bool:
    """os.path.isdir, without raising and catching an exception for the usual answer: every listing
    of a folder asks whether it has an overlay directory, and nearly always it has none."""
    return os.access(path, os.F_OK) and os.path.isdir(path)


Reply = pyfuse3.EntryAttributes | None  # None: worked out on every answer


class Listing:
    """What opendir hands readdir: the names in listing order, encoded once, with each name's
    inode, or - a folder's own entries, kept between opendirs (Listings) - its node, whose inode
    is read when listed (an item's inode can move to another file).

    A folder's listing also keeps the attributes it last answered with (`replies`, None for an
    entry whose attributes are worked out each time) and the shown epoch they were worked out at:
    while nothing has changed since, readdir replays them (a warm `find`)."""

    __slots__ = ("encoded", "epoch", "folder", "inodes", "names", "nodes", "overlay", "overlay_epoch", "replies",
                 "size", "source")

    def __init__(self, rows: Sequence[tuple[str, int]]) -> None:
        self.names = [name for name, _ in rows]
        self.inodes = [inode for _, inode in rows]
        self.encoded = [os.fsencode(name) for name in self.names]
        self.folder: Folder | None = None
        self.nodes: list[Node] | None = None
        # A folder's listing: the very mapping it was built from (held, so never another's id).
        self.source: dict[str, Node] | None = None
        self.size = 0
        self.replies: list[Reply] | None = None
        self.epoch = -1
        # A folder's: the overlay directory it has no entries from, as of the shown epoch given.
        self.overlay: str | None = None
        self.overlay_epoch = -1

    @classmethod
    def of_folder(cls, folder: Folder) -> Listing:
        rows = sorted(folder.entries.items())
        listing = cls([])
        listing.names = [name for name, _ in rows]
        listing.encoded = [os.fsencode(name) for name in listing.names]
        listing.nodes = [node for _, node in rows]
        listing.folder, listing.source, listing.size = folder, folder.entries, len(folder.entries)
        return listing

    def __iter__(self) -> Iterator[tuple[str, int]]:
        """(name, inode) as listed."""
        if self.nodes is not None:
            return iter([(name, node.inode) for name, node in zip(self.names, self.nodes, strict=True)])
        return zip(self.names, self.inodes, strict=True)

    def replies_at(self, epoch: int, replayable: Callable[[Node], Reply]) -> list[Reply]:
        """A folder listing's attributes as of `epoch`: the ones kept, or worked out afresh."""
        replies = self.replies
        if replies is None or self.epoch != epoch:
            assert self.nodes is not None
            replies = self.replies = [replayable(node) for node in self.nodes]
            self.epoch = epoch
        return replies


class Listings:
    """The folder listings kept between opendirs, keyed by folder inode, and the overlay
    directory paths they are checked against."""

    def __init__(self, tree: Tree, overlay: Overlay) -> None:
        self.tree = tree
        self.overlay = overlay
        self.folders: dict[int, Listing] = {}  # folder inode -> its listing (of_folder)
        self._overlay_dirs: dict[int, tuple[str | None, Folder, str | None]] = {}

    def cached(self, inode: int, epoch: int) -> Listing | None:
        """The listing of folder `inode` if it still holds as of `epoch` (opendir's fast path)."""
        cached = self.folders.get(inode)
        if cached is None:
            return None
        folder = cached.folder
        if folder is not None and cached.overlay_epoch == epoch and folder.entries is cached.source \
                and not folder.new_files and self.tree.nodes.get(inode) is folder \
                and (cached.overlay is None or not is_dir(cached.overlay)):
            return cached
        return None

    def overlay_entries(self, node: Folder | OverlayNode, base: str) -> dict[str, int]:
        return {de.name: self.overlay.node(node, de.name, de.path).inode for de in os.scandir(base)}

    def of_folder(self, folder: Folder, epoch: int) -> Listing:
        """A folder's listing. Without overlay entries or new files - nearly always - it is the
        folder's entries alone, and the one built from them serves every opendir while the tree
        keeps that very mapping (a relayout always replaces it) and the model reports no change
        of the folder's names (`changed`)."""
        base = self._overlay_dir(folder)
        if (base is None or not is_dir(base)) and not folder.new_files:
            entries = folder.entries
            cached = self.folders.get(folder.inode)
            if cached is not None and cached.folder is folder and cached.source is entries \
                    and cached.size == len(entries):
                cached.overlay, cached.overlay_epoch = base, epoch
                return cached
            listing = Listing.of_folder(folder)
            # Its overlay directory's path is good while nothing changes (renames report).
            listing.overlay, listing.overlay_epoch = base, epoch
            if len(self.folders) > len(self.tree.nodes) // 4 + 1024:
                nodes = self.tree.nodes
                self.folders = {ino: c for ino, c in self.folders.items() if nodes.get(ino) is c.folder}
            self.folders[folder.inode] = listing
            return listing
        merged = self.overlay_entries(folder, base) if base is not None and is_dir(base) else {}
        merged.update({name: n.inode for name, n in folder.new_files.items()})
        merged.update({name: n.inode for name, n in folder.entries.items()})
        return Listing(sorted(merged.items()))

    def changed(self, inv: Invalidation) -> None:
        """A folder whose names or attributes changed lists afresh."""
        if self.folders:
            self.folders.pop(inv.parent if isinstance(inv, EntryChanged) else inv.inode, None)

    def _overlay_dir(self, node: Folder | OverlayNode) -> str | None:
        """overlay.dir_of, remembered per folder while the agent it is built for stays (building
        the path costs more than the rest of an opendir)."""
        if isinstance(node, OverlayNode):
            return node.path
        key = self.overlay.agent
        memo = self._overlay_dirs.get(node.inode)
        if memo is None or memo[0] != key or memo[1] is not node:
            memo = self._overlay_dirs[node.inode] = (key, node, self.overlay.dir_of(node))
        return memo[2]
