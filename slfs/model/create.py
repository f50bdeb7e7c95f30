"""Creating items: new files not yet in-world (`Folder.new_files`, written here only) and their
data, which become items at their first flush (`commit_new_file`), `slfs push`'s and `slfs
restore`'s creates, and object.item.create itself, one in flight per prim (the viewer refuses a
second one). A new file being created is marked, so a second flush waits for that create instead
of creating it twice."""

from __future__ import annotations

import errno
import logging
import time
from collections import defaultdict
from collections.abc import Callable

import attrs
import trio

from .. import event_types as ev
from ..protocol.types import ItemCreateParams, ItemCreateResponse
from ..world import names
from ..world.fs_errors import FsError, Refused, region_down
from ..world.naming_rules import RemoteName, parse_remote_name
from ..world.tree import Folder, Item, MemoryFile, NewFile, OverlayNode, Tree
from . import buffers
from .calls import Calls
from .content import Content
from .deletes import Deleter
from .edits import Edits, check_size, decode
from .history import SAVED, History
from .live_writes import LiveWriter
from .options import Options
from .pending import PendingSaves
from .routing import goes_local
from .save import Saver

log = logging.getLogger(__name__)


class Creator:
    """New files and the creates of items: the per-prim create locks."""

    def __init__(self, edits: Edits, pending: PendingSaves, saver: Saver, deleter: Deleter, live: LiveWriter, *,
                 tree: Tree, calls: Calls, content: Content, history: History, options: Options,
                 emit: Callable[[ev.SlfsEvent], None]) -> None:
        self.tree = tree
        self.calls = calls
        self.content = content
        self.history = history
        self.options = options
        self.emit = emit
        self.edits = edits
        self.pending = pending
        self.saver = saver
        self.deleter = deleter
        self.live = live
        self._create_locks: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)

    # --- new files, not yet in-world -------------------------------------------------------

    async def check_can_create(self, folder: Folder, name: str) -> None:
        """create(2) of an item name while no viewer is connected fails now, at open(): a new
        file reaches the viewer only at its write or close, and `echo > F` ignores close's error.
        A session that just dropped is waited for (reconnect_wait), as a call would. A name whose
        item was renamed away or unlinked (vim's, git's write) comes back as that item: its save
        fails at close as any save does, with the text kept in the recovery folder."""
        if name in folder.tombstones:
            return
        if not await self.calls.await_viewer():
            raise Refused(errno.EIO, f"{self.tree.path_of(folder)}/{name}: cannot create a file while not "
                          f"connected to the viewer ({self.calls.session.state_detail})")

    def new_file(self, folder: Folder, name: str) -> Item | NewFile:
        """create(2) of an item name: the item unlinked or renamed away under it comes back, else a
        new file that becomes an item when it is written, or at its release if it never is."""
        parse_remote_name(name)  # EINVAL / ENAMETOOLONG now, not at close
        if not folder.writable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(folder)}: no modify permission on the prim")
        if folder.entries.get(name) is not None or folder.new_files.get(name) is not None:
            raise FsError(errno.EEXIST, "")
        item = self.deleter.adopt(folder, name)
        if item is not None:
            return item
        scratch = NewFile(inode=self.tree.fresh_inode(), uuid="", name=name, parent=folder, folder=folder,
                       mode=0o644, dirty=True)
        self.tree.add_node(scratch)
        folder.add_new_file(name, scratch)
        return scratch

    def open_memory_file(self, scratch: MemoryFile, *, truncate: bool) -> None:
        if truncate and scratch.data:
            scratch.data.clear()
            scratch.changed()

    def write_memory_file(self, scratch: MemoryFile, off: int, data: bytes) -> None:
        self._check_memory_file_size(scratch, off + len(data))
        buffers.splice(scratch.data, off, data, scratch.name)
        scratch.changed()
        scratch.mtime_ns = time.time_ns()

    def resize_memory_file(self, scratch: MemoryFile, size: int) -> None:
        self._check_memory_file_size(scratch, size)
        buffers.resize(scratch.data, size, scratch.name)
        scratch.changed()
        scratch.mtime_ns = time.time_ns()

    def _check_memory_file_size(self, scratch: MemoryFile, size: int) -> None:
        """A new file that will be an item holds no more than the item may (EFBIG where the write
        or truncation crosses it, as for the item itself): refused whole, it is dropped, and
        nothing is created in-world."""
        if isinstance(scratch, NewFile) and scratch.folder is not None and not goes_local(scratch.folder, scratch.name):
            shown = f"{self.tree.path_of(scratch.folder)}/{scratch.name}".lstrip("/")
            try:
                check_size(parse_remote_name(scratch.name).type, size, shown)
            except FsError as exc:
                scratch.data.clear()
                scratch.settled()
                self.drop_new_file(scratch)
                raise self.edits.refused(shown, exc) from None

    def set_mtime(self, node: Item | MemoryFile | Folder, mtime_ns: int) -> None:
        """utimens: an item keeps it while it holds its text (Workspace.set_mtime); a new file
        carries it into the item it becomes; a folder shows it until its listing changes."""
        if isinstance(node, Item):
            self.content.set_mtime(node, mtime_ns)
        elif isinstance(node, Folder):
            if node is self.tree.root:
                return  # its time is the mount's (accepted, as before, and not kept)
            node.set_mtime(mtime_ns)
            self.tree.stat_changed(node)
        else:
            node.mtime_ns = mtime_ns

    def set_memory_file_mode(self, scratch: MemoryFile, mode: int) -> None:
        scratch.mode = mode & 0o777

    def drop_new_file(self, scratch: MemoryFile) -> None:
        """The new file leaves its folder (under whatever name it has now); open handles keep its
        data, and a flush through them sends nothing."""
        if not isinstance(scratch, NewFile):
            return  # an orphan has no name to leave
        folder = scratch.folder
        if folder is not None and folder.drop_new_file(scratch.name, scratch):
            self.tree.invalidate_entry(folder, scratch.name)
        scratch.folder = None

    def rename_new_file(self, scratch: NewFile, src_parent: Folder | OverlayNode, old: str, dst_parent: Folder,
                        new: str) -> None:
        """A new file not yet in-world keeps waiting for its first flush under the new name."""
        if isinstance(src_parent, Folder):
            src_parent.drop_new_file(old, scratch)
        scratch.rename(new)
        scratch.move(dst_parent)
        scratch.folder = dst_parent
        dst_parent.add_new_file(new, scratch)

    def take_out(self, scratch: NewFile, src_parent: Folder | OverlayNode, old: str) -> bool:
        """A new file renamed to a local (overlay) name: it leaves its folder's new files, and is
        never created in-world. Whether it was still there under `old`."""
        if not (isinstance(src_parent, Folder) and src_parent.drop_new_file(old, scratch)):
            return False
        scratch.folder = None
        return True

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
            scratch.settled()
            kept = await self.saver.recover(scratch.failed, bytes(scratch.data),
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
            shown = f"{self.tree.path_of(folder)}/{scratch.name}".lstrip("/")
            scratch.give_up(shown, dirty=bytes(scratch.data) != data)
            self.drop_new_file(scratch)
            raise
        finally:
            scratch.creating.set()
        self.drop_new_file(scratch)
        if bytes(scratch.data) != data:
            # Written while the create was in flight: that belongs to the item now (its inode).
            self.edits.start(item, bytearray(scratch.data))
        else:
            self.content.set_mtime(item, scratch.mtime_ns)  # the file's time goes on (cp -p set it)

    # --- creating ---------------------------------------------------------------------------

    async def create(self, folder: Folder, file_name: str, data: bytes, inode: int) -> Item:
        """Create a new item for a file named `file_name` whose kernel inode is `inode`."""
        want = parse_remote_name(file_name)
        shown = f"{self.tree.path_of(folder)}/{file_name}".lstrip("/")
        if not folder.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission on the prim")
        check_size(want.type, len(data), shown)
        text = decode(data, shown)
        with self.pending.counting():
            try:
                item = await self._create(folder, want, text, inode, shown)
            except FsError as exc:
                await self.saver.recover(shown, data, f"creating {shown} failed: {exc.message}")
                raise
        if want.type == "script":
            self.edits.start(item, bytearray(data))
            item.take_base(None)
            await self.saver.save(item)
        else:
            self.content.set_content(item, data, valid=True)
            self.history.record(item, SAVED, data)
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
        check_size(want.type, len(data), shown)
        text = decode(data, shown)
        with self.pending.counting():
            item = await self._create(folder, want, "" if want.type == "script" else text,
                                      self.tree.fresh_inode(), shown)
        if want.type != "script":
            self.content.set_content(item, data, valid=True)
            self.history.record(item, SAVED, data)
            item.take_base(data)
        else:
            item.take_base(None)
        return item

    async def _create(self, folder: Folder, want: RemoteName, text: str, inode: int, shown: str) -> Item:
        if want.type == "script":
            vm = "luau" if want.subtype == 1 else self.options.vm
            params = ItemCreateParams(prim_id=folder.uuid, name=want.sl_name, type=want.type, vm=vm)
        else:
            params = ItemCreateParams(prim_id=folder.uuid, name=want.sl_name, type=want.type, text=text)
        async with self._create_locks[folder.uuid]:
            # A region that is down answers before anything is created: safe to retry.
            res: ItemCreateResponse = await self.calls.call(f"create {shown}", "object.item.create", params,
                                                         ItemCreateResponse, retries=self.options.save_retries,
                                                         transient=region_down)
        data = res.as_item()
        if data.subtype is None and want.type == "script":
            data = attrs.evolve(data, subtype=want.subtype)
        item = folder.items.get(data.item_id)
        if item is None:
            # The response came before the viewer's object.update: enter the item now.
            item = Item(inode=inode, uuid=data.item_id, record=data, folder=folder, parent=folder)
            folder.add_item(item)
            self.tree.register(item)
            self.tree.bind_key(item.uuid, inode)
        elif item.inode != inode:
            self.deleter.rebind(item, inode)
        self.tree.relayout(folder)
        if item.name != names.item_file_name(want.sl_name, want.type, want.subtype):
            log.info("viewer named the new item %r (asked for %r)", item.name, want.sl_name)
        if want.type == "script":
            self.saver.created_script(item)
        self.emit(ev.Create(path=self.tree.path_of(item), item_id=item.uuid))
        return item
