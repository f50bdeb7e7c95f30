"""The control socket's history requests (server.py registers them):

- `history {path}`: the versions of the item at `path`, newest first. `path` may name an item
  that is gone (deleted, renamed away) by the name its folder's `.slfs/history/` shows, or a
  version file under `.slfs/history/`.
- `history {path, deleted: true}`: the items gone from the object (or prim) at `path` whose
  history the store holds, each restorable by its name.
- `restore {path, version}`: save a version into the item as a save through the file would be
  (diagnostics, events, ESTALE when it changed in-world since the mount showed it); a gone item
  is created again in its prim under its name. Without `version`: the newest version whose text
  differs from what the item holds now.
"""

from __future__ import annotations

import errno
import os
from typing import Any

import attrs

from ..local.history_store import Version, digest_of
from ..model.history import History, current_version_name
from ..world.fs_errors import FsError
from ..world.names import CONTROL_DIR
from ..world.tree import Folder, Item
from .context import Commands, MountContext

FLUSH_WAIT = 5.0  # what was seen just before the request is in the store before it is answered


@attrs.frozen(kw_only=True)
class HistoryParams:
    path: str | None = None
    deleted: bool = False


@attrs.frozen(kw_only=True)
class RestoreParams:
    path: str | None = None
    version: str | None = None  # a version's name, a prefix of it, or its id


@attrs.frozen
class _Target:
    item: Item | None  # the item when it is in the mount now
    folder: Folder  # the folder its history is listed in
    name: str  # its name there
    item_id: str
    version: str | None = None  # a version file named in the path


class HistoryRequests:
    def __init__(self, ctx: MountContext) -> None:
        self.ctx = ctx
        self.ws = ctx.ws

    def register(self, commands: Commands) -> None:
        commands.update(history=(HistoryParams, self.history), restore=(RestoreParams, self.restore))

    @property
    def store(self) -> History:
        return self.ws.history

    def _split(self, path: Any) -> tuple[str, str | None, str | None]:
        """`DIR/.slfs/history/NAME[/VERSION]` -> (DIR/NAME, VERSION, None); anything else as it is."""
        if not isinstance(path, str) or not path:
            raise FsError(errno.EINVAL, "a path is required")
        parts = os.path.normpath(path).split("/")
        for i in range(len(parts) - 2):
            if parts[i] == CONTROL_DIR and parts[i + 1] == "history" and len(parts) in (i + 3, i + 4):
                version = parts[i + 3] if len(parts) == i + 4 else None
                return "/".join([*parts[:i], parts[i + 2]]), version, None
        return path, None, None

    def _target(self, path: Any) -> _Target:
        shown, version, _ = self._split(path)
        try:
            node = self.ctx.resolve(shown)
        except FsError as exc:
            if exc.errno != errno.ENOENT:
                raise
            node = None
        if isinstance(node, Item):
            assert node.folder is not None
            return _Target(node, node.folder, node.name, node.uuid, version)
        if node is not None:
            raise FsError(errno.EISDIR, f"{path}: not an item file")
        parent_path, _, name = os.path.normpath(shown).rpartition("/")
        folder = self.ctx.resolve(parent_path or self.ws.mountpoint)
        if not isinstance(folder, Folder) or folder is self.ws.tree.root:
            raise FsError(errno.ENOENT, f"{path}: no such item")
        shown_now = {n: i.uuid for n, i in folder.entries.items() if isinstance(i, Item)}
        item_id = self.store.item_dirs(folder.uuid, shown_now).get(name)
        if item_id is None:
            raise FsError(errno.ENOENT, f"{path}: no such item, and no history of one by that name")
        return _Target(None, folder, name, item_id, version)

    def _describe(self, name: str, v: Version, current: str | None) -> dict[str, Any]:
        return {"name": name, **v.as_json(), "current": v.digest == current}

    async def _current_digest(self, item: Item | None) -> str | None:
        """The digest of what the file shows (fetched when it never was): a restore starts from it,
        as a save through the file starts from what was read."""
        if item is None:
            return None
        if item.cache.content is None:
            try:
                await self.ws.content.read_content(item)
            except FsError:
                return None
        return digest_of(item.cache.content) if item.cache.content is not None else None

    async def history(self, p: HistoryParams) -> dict[str, Any]:
        await self.store.flush(FLUSH_WAIT)
        if p.deleted:
            return self._deleted(p.path)
        target = self._target(p.path)
        current = await self._current_digest(target.item)
        files = [(n, v) for n, (v, inworld) in self.store.version_files(target.item_id).items() if not inworld]
        folder_path = self.ctx.scripts.abspath(target.folder)
        return {"path": os.path.join(folder_path, target.name), "item_id": target.item_id,
                "exists": target.item is not None,
                "versions": [self._describe(n, v, current) for n, v in files]}

    def _deleted(self, path: Any) -> dict[str, Any]:
        folder = self.ctx.resolve(path)
        if not isinstance(folder, Folder) or folder is self.ws.tree.root:
            raise FsError(errno.EINVAL, f"{path}: not an object or prim folder")
        prims = [folder, *folder.prims.values()] if not folder.is_child else [folder]
        items: list[dict[str, Any]] = []
        for prim in prims:
            shown = {n: i.uuid for n, i in prim.entries.items() if isinstance(i, Item)}
            for name, item_id in self.store.item_dirs(prim.uuid, shown).items():
                node = self.ws.tree.find(item_id)
                if isinstance(node, Item) and node.attached and item_id in shown.values():
                    continue
                versions = self.store.versions_of(item_id)
                if not versions:
                    continue
                last = versions[0]
                items.append({"name": name, "path": os.path.join(self.ctx.scripts.abspath(prim), name),
                              "item_id": item_id, "gone_at": last.at, "last_origin": last.origin,
                              "deleted": last.origin == "deleted", "versions": len(versions),
                              "type": last.place.item_type})
        items.sort(key=lambda i: -float(i["gone_at"]))
        return {"path": self.ctx.scripts.abspath(folder), "items": items}

    def _pick(self, target: _Target, wanted: Any, current: str | None) -> tuple[str, Version]:
        files = [(n, v) for n, (v, inworld) in self.store.version_files(target.item_id).items() if not inworld]
        if not files:
            raise FsError(errno.ENOENT, f"{target.name}: no versions in the history")
        if wanted is None or wanted == "":
            for name, v in files:
                if v.digest != current:
                    return name, v
            raise FsError(errno.ENOENT, f"{target.name}: every version holds what the item holds now")
        text = current_version_name(str(wanted))  # a name of before the sequence was padded too
        exact = [(n, v) for n, v in files if n == text or str(v.id) == text]
        found = exact or [(n, v) for n, v in files if n.startswith(text)]
        if len(found) == 1:
            return found[0]
        if not found:
            raise FsError(errno.ENOENT, f"{target.name}: no version {text!r} (slfs history lists them)")
        raise FsError(errno.EINVAL, f"{target.name}: {text!r} names {len(found)} versions: "
                      + ", ".join(n for n, _v in found[:5]))

    async def restore(self, p: RestoreParams) -> dict[str, Any]:
        await self.store.flush(FLUSH_WAIT)
        target = self._target(p.path)
        current = await self._current_digest(target.item)
        name, version = self._pick(target, p.version if p.version is not None else target.version, current)
        data = await self.store.blob(version.digest)
        if data is None:
            raise FsError(errno.EIO, f"{target.name}: the history store cannot give version {name} "
                          f"({self.store.last_failure or 'not open'})")
        writer = self.ctx.writer
        item = target.item
        if item is None:
            item = await self._recreate(target, version, data)
        else:
            await writer.restore(item, data)
        out: dict[str, Any] = {"path": self.ctx.scripts.abspath(item), "item_id": item.uuid,
                               "restored": name, "version": version.id, "digest": version.digest,
                               "size": version.size, "created": target.item is None}
        report = self.ws.compiles.get(item.uuid)
        if item.is_script and report is not None:
            out.update(compiled=report.compiled, diagnostics=self.ctx.scripts.diagnostics_of(item))
        return out

    async def _recreate(self, target: _Target, version: Version, data: bytes) -> Item:
        """A gone item: created again in the prim it was in, under the name it had."""
        prim = self.ws.tree.find(version.place.prim_id)
        if not isinstance(prim, Folder) or not prim.attached:
            raise FsError(errno.ENOENT, f"{target.name}: the prim it was in is not published; publish its object "
                          "(or copy the version file where you want it)")
        file_name = version.place.file_name
        if file_name in prim.entries or file_name in prim.new_files:
            raise FsError(errno.EEXIST, f"{file_name}: another item has that name now; copy the version file "
                          "under another name instead")
        return await self.ctx.writer.create(prim, file_name, data, self.ws.tree.fresh_inode())
