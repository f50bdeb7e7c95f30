"""Writes into an item's file: open (O_TRUNC honoured), write, truncate and flush, through the
item's edit buffer, which its flush saves in-world (save.py); and `slfs restore`, which saves an
old version as a flush would.

Concurrency (trio): after every await each method re-checks what it acts on (another request may
have made the item's buffer meanwhile)."""

from __future__ import annotations

import errno

from ..world.fs_errors import FsError
from ..world.tree import Item, Tree
from . import buffers
from .content import Content
from .edits import Edits, check_size
from .save import Saver


class ItemWrites:
    """The file operations on an item's text, between its open and its flush."""

    def __init__(self, edits: Edits, saver: Saver, *, tree: Tree, content: Content) -> None:
        self.tree = tree
        self.content = content
        self.edits = edits
        self.saver = saver

    async def _editable(self, item: Item) -> bytearray:
        """The item's local buffer, made from its content on first need (awaits a fetch)."""
        if not item.writable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(item)}: no modify permission")
        if item.edit.buffer is None:
            data = await self.content.read_content(item)
            self.edits.refuse_unsaveable(item)
            if item.edit.buffer is None:  # re-checked: another request may have made it meanwhile
                self.edits.set_buffer(item, bytearray(data))
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
                await self.content.read_content(item)
            self.edits.refuse_unsaveable(item)
            if item.edit.buffer is None:  # re-checked after the await
                self.edits.set_buffer(item, bytearray())
                item.take_base(current)
                trunc = current != b""
            else:
                trunc = self.edits.empty(item)
        else:
            self.edits.refuse_unsaveable(item)
            trunc = self.edits.empty(item)
        if trunc:
            self.edits.touch(item)
        return trunc

    async def write_item(self, item: Item, off: int, data: bytes) -> None:
        local = await self._editable(item)
        shown = self.tree.path_of(item)
        self._refuse_oversize(item, off + len(data), shown)
        buffers.splice(local, off, data, shown)
        self.edits.touch(item)

    async def resize_item(self, item: Item, size: int, *, by_path: bool) -> None:
        """truncate(2)/ftruncate(2). By path no close follows, so the change is saved at once."""
        local = await self._editable(item)
        shown = self.tree.path_of(item)
        self._refuse_oversize(item, size, shown)
        if size != len(local):
            buffers.resize(local, size, shown)
            self.edits.touch(item)
        if by_path and item.edit.dirty and item.attached:
            await self.saver.save(item)

    def _refuse_oversize(self, item: Item, size: int, shown: str) -> None:
        """A write or truncation past the item's limit refuses the whole text, not just its tail:
        the pending edit is dropped (the file shows the in-world text again), so a close never
        saves the part that fitted."""
        try:
            check_size(item.info.type, size, shown)
        except FsError as exc:
            if item.edit.buffer is not None:
                self.edits.undo(item, data=True)
            raise self.edits.refused(shown, exc) from None

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
            self.edits.drop(item)
            kept = await self.saver.recover(shown, data, f"{shown}: the item is no longer published; not saved",
                                            item=item)
            raise FsError(errno.ENOENT, f"{shown}: no longer published; {kept}")
        folder = item.folder
        if folder is not None and folder.tombstones.get(item.name) is item:
            return  # unlinked while open: it goes to the trash, not in-world
        await self.saver.save(item)

    async def restore(self, item: Item, data: bytes) -> None:
        """`slfs restore`: save an old version as a save through the file would be, from what the
        mount showed (a change in-world since is a conflict: ESTALE, the version in the recovery
        folder), with its diagnostics, events and a version of its own."""
        shown = self.tree.path_of(item)
        if item.edit.buffer is not None and item.edit.dirty:
            raise FsError(errno.EBUSY, f"{shown}: has unsaved writes; save or close it first")
        self.edits.refuse_unsaveable(item)
        if item.cache.content is None:
            await self.content.read_content(item)
        if item.edit.buffer is not None:  # re-checked after the await
            raise FsError(errno.EBUSY, f"{shown}: is being written; save or close it first")
        item.take_base(item.cache.content)
        self.edits.start(item, bytearray(data))
        try:
            await self.saver.save(item)
        finally:
            if item.edit.dirty and item.edit.buffer is not None and bytes(item.edit.buffer) == data:
                # Failed: the text is in the recovery folder (save kept it); no file holds it open.
                self.edits.drop(item)
