"""The write path: saving, creating, renaming and deleting items, with nothing ever lost.

A remote item belongs to a (folder, name) slot, not to a kernel inode. Editors replace files by
renaming and recreating them (vim, emacs, sed -i, git...); the slot keeps the item so every such
save lands on the same item_id. `rm` leaves a tombstone that a create of the same name within the
grace period adopts; only after it does the delete reach the viewer (after a copy to the trash).
Every failed save leaves the content in the recovery folder and a line in the log and status.

Concurrency: the per-prim create lock keeps one object.item.create in flight per prim (the viewer
refuses a second one); saves of one item are serialised by a per-item lock.
"""

from __future__ import annotations

import errno
import logging
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, NoReturn

import attrs
import trio

from .. import paths
from ..protocol import errors as codes
from ..protocol.types import ContentSaveResponse, ItemCreateResponse
from . import names
from .compiles import CompileReport, failure_report, has_nul
from .errors import FsError, region_down, transient_save_error
from .naming_rules import RemoteName, parse_remote_name, size_limit
from .tree import Folder, Item, Scratch
from .workspace import Workspace

log = logging.getLogger(__name__)

# How long after our own save an inventory update is taken as its echo.
OWN_UPDATE_WINDOW = 2.0


class Writer:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.tree = ws.tree
        self.pending_saves = 0
        self.last_recovery = ""
        self._create_locks: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)
        self._save_locks: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)
        self._idle = trio.Event()
        self._idle.set()
        self._hurry = trio.Event()
        self._never_compiled: set[str] = set()  # scripts created here that no compile has accepted yet

    # --- local disk: overlay, recovery, trash -------------------------------------------------

    def overlay_dir(self, folder: Folder) -> Path:
        """Where the local overlay of a folder lives: keyed by the object's directory name, so it
        survives remounts and re-rezzing (which changes UUIDs)."""
        root = paths.data_dir() / "overlay"
        if folder is self.tree.root:
            return root / "root"
        obj = folder.object_folder
        base = root / "objects" / obj.name
        return base / folder.name if folder.is_child else base

    def _keep(self, kind: str, item_path: str, data: bytes, why: str) -> Path:
        folder = paths.ensure((paths.state_dir() if kind == "recovery" else paths.data_dir()) / kind)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        safe = item_path.replace("/", "__") or "unnamed"
        target = folder / f"{stamp}-{safe}"
        n = 1
        while target.exists():
            n += 1
            target = folder / f"{stamp}-{safe}.{n}"
        target.write_bytes(data)
        log.info("%s: kept %d bytes of %s in %s (%s)", kind, len(data), item_path, target, why)
        return target

    def recover(self, item_path: str, data: bytes, why: str) -> Path:
        """Keep content the viewer did not take; the status names the file."""
        target = self._keep("recovery", item_path, data, why)
        self.last_recovery = str(target)
        self.ws.note_error(f"{why}; your content is in {target}")
        return target

    # --- saving -----------------------------------------------------------------------------

    def _begin(self) -> None:
        self.pending_saves += 1
        self._idle = trio.Event() if self._idle.is_set() else self._idle

    def _end(self) -> None:
        self.pending_saves -= 1
        if self.pending_saves == 0:
            self._idle.set()

    async def wait_idle(self, timeout: float) -> bool:
        with trio.move_on_after(timeout):
            await self._idle.wait()
            return True
        return False

    def check_size(self, item_type: str, size: int, shown: str) -> None:
        limit = size_limit(item_type)
        if size > limit:
            raise FsError(errno.EFBIG, f"{shown}: {item_type}s hold at most {limit} bytes")

    async def save(self, item: Item) -> None:
        """Store the item's local edits in-world. Returns once the viewer stored them."""
        async with self._save_locks[item.uuid]:
            if not item.dirty or item.local is None:
                return
            data = bytes(item.local)
            path = self.tree.path_of(item)
            self._begin()
            try:
                await self._save(item, data, path)
            except FsError as exc:
                if exc.errno != errno.ESTALE:
                    self.recover(path, data, f"saving {path} failed: {exc.message}")
                if exc.errno == errno.EACCES and "embedded items" in exc.message:
                    # The viewer knows the notecard embeds items we were not told of: read-only now.
                    self.ws.set_embedded_items(item, max(1, item.embedded_items or 0))
                raise
            finally:
                self._end()

    async def _save(self, item: Item, data: bytes, path: str) -> None:
        self.check_size(item.info.type, len(data), path)
        text = self._decode(data, path)
        await self._check_conflict(item, data, path)
        assert item.folder is not None
        params: dict[str, Any] = {"prim_id": item.folder.uuid, "item_id": item.uuid, "content": text}
        # The viewer answers our save with an inventory update that says nothing of whose change
        # it was; the first one after our save is ours, and must not make the file look stale.
        item.expect_own_update = time.monotonic() + OWN_UPDATE_WINDOW
        try:
            res: ContentSaveResponse = await self._with_retries(
                f"save {path}", "object.content.save", params, ContentSaveResponse)
        except FsError as exc:
            item.expect_own_update = 0.0
            if item.is_script and exc.rpc_code == codes.INTERNAL_ERROR:
                # Some builds answer a failed LSL compile with "Internal error: stoi": whether and
                # what the viewer stored is unknown, so show what it holds now.
                self._garbled_compile(item, path, exc.message)
                raise FsError(errno.EIO, f"{path}: the viewer failed the save without diagnostics "
                              f"({exc.message})") from None
            raise
        except BaseException:
            item.expect_own_update = 0.0
            raise
        if item.is_script and has_nul(res.diagnostics):
            item.expect_own_update = 0.0
            self._garbled_compile(item, path, "the viewer's compile answer holds NUL bytes: "
                                  + " ".join(d.message for d in res.diagnostics or ()))
            raise FsError(errno.EIO, f"{path}: the viewer's compile answer is unreadable (NUL bytes)")
        if item.expect_own_update:
            item.expect_own_update = time.monotonic() + OWN_UPDATE_WINDOW
        if item.local is not None and bytes(item.local) == data:
            item.local = None
            item.dirty = False
        self.ws.set_content(item, data, valid=True)
        item.take_base(data)
        if item.is_script:
            self._record_compile(item, res, path)
        log.info("saved %s (%d bytes)", path, len(data))

    def _garbled_compile(self, item: Item, path: str, message: str) -> None:
        """A save answered without a usable verdict: `F.diag` says what the viewer said, the local
        edits go (save() keeps them in the recovery folder) and the item is fetched again."""
        self.ws.record_compile(item, failure_report(message, "the viewer did not say whether it compiled"), path)
        item.local = None
        item.dirty = False
        self.ws.refetch(item)

    def _decode(self, data: bytes, path: str) -> str:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FsError(errno.EILSEQ, f"{path}: not valid UTF-8 text (byte {exc.start})") from None

    async def _check_conflict(self, item: Item, data: bytes, path: str) -> None:
        """Never overwrite an in-world change the file did not show (the viewer's save has no
        precondition, so slfs checks before it saves)."""
        base = item.base
        if base is None:
            return
        now = item.info.revision
        if now is not None and item.base_revision is not None:
            # Newer viewers: the revision says it. Read at the current one, or stale.
            if item.base_revision >= now:
                return
            fresh = item.content_valid and item.content_revision == now
            current = item.content if fresh and item.content is not None else await self.ws.read_content(item)
            if current != data:
                self._stale(item, data, path, current)
            return
        if item.content_valid and item.content == base:
            return
        if not item.content_valid:
            current = await self.ws.read_content(item)
        else:
            current = item.content or b""
        if current in (base, data):
            return
        self._stale(item, data, path, current)

    def _stale(self, item: Item, data: bytes, path: str, current: bytes) -> NoReturn:
        where = self.recover(path, data, f"{path} changed in-world since it was read; not saved (conflict)")
        # The file now shows the in-world version; the local edits are in the recovery folder.
        item.local = None
        item.dirty = False
        self.ws.set_content(item, current, valid=True)
        item.take_base(current)
        self.tree.invalidate_item(item, data=True)
        raise FsError(errno.ESTALE, f"{path}: changed in-world since it was read; your version is in {where}")

    async def _with_retries(self, what: str, method: str, params: dict[str, Any], result_type: type[Any]) -> Any:
        """Right after a save some viewers report an existing item as not found, and a region may be
        briefly down: retry a few times."""
        return await self.ws.call(what, method, params, result_type, retries=self.ws.options.save_retries,
                                  transient=transient_save_error)

    def _record_compile(self, item: Item, res: ContentSaveResponse, path: str) -> None:
        compiled = res.compiled is not False
        if compiled:
            self._never_compiled.discard(item.uuid)
            note = ""
        elif item.uuid in self._never_compiled:
            note = "the script has never compiled, so nothing of it runs"
        else:
            note = "the previously compiled version keeps running"
        report = CompileReport(compiled=compiled, diagnostics=tuple(res.diagnostics or ()), at=time.time(), note=note)
        self.ws.record_compile(item, report, path)

    # --- creating ---------------------------------------------------------------------------

    async def create(self, folder: Folder, file_name: str, data: bytes, inode: int) -> Item:
        """Create a new item for a file named `file_name` whose kernel inode is `inode`."""
        want = parse_remote_name(file_name)
        shown = f"{self.tree.path_of(folder)}/{file_name}".lstrip("/")
        if not folder.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission on the prim")
        self.check_size(want.type, len(data), shown)
        text = self._decode(data, shown)
        self._begin()
        try:
            item = await self._create(folder, want, text, inode, shown)
        except FsError as exc:
            self.recover(shown, data, f"creating {shown} failed: {exc.message}")
            raise
        finally:
            self._end()
        if want.type == "script":
            item.local = bytearray(data)
            item.dirty = True
            item.take_base(None)
            await self.save(item)
        else:
            self.ws.set_content(item, data, valid=True)
            item.take_base(data)
        return item

    async def _create(self, folder: Folder, want: RemoteName, text: str, inode: int, shown: str) -> Item:
        params: dict[str, Any] = {"prim_id": folder.uuid, "name": want.sl_name, "type": want.type}
        if want.type == "script":
            params["vm"] = "luau" if want.subtype == 1 else self.ws.options.vm
        else:
            params["text"] = text
        async with self._create_locks[folder.uuid]:
            # A region that is down answers before anything is created: safe to retry.
            res: ItemCreateResponse = await self.ws.call(f"create {shown}", "object.item.create", params,
                                                         ItemCreateResponse, retries=self.ws.options.save_retries,
                                                         transient=region_down)
        data = res.as_item()
        if data.subtype is None and want.type == "script":
            data = attrs.evolve(data, subtype=want.subtype)
        item = folder.items.get(data.item_id)
        if item is None:
            # The response came before the viewer's object.update: enter the item now.
            item = Item(inode=inode, uuid=data.item_id, data=data, folder=folder, parent=folder)
            folder.items[data.item_id] = item
            self.tree.register(item)
            self.tree.bind_key(item.uuid, inode)
        elif item.inode != inode:
            self.rebind(item, inode)
        self.tree.relayout(folder)
        if item.name != names.item_file_name(want.sl_name, want.type, want.subtype):
            log.info("viewer named the new item %r (asked for %r)", item.name, want.sl_name)
        if want.type == "script":
            self._never_compiled.add(item.uuid)
        self.ws.emit("create", path=self.tree.path_of(item), item_id=item.uuid)
        return item

    # --- slots: adopt, detach, tombstones ------------------------------------------------------

    def rebind(self, item: Item, inode: int) -> Scratch:
        """Tree.rebind (content fetches are keyed by UUID, so one in flight survives it)."""
        return self.tree.rebind(item, inode)

    def adopt(self, folder: Folder, name: str) -> Item | None:
        """A create of a name whose item was unlinked or renamed away: the item comes back."""
        item = folder.tombstones.pop(name, None)
        if item is None:
            return None
        if item.folder is not folder or item.uuid not in folder.items:
            return None  # deleted in-world meanwhile
        self.rebind(item, self.tree.fresh_inode())
        item.take_base(item.content)
        item.local = bytearray()
        item.dirty = True
        self.tree.relayout(folder)
        log.info("%s: re-created, keeps item %s", self.tree.path_of(item), item.uuid)
        return item

    def detach(self, folder: Folder, item: Item) -> Scratch:
        """`mv F F~`: the name leaves the listing locally; nothing happens in-world."""
        name = item.name
        folder.tombstones[name] = item
        orphan = self.rebind(item, self.tree.fresh_inode())
        self.tree.relayout(folder)
        return orphan

    def unlink(self, folder: Folder, item: Item) -> None:
        shown = self.tree.path_of(item)
        if not item.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission")
        if not self.ws.connected:
            raise FsError(errno.EIO, f"{shown}: not connected to the viewer; not deleted")
        name = item.name
        folder.tombstones[name] = item
        self.rebind(item, self.tree.fresh_inode())
        self.tree.relayout(folder)
        self.ws.spawn(self._delete_later, folder, name, item)

    async def _delete_later(self, folder: Folder, name: str, item: Item) -> None:
        self._begin()
        try:
            with trio.move_on_after(self.ws.options.delete_grace):
                await self._hurry.wait()  # set at shutdown: carry the delete out now
            if folder.tombstones.get(name) is not item:
                return  # re-created meanwhile: the item lives on
            del folder.tombstones[name]
            shown = f"{self.tree.path_of(folder)}/{name}".lstrip("/")
            if item.uuid not in folder.items:
                return
            try:
                data = item.local if item.local is not None else await self.ws.read_content(item)
                self._keep("trash", shown, bytes(data), "deleted")
            except FsError as exc:
                log.warning("%s: no copy in the trash (%s)", shown, exc.message)
            try:
                await self.ws.call(f"delete {shown}", "object.item.delete",
                                   {"prim_id": folder.uuid, "item_id": item.uuid})
            except FsError as exc:
                self.ws.note_error(f"deleting {shown} failed: {exc.message}")
                folder.tombstones.pop(name, None)
                self.tree.relayout(folder)  # it is still there: show it again
                return
            self.ws.emit("delete", path=shown, item_id=item.uuid)
            log.info("deleted %s (item %s)", shown, item.uuid)
        finally:
            self._end()

    def hurry_deletes(self) -> None:
        """Shutdown: deletes whose grace period has not passed are carried out now (wait_idle
        then waits for them), rather than dropped with the daemon."""
        self._hurry.set()

    # --- renames ------------------------------------------------------------------------------

    async def rename_item(self, item: Item, new_name: str) -> None:
        """`mv` inside one prim: object.item.modify, same item_id."""
        want = parse_remote_name(new_name)
        info = item.info
        shown = self.tree.path_of(item)
        if want.type != info.type or (want.type == "script" and want.subtype != (info.subtype or 0)):
            raise FsError(errno.EXDEV, f"{shown} -> {new_name}: changes the kind of item")
        if not item.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission")
        assert item.folder is not None
        if want.sl_name != info.name:
            await self.ws.call(f"rename {shown}", "object.item.modify",
                               {"prim_id": item.folder.uuid, "item_id": item.uuid, "name": want.sl_name})
            item.data = attrs.evolve(info, name=want.sl_name)
        self.tree.relayout(item.folder)

    async def rename_folder(self, folder: Folder, new_name: str) -> None:
        shown = self.tree.path_of(folder)
        base, tag = names.strip_tag(new_name)
        if tag is not None and folder.uuid.replace("-", "").startswith(tag):
            new_name = base
        sl_name = names.to_sl(new_name)
        from .naming_rules import check_sl_name

        check_sl_name(sl_name, new_name)
        if not folder.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission on the prim")
        await self.ws.call(f"rename {shown}", "object.modify", {"prim_id": folder.uuid, "name": sl_name})
        folder.link_name = sl_name
        self.tree.relayout(folder.parent or self.tree.root)

    async def replace_into(self, item: Item, data: bytes, inode: int) -> None:
        """A file renamed onto an item's name: its content is saved into that item (same item_id),
        and the item takes over the renamed file's inode."""
        shown = self.tree.path_of(item)
        why = item.save_refusal()
        if why is not None:
            raise FsError(errno.EACCES, f"{shown}: {why}")
        before = (item.local, item.dirty)
        item.local = bytearray(data)
        item.dirty = True
        try:
            await self.save(item)
        except FsError:
            item.local, item.dirty = before
            raise
        self.rebind(item, inode)
