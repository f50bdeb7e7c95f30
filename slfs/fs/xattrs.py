"""getxattr, listxattr, setxattr and removexattr: only the user.sl.* names exist (Attributes.xattrs
says what each node has); what a write of one may do is the model's (model/attribute_writes.py)."""

from __future__ import annotations

import errno

from ..model import attribute_writes
from ..world.fs_errors import FsError
from ..world.tree import Node, Tree
from .attributes import XATTR_PREFIX, Attributes
from .virtual import Virtual

AnyNode = Node | Virtual


class ExtendedAttributes:
    def __init__(self, tree: Tree, attributes: Attributes) -> None:
        self.tree = tree
        self.attributes = attributes

    @staticmethod
    def readable(name: str) -> str:
        """`name`, if a getxattr of it may find anything (checked before the node is looked up)."""
        if name.startswith("system.posix_acl_"):
            raise FsError(errno.EOPNOTSUPP, "")  # otherwise ls shows a '+' on every file
        if not name.startswith(XATTR_PREFIX):
            raise FsError(errno.ENODATA, "")  # security.capability is asked before every write
        return name

    @staticmethod
    def writable(name: str) -> str:
        """`name`, if a setxattr of it may be kept (checked before the node is looked up)."""
        if name.startswith("system.posix_acl_"):
            raise FsError(errno.EOPNOTSUPP, "")
        if not name.startswith(XATTR_PREFIX):
            raise FsError(errno.ENOTSUP, "")
        return name

    def get(self, node: AnyNode, name: str) -> bytes:
        value = self.attributes.xattrs(node).get(name)
        if value is None:
            raise FsError(errno.ENODATA, "")
        return value

    def names(self, node: AnyNode | None) -> list[bytes]:
        return [] if node is None else [k.encode() for k in self.attributes.xattrs(node)]

    def set(self, node: AnyNode, name: str, value: bytes) -> None:
        attribute_writes.set_attribute(node, self._shown(node), self.attributes.xattrs(node), name, value)

    def remove(self, node: AnyNode, name: str) -> None:
        attribute_writes.remove_attribute(node, self._shown(node), self.attributes.xattrs(node), name)

    def _shown(self, node: AnyNode) -> str:
        return self.tree.path_of(node) if isinstance(node, Node) else ".slfs"
