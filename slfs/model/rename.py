"""Names: unlink(2) and rename(2) of items, new files and overlay files, and renames in-world.

A remote item belongs to a (folder, name) slot, not to a kernel inode. Editors replace files by
renaming and recreating them (vim, emacs, sed -i, git...): a file renamed over an item's name is
saved into that item (same item_id), an item renamed to a backup name becomes a local file while
the item waits, hidden, for a file of its name to be created again (deletes.py's tombstones).

Concurrency (trio): after every await each method re-checks what it acts on (the source must
still be under its name)."""

from __future__ import annotations

import errno
import os
import time

import trio

from ..protocol.types import ItemModifyParams, ObjectModifyParams
from ..world import names
from ..world.fs_errors import FsError, Refused
from ..world.naming_rules import check_sl_name, parse_remote_name
from ..world.tree import Folder, Item, MemoryFile, NewFile, Node, OverlayNode, Tree
from .calls import Calls
from .content import Content
from .create import Creator
from .deletes import Deleter
from .edits import Edits
from .overlay import Overlay
from .save import Saver


def language_change(shown: str, new_name: str) -> Refused:
    """`mv x.lsl x.luau`: EPERM with the reason, never EXDEV (mv would then copy the text into a
    new item and delete the old one)."""
    return Refused(errno.EPERM, f"{shown} -> {new_name}: a script's language (LSL or Luau) cannot change in "
                   "place: the viewer fixes it when the item is created; to have a Luau copy, copy the file "
                   "to the new name (a new item) and remove the old one")


class Renamer:
    """unlink and rename of files whose names are items' (or would be), and object renames."""

    def __init__(self, overlay: Overlay, edits: Edits, saver: Saver, creator: Creator, deleter: Deleter, *,
                 tree: Tree, calls: Calls, content: Content) -> None:
        self.tree = tree
        self.calls = calls
        self.content = content
        self.overlay = overlay
        self.edits = edits
        self.saver = saver
        self.creator = creator
        self.deleter = deleter

    async def remove(self, folder: Folder, node: Node) -> None:
        """unlink(2) of an item or a new file."""
        if isinstance(node, MemoryFile):
            self.creator.drop_new_file(node)
        elif isinstance(node, Item):
            await self.deleter.unlink(folder, node)
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
            return bytes(node.edit.buffer) if node.edit.buffer is not None else await self.content.read_content(node)
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
            orphan = self.deleter.detach(src_parent, src)
            self.overlay.adopt_inode(path, orphan.inode)
            self.tree.drop_node(orphan.inode)
        elif isinstance(src, NewFile) and self.creator.take_out(src, src_parent, old):
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
            self.deleter.take_back(dst_parent, new, target)
            await self.replace_into(target, data, src.inode)
            self.content.set_mtime(target, mtime_ns)  # a rename keeps the file's time (rsync set it)
            await self._drop_source(src, src_parent, old)
            return
        if isinstance(dst, NewFile):
            self.creator.drop_new_file(dst)
        if isinstance(src, NewFile):
            self.creator.rename_new_file(src, src_parent, old, dst_parent, new)
            return
        # An overlay file (rsync, gedit, JetBrains temp) renamed onto a new item name.
        data = await self.data_of(src)
        mtime_ns = await self._mtime_of(src)
        item = await self.creator.create(dst_parent, new, data, src.inode)
        self.content.set_mtime(item, mtime_ns)
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
            self.creator.drop_new_file(src)
        elif isinstance(src, Item) and isinstance(src_parent, Folder):
            # mv A B over an existing B: B holds A's content now (and A's inode); A goes like an rm.
            self.tree.move_to_fresh_inode(src)
            self.deleter.tombstone(src_parent, old, src)

    # --- renames in-world -------------------------------------------------------------------

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
            await self.calls.call(f"rename {shown}", "object.item.modify",
                               ItemModifyParams(prim_id=item.folder.uuid, item_id=item.uuid, name=want.sl_name))
            self.tree.renamed(item, want.sl_name)
        else:
            self.tree.relayout(item.folder)

    async def rename_folder(self, folder: Folder, new_name: str) -> None:
        shown = self.tree.path_of(folder)
        base, tag = names.strip_tag(new_name)
        if tag is not None and names.tag_of(folder.uuid, 64).startswith(tag):
            new_name = base
        sl_name = names.to_sl(new_name)
        check_sl_name(sl_name, new_name)
        if not folder.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission on the prim")
        await self.calls.call(f"rename {shown}", "object.modify",
                                 ObjectModifyParams(prim_id=folder.uuid, name=sl_name))
        self.tree.renamed(folder, sl_name)
        # Its local files (.git/, .vscode/...) are kept by the object's identity: they stay with it.

    async def replace_into(self, item: Item, data: bytes, inode: int) -> None:
        """A file renamed onto an item's name: its content is saved into that item (same item_id),
        and the item takes over the renamed file's inode."""
        shown = self.tree.path_of(item)
        why = item.save_refusal()
        if why is not None:
            raise FsError(errno.EACCES, f"{shown}: {why}")
        before = (item.edit.buffer, item.edit.dirty)
        self.edits.start(item, bytearray(data))
        try:
            await self.saver.save(item)
        except FsError:
            self.edits.start(item, before[0], dirty=before[1])
            raise
        self.deleter.rebind(item, inode)
