"""The write path: saving, creating, renaming and deleting items, with nothing ever lost.

A remote item belongs to a (folder, name) slot, not to a kernel inode. Editors replace files by
renaming and recreating them (vim, emacs, sed -i, git...); the slot keeps the item so every such
save lands on the same item_id. `rm` leaves a tombstone that a create of the same name within the
grace period adopts; only after it does the delete reach the viewer (after a copy to the trash).
Every failed save leaves the content in the recovery folder and a line in the log and status.

The Writer owns all write state: edit buffers (`Item.edit`), new files not yet
in-world (`Folder.new_files`), tombstones (`Folder.tombstones`), creates, renames, deletes and their
grace periods (saving in save.py, deletes and tombstones in deletes.py, which it builds
on). The file system layer translates each kernel request into one call here and the
answer (or FsError) into the reply; it never changes that state itself.

Concurrency (trio): code between two awaits runs atomically. Methods that await say so by being
async; after every await they re-check what they act on, because another request may have run
meanwhile: whether the item still has no local buffer (open, write), whether a new file is still
waiting under its name (commit of a new file), whether a tombstone is still the same item (delete).
The per-prim create lock keeps one object.item.create in flight per prim (the viewer refuses a
second one); saves of one item are serialised by a per-item lock; a new file being created is
marked, so a second flush waits for that create instead of creating it twice. A save's echo is
confirmed by a background fetch (Item.content_current); the next save's conflict check waits for it.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections import defaultdict
from typing import Any

import attrs
import trio

from ..local.keep import TRASH, Keeper, folder_of
from ..protocol.types import (
    ItemCreateParams,
    ItemCreateResponse,
    ItemModifyParams,
    ObjectModifyParams,
)
from ..world import names
from ..world.errors import FsError, Refused, region_down
from ..world.naming_rules import RemoteName, is_overlay_name, parse_remote_name
from . import buffers
from .deletes import Deletes
from .history import SAVED
from .live_writes import LiveWriter
from .overlay import Overlay
from .sources import Sources
from .tree import Folder, Item, MemoryFile, NewFile, Node, OverlayNode
from .workspace import Workspace

log = logging.getLogger(__name__)


def language_change(shown: str, new_name: str) -> Refused:
    """`mv x.lsl x.luau`: EPERM with the reason, never EXDEV (mv would then copy the text into a
    new item and delete the old one)."""
    return Refused(errno.EPERM, f"{shown} -> {new_name}: a script's language (LSL or Luau) cannot change in "
                   "place: the viewer fixes it when the item is created; to have a Luau copy, copy the file "
                   "to the new name (a new item) and remove the old one")


class Writer(Deletes):
    def __init__(self, ws: Workspace, overlay: Overlay, keeper: Keeper, sources: Sources) -> None:
        super().__init__(ws, keeper, sources)
        self.overlay = overlay
        self.live = LiveWriter(ws, sources, self.recover)  # the live files' saves (live_writes.py)
        self._create_locks: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)

    # Service (model/services.py): the writer's status lines.

    def on_event(self, event: dict[str, Any]) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {"pending_saves": self.pending_saves,
                "last_recovery": self.keeper.last_recovery or "none",
                "trash": str(folder_of(TRASH)),  # where this daemon keeps deleted items' copies
                "disk_errors": self.keeper.failures}

    def _refuse_unsaveable(self, item: Item) -> None:
        """EACCES for text that cannot be saved, before anything is sent; the status says why when
        it is not the plain permission case (a notecard's embedded items come with its content)."""
        why = item.save_refusal()
        if why is not None:
            message = f"{self.tree.path_of(item)}: {why}"
            if item.writable:
                self.ws.note_error(message)
            raise FsError(errno.EACCES, message)

    async def _editable(self, item: Item) -> bytearray:
        """The item's local buffer, made from its content on first need (awaits a fetch)."""
        if not item.writable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(item)}: no modify permission")
        if item.edit.buffer is None:
            data = await self.ws.content.read_content(item)
            self._refuse_unsaveable(item)
            if item.edit.buffer is None:  # re-checked: another request may have made it meanwhile
                self._set_buffer(item, bytearray(data))
                item.take_base(data)
        assert item.edit.buffer is not None
        return item.edit.buffer

    async def open_item(self, item: Item, *, truncate: bool) -> bool:
        """An open for writing. Returns whether a truncation is pending: O_TRUNC of a non-empty
        file with nothing written yet (bash's `>` flushes a duplicate before it writes)."""
        if not item.writable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(item)}: no modify permission")
        if not truncate:
            await self._editable(item)
            return False
        # libfuse 3 passes O_TRUNC to open: honour it, or cp of a short file over a long one keeps
        # the old tail.
        if item.edit.buffer is None:
            current = item.cache.content if item.cache.content_valid and item.cache.content is not None else \
                await self.ws.content.read_content(item)
            self._refuse_unsaveable(item)
            if item.edit.buffer is None:  # re-checked after the await
                self._set_buffer(item, bytearray())
                item.take_base(current)
                trunc = current != b""
            else:
                trunc = bool(item.local)
                item.local.clear()
        else:
            self._refuse_unsaveable(item)
            trunc = bool(item.edit.buffer)
            item.edit.buffer.clear()
        if trunc:
            item.edit.dirty = True
            item.mtime_ns = time.time_ns()
        return trunc

    async def write_item(self, item: Item, off: int, data: bytes) -> None:
        local = await self._editable(item)
        shown = self.tree.path_of(item)
        self._refuse_oversize(item, off + len(data), shown)
        buffers.splice(local, off, data, shown)
        item.edit.dirty = True
        item.mtime_ns = time.time_ns()

    async def resize_item(self, item: Item, size: int, *, by_path: bool) -> None:
        """truncate(2)/ftruncate(2). By path no close follows, so the change is saved at once."""
        local = await self._editable(item)
        shown = self.tree.path_of(item)
        self._refuse_oversize(item, size, shown)
        if size != len(local):
            buffers.resize(local, size, shown)
            item.edit.dirty = True
            item.mtime_ns = time.time_ns()
        if by_path and item.edit.dirty and item.attached:
            await self.save(item)

    def _refuse_oversize(self, item: Item, size: int, shown: str) -> None:
        """A write or truncation past the item's limit refuses the whole text, not just its tail:
        the pending edit is dropped (the file shows the in-world text again), so a close never
        saves the part that fitted."""
        try:
            self.check_size(item.info.type, size, shown)
        except FsError as exc:
            if item.edit.buffer is not None:
                before = item.edit.mtime_before
                self._set_buffer(item, None)
                item.edit.dirty = False
                if before is not None:
                    item.mtime_ns = before
                self.tree.invalidate_item(item, data=True)
            raise self.refused(shown, exc) from None

    def refused(self, shown: str, exc: FsError) -> FsError:
        """A text refused before anything was sent, said in the status, the log and an event; the
        error to raise."""
        message = f"{exc.message}; nothing was saved, the in-world text is unchanged"
        self.ws.note_error(message)
        self.ws.emit("refused", path=shown, errno=errno.errorcode.get(exc.errno, str(exc.errno)), message=message)
        return FsError(exc.errno, message)

    async def commit_item(self, item: Item) -> None:
        """flush/fsync: store what the file holds in-world (nothing when nothing changed)."""
        if not item.edit.dirty or item.edit.buffer is None:
            return
        if not item.attached:
            # The object was unpublished (or the item removed in-world) while the file was open:
            # never drop what the program wrote.
            folder = item.folder
            shown = f"{folder.object_folder.name}/{item.name}" if folder is not None else item.name
            data = bytes(item.edit.buffer)
            self._set_buffer(item, None)
            item.edit.dirty = False
            kept = await self.recover(shown, data, f"{shown}: the item is no longer published; not saved", item=item)
            raise FsError(errno.ENOENT, f"{shown}: no longer published; {kept}")
        folder = item.folder
        if folder is not None and folder.tombstones.get(item.name) is item:
            return  # unlinked while open: it goes to the trash, not in-world
        await self.save(item)

    # --- new files, not yet in-world -------------------------------------------------------

    async def check_can_create(self, folder: Folder, name: str) -> None:
        """create(2) of an item name while no viewer is connected fails now, at open(): a new
        file reaches the viewer only at its write or close, and `echo > F` ignores close's error.
        A session that just dropped is waited for (reconnect_wait), as a call would. A name whose
        item was renamed away or unlinked (vim's, git's write) comes back as that item: its save
        fails at close as any save does, with the text kept in the recovery folder."""
        if name in folder.tombstones:
            return
        if not await self.ws.calls.await_viewer():
            raise Refused(errno.EIO, f"{self.tree.path_of(folder)}/{name}: cannot create a file while not "
                          f"connected to the viewer ({self.ws.session.state_detail})")

    def new_file(self, folder: Folder, name: str) -> Item | NewFile:
        """create(2) of an item name: the item unlinked or renamed away under it comes back, else a
        new file that becomes an item when it is written, or at its release if it never is."""
        parse_remote_name(name)  # EINVAL / ENAMETOOLONG now, not at close
        if not folder.writable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(folder)}: no modify permission on the prim")
        if folder.entries.get(name) is not None or folder.new_files.get(name) is not None:
            raise FsError(errno.EEXIST, "")
        item = self.adopt(folder, name)
        if item is not None:
            return item
        scratch = NewFile(inode=self.tree.fresh_inode(), uuid="", name=name, parent=folder, folder=folder,
                       mode=0o644, dirty=True)
        self.tree.add_node(scratch)
        folder.new_files[name] = scratch
        return scratch

    def open_memory_file(self, scratch: MemoryFile, *, truncate: bool) -> None:
        if truncate and scratch.data:
            scratch.data.clear()
            scratch.dirty = True

    def write_memory_file(self, scratch: MemoryFile, off: int, data: bytes) -> None:
        self._check_memory_file_size(scratch, off + len(data))
        buffers.splice(scratch.data, off, data, scratch.name)
        scratch.dirty = True
        scratch.mtime_ns = time.time_ns()

    def resize_memory_file(self, scratch: MemoryFile, size: int) -> None:
        self._check_memory_file_size(scratch, size)
        buffers.resize(scratch.data, size, scratch.name)
        scratch.dirty = True
        scratch.mtime_ns = time.time_ns()

    def _check_memory_file_size(self, scratch: MemoryFile, size: int) -> None:
        """A new file that will be an item holds no more than the item may (EFBIG where the write
        or truncation crosses it, as for the item itself): refused whole, it is dropped, and
        nothing is created in-world."""
        if isinstance(scratch, NewFile) and scratch.folder is not None and not is_overlay_name(scratch.name):
            shown = f"{self.tree.path_of(scratch.folder)}/{scratch.name}".lstrip("/")
            try:
                self.check_size(parse_remote_name(scratch.name).type, size, shown)
            except FsError as exc:
                scratch.data.clear()
                scratch.dirty = False
                self._drop_new_file(scratch)
                raise self.refused(shown, exc) from None

    def set_mtime(self, node: Item | MemoryFile | Folder, mtime_ns: int) -> None:
        """utimens: an item keeps it while it holds its text (Workspace.set_mtime); a new file
        carries it into the item it becomes; a folder shows it until its listing changes."""
        if isinstance(node, Item):
            self.ws.content.set_mtime(node, mtime_ns)
        elif isinstance(node, Folder):
            if node is self.tree.root:
                return  # its time is the mount's (accepted, as before, and not kept)
            node.mtime_ns = mtime_ns
            self.tree.stat_changed(node)
        else:
            node.mtime_ns = mtime_ns

    def set_memory_file_mode(self, scratch: MemoryFile, mode: int) -> None:
        scratch.mode = mode & 0o777

    def _drop_new_file(self, scratch: MemoryFile) -> None:
        """The new file leaves its folder (under whatever name it has now); open handles keep its
        data, and a flush through them sends nothing."""
        if not isinstance(scratch, NewFile):
            return  # an orphan has no name to leave
        folder = scratch.folder
        if folder is not None and folder.new_files.get(scratch.name) is scratch:
            del folder.new_files[scratch.name]
            self.tree.invalidate_entry(folder, scratch.name)
        scratch.folder = None

    async def commit_new_file(self, scratch: MemoryFile) -> None:
        """flush/fsync/release of a new file: create the item in-world with what it holds."""
        if not isinstance(scratch, NewFile):
            return  # an orphan's data never reaches the viewer
        if scratch.live:
            await self.live.commit_new_file(scratch)  # a new file of .slfs/live: saved by its rename
            return
        if scratch.creating is not None:
            await scratch.creating.wait()  # another flush is creating it: that one answers
            if not (scratch.failed and scratch.dirty):
                return
            # Written after its create failed (through a handle still open, or a dentry the kernel
            # had not dropped yet): not saved, and never silently dropped.
            scratch.dirty = False
            kept = await self.recover(scratch.failed, bytes(scratch.data),
                                      f"{scratch.failed}: written after its create failed; not saved")
            raise FsError(errno.EIO, f"{scratch.failed}: not created in-world (its create failed); {kept}")
        folder = scratch.folder
        if not scratch.dirty or folder is None or folder.new_files.get(scratch.name) is not scratch:
            return
        data = bytes(scratch.data)
        scratch.creating = trio.Event()
        try:
            item = await self.create(folder, scratch.name, data, scratch.inode)
        except FsError:
            # Refused (no modify permission, "Item creation failed"): the content is in the
            # recovery folder; no half-created name is left behind.
            scratch.failed = f"{self.tree.path_of(folder)}/{scratch.name}".lstrip("/")
            scratch.dirty = bytes(scratch.data) != data
            self._drop_new_file(scratch)
            raise
        finally:
            scratch.creating.set()
        self._drop_new_file(scratch)
        if bytes(scratch.data) != data:
            # Written while the create was in flight: that belongs to the item now (its inode).
            self._set_buffer(item, bytearray(scratch.data))
            item.edit.dirty = True
        else:
            self.ws.content.set_mtime(item, scratch.mtime_ns)  # the file's time goes on (cp -p set it)

    # --- names: unlink, renames ------------------------------------------------------------

    async def remove(self, folder: Folder, node: Node) -> None:
        """unlink(2) of an item or a new file."""
        if isinstance(node, MemoryFile):
            self._drop_new_file(node)
        elif isinstance(node, Item):
            await self.unlink(folder, node)
        elif isinstance(node, Folder):
            raise FsError(errno.EISDIR, "")
        else:
            raise FsError(errno.EPERM, "")

    async def data_of(self, node: Node) -> bytes:
        """What a file holds now, wherever it lives."""
        if isinstance(node, OverlayNode):
            return await trio.to_thread.run_sync(self.overlay.read, node)
        if isinstance(node, MemoryFile):
            return bytes(node.data)
        if isinstance(node, Item):
            return bytes(node.edit.buffer) if node.edit.buffer is not None else await self.ws.content.read_content(node)
        raise FsError(errno.EISDIR, "")

    async def move_to_overlay(self, src: Node, src_parent: Folder | OverlayNode, old: str,
                              dst_parent: Folder | OverlayNode, new: str, dst: Node | None) -> None:
        """An item or a new file renamed to a backup or temp name (vim, emacs): it becomes a local
        file under `new`; the item stays in-world, hidden until a file of its name is created again.
        The kernel's inode stays with the file at `new`."""
        if isinstance(dst, (Item, Folder)) or (isinstance(dst, NewFile) and dst.folder is not None):
            raise FsError(errno.EEXIST, "")
        data = await self.data_of(src)
        path = await trio.to_thread.run_sync(self.overlay.write_new, dst_parent, new, data)
        # Re-checked after the awaits: the source must still be under its name.
        if isinstance(src, Item) and isinstance(src_parent, Folder) and src_parent.items.get(src.uuid) is src \
                and src.name == old:
            orphan = self.detach(src_parent, src)
            self.overlay.adopt_inode(path, orphan.inode)
            self.tree.drop_node(orphan.inode)
        elif isinstance(src, NewFile) and isinstance(src_parent, Folder) and src_parent.new_files.get(old) is src:
            del src_parent.new_files[old]
            src.folder = None
            self.overlay.adopt_inode(path, src.inode)
            self.tree.drop_node(src.inode)
        if isinstance(dst, OverlayNode):
            self.overlay.removed(dst)
        self.overlay.node(dst_parent, new, path)  # on src's inode: the kernel's count stays with it

    async def rename_to_remote(self, src: Node, src_parent: Folder | OverlayNode, old: str, dst_parent: Folder,
                               new: str, dst: Node | None) -> None:
        """A rename onto an item name: within a prim an item is renamed in-world; a file renamed
        over an item is saved into it (same item_id); a new file follows its new name; an overlay
        file renamed onto a new name becomes an item."""
        if dst_parent is self.tree.root:
            raise FsError(errno.EPERM, f"{new}: objects cannot be created from the file system")
        if isinstance(dst, Folder):
            raise FsError(errno.EISDIR, "")
        if isinstance(dst, OverlayNode):
            raise FsError(errno.EEXIST, f"{new}: a local overlay file has this name")
        if isinstance(src, Item) and src_parent is not dst_parent:
            raise FsError(errno.EXDEV, "moving items between prims is a copy and a delete")
        if isinstance(src, Item) and dst is None:
            await self.rename_item(src, new)
            return
        target = dst if isinstance(dst, Item) else dst_parent.tombstones.get(new)
        if isinstance(target, Item):
            # An item moved over another keeps its kind; temp and new files take the target's (a
            # notecard named `lib.lsl`, a library, is saved by `sed -i` as any notecard is).
            if isinstance(src, Item) and (src.info.type, src.info.subtype or 0) != (target.info.type,
                                                                                   target.info.subtype or 0):
                raise FsError(errno.EXDEV, f"{new}: would change the kind of item")
            data = await self.data_of(src)
            mtime_ns = await self._mtime_of(src)
            if target.folder is dst_parent and dst_parent.tombstones.get(new) is target:
                del dst_parent.tombstones[new]
                self.tree.relayout(dst_parent)
            await self.replace_into(target, data, src.inode)
            self.ws.content.set_mtime(target, mtime_ns)  # a rename keeps the file's time (rsync set it)
            await self._drop_source(src, src_parent, old)
            return
        if isinstance(dst, NewFile):
            self._drop_new_file(dst)
        if isinstance(src, NewFile):
            # A new file not yet in-world keeps waiting for its first flush under the new name.
            if isinstance(src_parent, Folder) and src_parent.new_files.get(old) is src:
                del src_parent.new_files[old]
            src.name, src.parent, src.folder = new, dst_parent, dst_parent
            dst_parent.new_files[new] = src
            return
        # An overlay file (rsync, gedit, JetBrains temp) renamed onto a new item name.
        data = await self.data_of(src)
        mtime_ns = await self._mtime_of(src)
        item = await self.create(dst_parent, new, data, src.inode)
        self.ws.content.set_mtime(item, mtime_ns)
        await self._drop_source(src, src_parent, old)

    async def _mtime_of(self, node: Node) -> int:
        """A renamed file's mtime, which it keeps under its new name."""
        if isinstance(node, OverlayNode):
            return (await trio.to_thread.run_sync(os.lstat, node.path)).st_mtime_ns
        if isinstance(node, (Item, MemoryFile)):
            return node.mtime_ns
        return time.time_ns()

    async def _drop_source(self, src: Node, src_parent: Folder | OverlayNode, old: str) -> None:
        """The renamed file's old name is gone; its inode now belongs to an item."""
        if isinstance(src, OverlayNode):
            await trio.to_thread.run_sync(self.overlay.unlink, src)
        elif isinstance(src, MemoryFile):
            self._drop_new_file(src)
        elif isinstance(src, Item) and isinstance(src_parent, Folder):
            # mv A B over an existing B: B holds A's content now (and A's inode); A goes like an rm.
            self.tree.move_to_fresh_inode(src)
            self._tombstone(src_parent, old, src)

    # --- the daemon stops -------------------------------------------------------------------

    async def keep_unsaved(self, grace: float, *, save: bool = True) -> None:
        """Files written but not yet closed: saved (when `save`, within `grace` seconds), or else
        kept in the recovery folder; new files never closed are kept too. Nothing is dropped."""
        items = [n for n in list(self.tree.nodes.values())
                 if isinstance(n, Item) and n.edit.dirty and n.edit.buffer is not None]
        kept: set[str] = set()
        if save and items:
            with trio.move_on_after(grace):
                # A stop while the session reconnects after a drop waits for it as a save would
                # (reconnect_wait from the drop), rather than sending the files to recovery at once.
                viewer = self.ws.connected or await self.ws.calls.await_viewer()
                for item in items if viewer else ():
                    unlinked = item.folder is not None and item.folder.tombstones.get(item.name) is item
                    if item.attached and not unlinked:
                        try:
                            await self.save(item)
                        except FsError as exc:  # a failed save leaves a recovery copy itself
                            kept.add(item.uuid)
                            log.error("unsaved %s at shutdown: %s", self.tree.path_of(item), exc.message)
        for item in items:
            if item.edit.dirty and item.edit.buffer is not None and item.uuid not in kept:
                await self.recover(self.tree.path_of(item) or item.name, bytes(item.edit.buffer),
                                   "daemon stopped before it was saved", item=item)
        for ls in list(self.ws.live.by_id.values()):
            if ls.dirty and ls.local is not None:
                try:
                    await self.live.commit(ls)  # the temp file is local: no viewer needed
                except FsError as exc:  # a failed save leaves a recovery copy itself
                    log.error("unsaved live file %s at shutdown: %s", ls.name, exc.message)
        await self.live.keep_unsaved()
        for node in list(self.tree.nodes.values()):
            if isinstance(node, NewFile) and node.live:
                continue  # the live writer's, just above
            if isinstance(node, NewFile) and node.folder is not None and node.data:
                path = f"{self.tree.path_of(node.folder)}/{node.name}".lstrip("/")
                await self.recover(path, bytes(node.data), "daemon stopped before the new file was closed")
            elif isinstance(node, NewFile) and node.failed and node.dirty:
                # Written after its create failed, and still open.
                await self.recover(node.failed, bytes(node.data), "written after its create failed; not saved")

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
            await self.recover(shown, data, f"creating {shown} failed: {exc.message}")
            raise
        finally:
            self._end()
        if want.type == "script":
            self._set_buffer(item, bytearray(data))
            item.edit.dirty = True
            item.take_base(None)
            await self.save(item)
        else:
            self.ws.content.set_content(item, data, valid=True)
            self.ws.history.record(item, SAVED, data)
            item.take_base(data)
        return item

    async def push_create(self, folder: Folder, file_name: str, data: bytes) -> Item:
        """`slfs push` (control/push.py): a new item named `file_name`. A notecard holds `data`
        at once; a script holds the viewer's default text until push_save stores `data` (stopped),
        so its item_id is known even when that save fails (the push then removes it)."""
        want = parse_remote_name(file_name)
        shown = f"{self.tree.path_of(folder)}/{file_name}".lstrip("/")
        if not folder.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission on the prim")
        if file_name in folder.entries or file_name in folder.new_files or file_name in folder.tombstones:
            raise FsError(errno.EEXIST, f"{shown}: an item of that name exists")
        self.check_size(want.type, len(data), shown)
        text = self._decode(data, shown)
        self._begin()
        try:
            item = await self._create(folder, want, "" if want.type == "script" else text,
                                      self.tree.fresh_inode(), shown)
        finally:
            self._end()
        if want.type != "script":
            self.ws.content.set_content(item, data, valid=True)
            self.ws.history.record(item, SAVED, data)
            item.take_base(data)
        else:
            item.take_base(None)
        return item

    async def _create(self, folder: Folder, want: RemoteName, text: str, inode: int, shown: str) -> Item:
        if want.type == "script":
            vm = "luau" if want.subtype == 1 else self.ws.options.vm
            params = ItemCreateParams(prim_id=folder.uuid, name=want.sl_name, type=want.type, vm=vm)
        else:
            params = ItemCreateParams(prim_id=folder.uuid, name=want.sl_name, type=want.type, text=text)
        async with self._create_locks[folder.uuid]:
            # A region that is down answers before anything is created: safe to retry.
            res: ItemCreateResponse = await self.ws.calls.call(f"create {shown}", "object.item.create", params,
                                                         ItemCreateResponse, retries=self.ws.options.save_retries,
                                                         transient=region_down)
        data = res.as_item()
        if data.subtype is None and want.type == "script":
            data = attrs.evolve(data, subtype=want.subtype)
        item = folder.items.get(data.item_id)
        if item is None:
            # The response came before the viewer's object.update: enter the item now.
            item = Item(inode=inode, uuid=data.item_id, record=data, folder=folder, parent=folder)
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


    # --- renames ------------------------------------------------------------------------------

    async def rename_item(self, item: Item, new_name: str) -> None:
        """`mv` inside one prim: object.item.modify, same item_id."""
        want = parse_remote_name(new_name)
        info = item.info
        shown = self.tree.path_of(item)
        if want.type == "script" == info.type and want.subtype != (info.subtype or 0):
            raise language_change(shown, new_name)
        if want.type != info.type:
            raise FsError(errno.EXDEV, f"{shown} -> {new_name}: changes the kind of item")
        if not item.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission")
        assert item.folder is not None
        if want.sl_name != info.name:
            await self.ws.calls.call(f"rename {shown}", "object.item.modify",
                               ItemModifyParams(prim_id=item.folder.uuid, item_id=item.uuid, name=want.sl_name))
            item.record = attrs.evolve(info, name=want.sl_name)
        self.tree.relayout(item.folder)

    async def rename_folder(self, folder: Folder, new_name: str) -> None:
        shown = self.tree.path_of(folder)
        base, tag = names.strip_tag(new_name)
        if tag is not None and names.tag_of(folder.uuid, 64).startswith(tag):
            new_name = base
        sl_name = names.to_sl(new_name)
        from ..world.naming_rules import check_sl_name

        check_sl_name(sl_name, new_name)
        if not folder.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission on the prim")
        await self.ws.calls.call(f"rename {shown}", "object.modify",
                                 ObjectModifyParams(prim_id=folder.uuid, name=sl_name))
        folder.link_name = sl_name
        self.tree.relayout(folder.parent or self.tree.root)
        # Its local files (.git/, .vscode/...) are kept by the object's identity: they stay with it.

    async def restore(self, item: Item, data: bytes) -> None:
        """`slfs restore`: save an old version as a save through the file would be, from what the
        mount showed (a change in-world since is a conflict: ESTALE, the version in the recovery
        folder), with its diagnostics, events and a version of its own."""
        shown = self.tree.path_of(item)
        if item.edit.buffer is not None and item.edit.dirty:
            raise FsError(errno.EBUSY, f"{shown}: has unsaved writes; save or close it first")
        self._refuse_unsaveable(item)
        if item.cache.content is None:
            await self.ws.content.read_content(item)
        if item.edit.buffer is not None:  # re-checked after the await
            raise FsError(errno.EBUSY, f"{shown}: is being written; save or close it first")
        item.take_base(item.cache.content)
        self._set_buffer(item, bytearray(data))
        item.edit.dirty = True
        try:
            await self.save(item)
        finally:
            if item.edit.dirty and item.edit.buffer is not None and bytes(item.edit.buffer) == data:
                # Failed: the text is in the recovery folder (save kept it); no file holds it open.
                self._set_buffer(item, None)
                item.edit.dirty = False

    async def replace_into(self, item: Item, data: bytes, inode: int) -> None:
        """A file renamed onto an item's name: its content is saved into that item (same item_id),
        and the item takes over the renamed file's inode."""
        shown = self.tree.path_of(item)
        why = item.save_refusal()
        if why is not None:
            raise FsError(errno.EACCES, f"{shown}: {why}")
        before = (item.edit.buffer, item.edit.dirty)
        self._set_buffer(item, bytearray(data))
        item.edit.dirty = True
        try:
            await self.save(item)
        except FsError:
            self._set_buffer(item, before[0])
            item.edit.dirty = before[1]
            raise
        self.rebind(item, inode)
