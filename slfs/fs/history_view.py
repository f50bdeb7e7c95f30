"""The history view, read-only: `FOLDER/.slfs/history/FILE/VERSION` and
`MOUNT/.slfs/history/by-id/ITEM_ID/VERSION`, translated from the model's history
(model/history.py decides the names: UTC time and origin, `2026-12-02T14:03:07Z.saved.lsl`).

Each version file's size and mtime are the version's; its text is read from the store in a thread
when the file is opened (Virtual.prepare), and kept for the open in a small cache by digest.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator

from ..local.history_store import Version
from ..model.history import History
from ..protocol.ids import is_uuid
from ..world.tree import ROOT_INODE, Item, Tree
from .virtual import FILE, HIST_BY_ID, HIST_DIR, HIST_ITEM, HIST_ROOT, Virtual, folder_now

HISTORY = "history"
BY_ID = "by-id"
CACHE_BYTES = 8 << 20  # texts kept for open version files (each open reads its own copy at once)


class HistoryView:
    def __init__(self, history: History, tree: Tree, get: Callable[[str, Callable[[int], Virtual]], Virtual]) -> None:
        self.history = history
        self.tree = tree
        self._get = get  # Control._get: one Virtual per key, its inode stable for the mount's life
        self._texts: OrderedDict[str, bytes] = OrderedDict()
        self._text_bytes = 0

    def dir_for(self, control_dir: Virtual) -> Virtual:
        """`.slfs/history` in a folder's control directory (at the root: by-id/ only)."""
        folder = control_dir.folder_inode
        root = folder is None or folder == ROOT_INODE
        return self._get(f"hist:{control_dir.inode}", lambda ino: Virtual(
            ino, HIST_ROOT if root else HIST_DIR, HISTORY, control_dir.inode, folder_inode=folder, steady=True))

    def children(self, vdir: Virtual, only: str | None) -> Iterator[Virtual]:
        if vdir.kind == HIST_ROOT:
            if only in (None, BY_ID):
                yield self._get(f"hist:byid:{vdir.inode}",
                                lambda ino: Virtual(ino, HIST_BY_ID, BY_ID, vdir.inode, steady=True))
        elif vdir.kind == HIST_DIR and (folder := folder_now(self.tree, vdir)) is not None:
            shown = {name: node.uuid for name, node in list(folder.entries.items()) if isinstance(node, Item)}
            for name, item_id in self.history.item_dirs(folder.uuid, shown).items():
                if only is None or only == name:
                    yield self._item_dir(vdir, name, item_id)
        elif vdir.kind == HIST_BY_ID:
            if only is not None:
                # Only a UUID names a directory, and only one the store or the tree knows.
                if is_uuid(only) and (isinstance(self.tree.find(only), Item)
                                      or self.history.versions_of(only)):
                    yield self._item_dir(vdir, only, only)
                return
            for item_id in self.history.item_ids():
                yield self._item_dir(vdir, item_id, item_id)
        elif vdir.kind == HIST_ITEM:
            files = self.history.version_files(vdir.ref)
            if only is not None:
                found = files.get(only)
                if found is not None:
                    yield self._version_file(vdir, only, *found)
                return
            for name, (version, inworld) in files.items():
                yield self._version_file(vdir, name, version, inworld)

    def _item_dir(self, parent: Virtual, name: str, item_id: str) -> Virtual:
        node = self._get(f"hist:item:{parent.inode}:{item_id}", lambda ino: Virtual(
            ino, HIST_ITEM, name, parent.inode, folder_inode=parent.folder_inode, ref=item_id, steady=True))
        node.rename(name)  # follows a rename of the item
        return node

    def _version_file(self, parent: Virtual, name: str, version: Version, inworld: bool) -> Virtual:
        digest = version.inworld if inworld and version.inworld is not None else version.digest
        size = version.size if not inworld else self.history.blob_size(digest)

        def render() -> bytes:
            return self._texts.get(digest, b"")

        async def prepare() -> None:
            if digest in self._texts:
                self._texts.move_to_end(digest)
                return
            data = await self.history.blob(digest)
            self._keep(digest, data if data is not None else b"")

        node = self._get(f"hist:ver:{parent.inode}:{version.id}:{int(inworld)}", lambda ino: Virtual(
            ino, FILE, name, parent.inode, render=render, size=size, mtime_ns=int(version.at * 1e9), steady=True))
        node.prepare_with(prepare)
        node.rename(name)
        return node

    def _keep(self, digest: str, data: bytes) -> None:
        self._texts[digest] = data
        self._text_bytes += len(data)
        while self._text_bytes > CACHE_BYTES and len(self._texts) > 1:
            _old, dropped = self._texts.popitem(last=False)
            self._text_bytes -= len(dropped)


