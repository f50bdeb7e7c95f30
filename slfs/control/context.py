"""What every group of control requests works with: the model's services, and a path named in a
request resolved to its node. Resolving is pure string handling: a stat of the mount from inside
the daemon would wait on the daemon itself."""

from __future__ import annotations

import errno
import os
from collections.abc import Awaitable, Callable
from typing import Any

from ..local.events import EventLog
from ..model.scripts import Scripts
from ..model.workspace import Workspace
from ..model.writes import Writer
from ..stats import Stats
from ..world.fs_errors import FsError
from ..world.tree import ROOT_INODE, Folder, Item, Node

Handler = Callable[[Any], Awaitable[Any]]
# Each command: the record its parameters are structured into (requests.py), its handler.
Commands = dict[str, tuple[type, Handler]]


class MountContext:
    def __init__(self, ws: Workspace, scripts: Scripts, writer: Writer, events: EventLog, stats: Stats) -> None:
        self.ws = ws
        self.tree = ws.tree
        self.scripts = scripts  # state changes and diagnostics are the model's
        self.writer = writer  # and so are saves and builds
        self.events = events
        self.stats = stats  # the mount's, for `stats`

    def resolve(self, path: Any) -> Node:
        """A path in the mount (absolute, or relative to it) -> its node."""
        if not isinstance(path, str) or not path:
            raise FsError(errno.EINVAL, "a path is required")
        mount = self.ws.mountpoint.rstrip("/")
        norm = os.path.normpath(path)
        if os.path.isabs(norm):
            if norm != mount and not norm.startswith(mount + "/"):
                raise FsError(errno.EINVAL, f"{path} is not inside the mount {mount}")
            rel = norm[len(mount):].lstrip("/")
        else:
            rel = norm if norm != "." else ""
        node: Node = self.tree.root
        for part in filter(None, rel.split("/")):
            if not isinstance(node, Folder) or part not in node.entries:
                raise FsError(errno.ENOENT, f"{path}: no such item or prim")
            node = node.entries[part]
        return node

    def item(self, path: Any) -> Item:
        node = self.resolve(path)
        if not isinstance(node, Item):
            raise FsError(errno.EISDIR, f"{path}: not an item file")
        return node

    def object_of(self, path: Any) -> Folder:
        """The object folder that holds `path`."""
        node = self.resolve(path)
        while node is not None and not (isinstance(node, Folder) and node.parent is self.tree.root):
            node = node.parent  # type: ignore[assignment]
        if node is None or node.inode == ROOT_INODE:
            raise FsError(errno.EINVAL, f"{path}: not inside an object folder")
        assert isinstance(node, Folder)
        return node

    def describe(self, node: Node) -> dict[str, Any]:
        return {"path": self.scripts.abspath(node), "uuid": node.uuid}

    def items_under(self, node: Node) -> list[Item]:
        if isinstance(node, Folder):
            return self.tree.items_in(node)
        prefix = self.tree.path_of(node)
        return [i for i in self.tree.iter_items() if not prefix or self.tree.path_of(i).startswith(prefix + "/")]
