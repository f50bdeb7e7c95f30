"""The tree's nodes by inode and by UUID, and the inode numbers: stable keys (UUIDs, overlay
paths) mean the same inode for the life of the mount."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from ..protocol.types import InventoryItem
from .listed import Listed
from .nodes import ROOT_INODE, Folder, Item, Node, Orphan, StatChanged, release
from .tree_reports import TreeReports


class NodeRegistry:
    def __init__(self, reports: TreeReports, listed: Listed, kernel_knows: Callable[[int], bool]) -> None:
        self._reports = reports
        self._listed = listed  # an unbuilt folder's listing goes with it when it is detached
        # Whether the kernel holds a reference on an inode (the fs layer counts them): a detached
        # node it still knows stays reachable until forgotten() says otherwise.
        self._kernel_knows = kernel_knows
        self._inodes: dict[str, int] = {}
        self._next_inode = itertools.count(ROOT_INODE + 1)
        self.nodes: dict[int, Node] = {}
        self.root = Folder(inode=ROOT_INODE, uuid="", name="")
        self.nodes[ROOT_INODE] = self.root
        self.by_uuid: dict[str, Node] = {}  # every attached node (of the objects built)

    def inode_for(self, key: str) -> int:
        """The inode of a UUID (or any other stable key): the same for the life of the mount."""
        ino = self._inodes.get(key)
        if ino is None:
            ino = self._inodes[key] = next(self._next_inode)
        return ino

    def fresh_inode(self) -> int:
        return next(self._next_inode)

    def bind_key(self, key: str, inode: int) -> None:
        """Make `key` (a UUID, or another stable name such as a local path) mean `inode`."""
        self._inodes[key] = inode

    def unbind_key(self, key: str, inode: int) -> None:
        if self._inodes.get(key) == inode:
            del self._inodes[key]

    def rekey_prefix(self, old: str, new: str) -> list[tuple[str, int]]:
        """Keys equal to `old` or below `old + "/"` move under `new`; returns the new (key, inode)s."""
        moved = []
        for key, ino in list(self._inodes.items()):
            if key == old or key.startswith(old + "/"):
                del self._inodes[key]
                moved.append((new + key[len(old):], ino))
        self._inodes.update(moved)
        return moved

    def register(self, node: Node) -> None:
        self.nodes[node.inode] = node
        self.by_uuid[node.uuid] = node

    def add_item(self, folder: Folder, record: InventoryItem, created: int) -> Item:
        """A new item of `folder` (inode_for and register inlined: this runs once per item of a
        100,000-item load)."""
        item_id = record.item_id
        ino = self._inodes.get(item_id)
        if ino is None:
            ino = self._inodes[item_id] = next(self._next_inode)
        item = Item(inode=ino, uuid=item_id, parent=folder, ctime_ns=created, mtime_ns=created,
                    record=record, folder=folder)
        self.nodes[ino] = self.by_uuid[item_id] = item
        return item

    def add_node(self, node: Node) -> None:
        self.nodes[node.inode] = node
        self._reports.stat_changed(node)  # the inode may have meant another node

    def drop_node(self, inode: int) -> None:
        """The inode now means a node kept elsewhere (an overlay file that took it over)."""
        self.nodes.pop(inode, None)
        self._reports(StatChanged(inode))

    def move_to_fresh_inode(self, item: Item) -> None:
        """The item's inode went to another file (a rename over it): it takes a new one, unknown
        to the kernel."""
        fresh = self.fresh_inode()
        old = item.inode
        item.inode = fresh
        self.nodes[fresh] = item
        self._inodes[item.uuid] = fresh
        self._reports(StatChanged(old))

    def rebind(self, item: Item, inode: int) -> Orphan:
        """Give `item` the kernel inode `inode` (a file renamed or created onto its name).

        The inode the item had becomes an Orphan holding its last data, so open handles
        on it keep working but never reach the viewer."""
        old = item.inode
        orphan = Orphan(inode=old, uuid="", name=item.name,
                        data=bytearray(item.edit.buffer if item.edit.buffer is not None else item.cache.content or b""))
        self.nodes[old] = orphan
        item.inode = inode
        self.nodes[inode] = item
        self._inodes[item.uuid] = inode
        self._reports(StatChanged(old))
        self._reports.stat_changed(item)
        return orphan

    def detach(self, node: Node) -> None:
        """`node` and everything in it leave the tree; what the kernel does not know goes now."""
        node.move(None)
        if self.by_uuid.get(node.uuid) is node:
            del self.by_uuid[node.uuid]
        if isinstance(node, Folder):
            if not node.built:  # its listing goes with it, unread
                self._listed.unlist(node)
            for child in node.built_members():
                self.detach(child)
        if not self._kernel_knows(node.inode):
            self.nodes.pop(node.inode, None)
            release(node)

    def forgotten(self, inode: int) -> None:
        """The kernel no longer knows `inode`: its node goes if it is detached."""
        node = self.nodes.get(inode)
        if node is not None and not node.attached:
            # Detached and no longer known to the kernel: the inode number stays reserved.
            del self.nodes[inode]
            release(node)
