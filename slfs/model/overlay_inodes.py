"""The inodes of the local overlay's files: each keyed by its path on disk, except that the names of
one disk file (hard links: `ln`, git's objects) share one inode, as the kernel expects: a link's
reply carries the inode of its target, and only then do `stat` of every name, and what is written
through one name, agree at once. Such a node works through the name it was last looked up by, and
removing that name moves it to another name the file still has, so it never points at a removed
path."""

from __future__ import annotations

import os
import stat

from ..world.tree import Folder, Node, OverlayNode, Tree

KEY_PREFIX = "local:"


class OverlayInodes:
    def __init__(self, tree: Tree) -> None:
        self._tree = tree
        # Hard links: the inode of each non-directory by its disk identity (st_dev, st_ino), and the
        # paths (and their parents) known for an inode whose file has several names.
        self._by_disk: dict[tuple[int, int], int] = {}
        self._disk_of: dict[int, tuple[int, int]] = {}
        self._names: dict[int, dict[str, Node]] = {}

    def node(self, parent: Node, name: str, path: str, st: os.stat_result | None = None) -> OverlayNode:
        key = KEY_PREFIX + path
        ino = self._inode(parent, key, path, st)
        node = self._tree.node(ino)
        if not isinstance(node, OverlayNode):
            node = OverlayNode(inode=ino, uuid=key, name=name, path=path, overlay_parent=parent)
            self._tree.add_node(node)
        node.uuid, node.path, node.overlay_parent = key, path, parent
        node.rename(name)
        return node

    def _inode(self, parent: Node, key: str, path: str, st: os.stat_result | None) -> int:
        """The path's own inode, or for another name of a file that has one, that file's inode."""
        if st is None:
            try:
                st = os.lstat(path)
            except OSError:
                return self._tree.inode_for(key)
        if stat.S_ISDIR(st.st_mode):
            return self._tree.inode_for(key)
        disk = (st.st_dev, st.st_ino)
        ino = self._by_disk.get(disk)
        node = self._tree.node(ino) if ino is not None else None
        if ino is None or not (isinstance(node, OverlayNode) and _same_file(node.path, disk)):
            # The first name seen of this file, or its inode was forgotten (or the disk inode
            # number reused by another file): the path's own inode.
            ino = self._tree.inode_for(key)
            node = self._tree.node(ino)
        self._by_disk[disk] = ino
        self._disk_of[ino] = disk
        if st.st_nlink > 1:
            self._tree.bind_key(key, ino)
            names = self._names.setdefault(ino, {})
            if isinstance(node, OverlayNode) and node.overlay_parent is not None:
                names.setdefault(node.path, node.overlay_parent)
            names[path] = parent
        return ino

    def moved(self, old_path: str, new_path: str) -> None:
        """After a rename on disk, the node (and for a directory everything below) follows."""
        for key, ino in self._tree.rekey_prefix(KEY_PREFIX + old_path, KEY_PREFIX + new_path):
            path = key[len(KEY_PREFIX):]
            before = old_path + path[len(new_path):]
            names = self._names.get(ino)
            if names is not None and before in names:
                names[path] = names.pop(before)
            node = self._tree.node(ino)
            # A file with several names keeps working through its other name if that one is current.
            if isinstance(node, OverlayNode) and (names is None or node.path == before):
                node.uuid, node.path = key, path

    def adopt_inode(self, path: str, inode: int) -> None:
        """A file becoming overlay content at `path` keeps the kernel inode it had."""
        self._tree.bind_key(KEY_PREFIX + path, inode)

    def removed(self, node: OverlayNode) -> None:
        """The name `node.path` is gone: a new file at that path must get a new inode. A file that
        still has other names lives on under one of them."""
        self._tree.unbind_key(node.uuid, node.inode)
        names = self._names.pop(node.inode, {})
        names.pop(node.path, None)
        disk = self._disk_of.get(node.inode)
        others = {p: parent for p, parent in names.items() if disk is not None and _same_file(p, disk)}
        if others and self._tree.node(node.inode) is node:
            path, parent = next(iter(others.items()))
            node.uuid, node.path = KEY_PREFIX + path, path
            node.rename(os.path.basename(path))
            node.overlay_parent = parent
            if len(others) > 1:
                self._names[node.inode] = others
            return
        # Its last name, or the inode went to an item (an overlay file renamed onto an item's
        # name): other names of the file are looked up afresh, as a file of their own.
        for path, parent in others.items():
            self._tree.unbind_key(KEY_PREFIX + path, node.inode)
            if isinstance(parent, Folder):
                self._tree.invalidate_entry(parent, os.path.basename(path))
        if disk is not None and self._by_disk.get(disk) == node.inode:
            del self._by_disk[disk]
        self._disk_of.pop(node.inode, None)
        node.overlay_parent = None


def _same_file(path: str, disk: tuple[int, int]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == disk
