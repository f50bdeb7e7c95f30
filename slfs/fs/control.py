"""The hidden `.slfs/` control directory of every folder, and what lives in it.

`.slfs` is never listed (so ls -a, find, grep -r, cp -r and git never see it) but resolves by
explicit path. At the mount root it holds `status` and `by-id/`; in every folder it holds one
sidecar per item file (`F.diag`; scripts also `F.state` and `F.log`).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator

import attrs

from ..model import names
from ..model.tree import ROOT_INODE, Folder, Item, Node, Tree
from ..model.workspace import Workspace

DIR, FILE, LINK = "dir", "file", "link"


@attrs.define(eq=False)
class Virtual:
    """A node slfs makes up: a control directory, a status or sidecar file, a by-id link."""

    inode: int
    kind: str
    name: str
    parent_inode: int
    folder: Folder | None = None  # the folder whose control directory this belongs to
    render: Callable[[], bytes] | None = None
    writer: Callable[[bytes], Awaitable[None]] | None = None
    target: Callable[[], str | None] | None = None
    lookups: int = 0
    # Growing files (events, logs) bypass the page cache so tail -f sees new lines.
    direct_io: bool = False


class Control:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.tree: Tree = ws.tree
        self.nodes: dict[int, Virtual] = {}
        self.sidecars: dict[str, Callable[[Item], Virtual | None]] = {}
        self.root_files: dict[str, Callable[[int], Virtual]] = {
            "status": lambda parent: self._file(parent, "status", self._render_status),
            "by-id": lambda parent: self._dir(parent, "by-id", "byid"),
        }

    # --- node construction ---------------------------------------------------------------

    def _get(self, key: str, make: Callable[[int], Virtual]) -> Virtual:
        ino = self.tree.inode_for(key)
        node = self.nodes.get(ino)
        if node is None:
            node = self.nodes[ino] = make(ino)
        return node

    def _file(self, parent: int, name: str, render: Callable[[], bytes], *, direct_io: bool = False,
              writer: Callable[[bytes], Awaitable[None]] | None = None) -> Virtual:
        return self._get(f"ctl:{parent}:{name}", lambda ino: Virtual(
            ino, FILE, name, parent, render=render, writer=writer, direct_io=direct_io))

    def _dir(self, parent: int, name: str, role: str, folder: Folder | None = None) -> Virtual:
        return self._get(f"ctl:{parent}:{name}", lambda ino: Virtual(ino, role, name, parent, folder=folder))

    def control_dir(self, folder: Folder) -> Virtual:
        return self._dir(folder.inode, names.CONTROL_DIR, DIR, folder)

    def file_node(self, parent: int, name: str, render: Callable[[], bytes], *, direct_io: bool = False,
                  writer: Callable[[bytes], Awaitable[None]] | None = None) -> Virtual:
        """For the layers that add sidecars and root files."""
        return self._file(parent, name, render, direct_io=direct_io, writer=writer)

    def dir_node(self, parent: int, name: str, role: str) -> Virtual:
        return self._dir(parent, name, role)

    # --- lookups ---------------------------------------------------------------------------

    def lookup(self, vdir: Virtual, name: str) -> Virtual | None:
        return next((v for v in self._children(vdir, only=name)), None)

    def children(self, vdir: Virtual) -> list[Virtual]:
        return list(self._children(vdir, only=None))

    def _children(self, vdir: Virtual, only: str | None) -> Iterator[Virtual]:
        if vdir.kind == DIR and vdir.folder is not None:
            folder = vdir.folder
            if folder.inode == ROOT_INODE:
                for name, make in self.root_files.items():
                    if only is None or only == name:
                        yield make(vdir.inode)
            for file_name, node in list(folder.entries.items()):
                if not isinstance(node, Item):
                    continue
                for suffix, make_sidecar in self.sidecars.items():
                    full = f"{file_name}.{suffix}"
                    if only is not None and only != full:
                        continue
                    side = make_sidecar(node)
                    if side is not None:
                        yield side
        elif vdir.kind == "byid":
            if only is not None:
                node = self.tree.by_uuid.get(only)
                if node is not None:
                    yield self._link(vdir.inode, node)
                return
            for node in list(self.tree.by_uuid.values()):
                yield self._link(vdir.inode, node)
        elif vdir.kind not in (FILE, LINK):
            extra = getattr(self, f"_children_{vdir.kind}", None)
            if extra is not None:
                yield from extra(vdir, only)

    def _link(self, parent: int, node: Node) -> Virtual:
        uuid = node.uuid
        return self._get(f"byid:{uuid}", lambda ino: Virtual(
            ino, LINK, uuid, parent, target=lambda: self._by_id_target(uuid)))

    def _by_id_target(self, uuid: str) -> str | None:
        node = self.tree.by_uuid.get(uuid)
        if node is None or not node.attached:
            return None
        # Relative to MOUNT/.slfs/by-id/.
        return os.path.join("..", "..", self.tree.path_of(node))

    def forget(self, inode: int, count: int) -> None:
        node = self.nodes.get(inode)
        if node is not None:
            node.lookups = max(0, node.lookups - count)

    # --- content ----------------------------------------------------------------------------

    def _render_status(self) -> bytes:
        lines = []
        for key, value in self.ws.status().items():
            text = " ".join(str(value).split())  # one line per key, always
            lines.append(f"{key}: {text}")
        return ("\n".join(lines) + "\n").encode()
