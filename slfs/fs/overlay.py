"""The local overlay: dot and temp files, `.git/`, `.vscode/`... kept on disk beside the remote
items of a folder, and passed through as they are.

Overlay nodes are keyed by their path on disk, not by the disk inode: hard links (git's objects)
get inodes of their own, so unlinking one name never leaves another pointing at a removed path.
"""

from __future__ import annotations

import errno
import os

from ..model.errors import FsError
from ..model.tree import Folder, Local, Node, Tree
from ..model.writes import Writer

KEY_PREFIX = "local:"


class Overlay:
    def __init__(self, tree: Tree, writer: Writer) -> None:
        self.tree = tree
        self.writer = writer

    def dir_of(self, parent: Node) -> str | None:
        """The disk directory holding `parent`'s overlay entries (None where there is none)."""
        if isinstance(parent, Local):
            return parent.path
        if isinstance(parent, Folder):
            return str(self.writer.overlay_dir(parent))
        return None

    def find(self, parent: Node, name: str) -> Local | None:
        base = self.dir_of(parent)
        if base is None:
            return None
        path = os.path.join(base, name)
        try:
            os.lstat(path)
        except OSError:
            return None
        return self.node(parent, name, path)

    def node(self, parent: Node, name: str, path: str) -> Local:
        key = KEY_PREFIX + path
        ino = self.tree.inode_for(key)
        node = self.tree.node(ino)
        if not isinstance(node, Local):
            node = Local(inode=ino, uuid=key, name=name, path=path, local_parent=parent)
            self.tree.add_node(node)
        node.name, node.local_parent = name, parent
        return node

    def moved(self, old_path: str, new_path: str) -> None:
        """After a rename on disk, the node (and for a directory everything below) follows."""
        for key, ino in self.tree.rekey_prefix(KEY_PREFIX + old_path, KEY_PREFIX + new_path):
            node = self.tree.node(ino)
            if isinstance(node, Local):
                node.uuid, node.path = key, key[len(KEY_PREFIX):]

    def bind(self, path: str, inode: int) -> None:
        """A file becoming overlay content at `path` keeps the kernel inode it had."""
        self.tree.bind_key(KEY_PREFIX + path, inode)

    def removed(self, node: Local) -> None:
        """The disk file is gone: a new file at that path must get a new inode."""
        self.tree.unbind_key(node.uuid, node.inode)
        node.local_parent = None

    def ensure(self, parent: Node) -> str:
        base = self.dir_of(parent)
        if base is None:
            raise FsError(errno.EPERM, "")
        os.makedirs(base, mode=0o755, exist_ok=True)
        return base
