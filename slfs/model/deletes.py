"""Deleting items: `rm` leaves a tombstone in the item's (folder, name) slot; a create of the same
name within the grace period adopts the item again, and only after it does the delete reach the
viewer, after a copy to the trash (a trash that cannot take it refuses the rm or keeps the item)."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable

import trio

from .. import event_types as ev
from ..local.keep import TRASH, KeptCopies
from ..protocol.types import (
    ItemDeleteParams,
)
from ..world.fs_errors import FsError
from ..world.tree import Folder, Item, Orphan, Tree
from .calls import Calls
from .content import Content
from .edits import Edits
from .history import DELETED, History
from .options import Options
from .pending import PendingSaves

log = logging.getLogger(__name__)


class Deleter:
    """The items' slots: adopt, detach, the tombstones (`Folder.tombstones`, written here only)
    and their delayed deletes, each counted in `pending` while it waits or runs."""

    def __init__(self, keeper: KeptCopies, edits: Edits, pending: PendingSaves, *, tree: Tree, calls: Calls,
                 content: Content, history: History, options: Options, emit: Callable[..., None],
                 note_error: Callable[[str], None], spawn: Callable[..., None]) -> None:
        self.keeper = keeper
        self.edits = edits
        self.pending = pending
        self.tree = tree
        self.calls = calls
        self.content = content
        self.history = history
        self.options = options
        self.emit = emit
        self.note_error = note_error
        self.spawn = spawn
        self._hurry = trio.Event()

    # --- slots: adopt, detach, tombstones ------------------------------------------------------

    def rebind(self, item: Item, inode: int) -> Orphan:
        """Tree.rebind (content fetches are keyed by UUID, so one in flight survives it)."""
        return self.tree.rebind(item, inode)

    def adopt(self, folder: Folder, name: str) -> Item | None:
        """A create of a name whose item was unlinked or renamed away: the item comes back."""
        item = folder.unbury(name)
        if item is None:
            return None
        if item.folder is not folder or item.uuid not in folder.items:
            return None  # deleted in-world meanwhile
        self.rebind(item, self.tree.fresh_inode())
        item.take_base(item.cache.content)
        self.edits.start(item, bytearray())
        self.tree.relayout(folder)
        log.info("%s: re-created, keeps item %s", self.tree.path_of(item), item.uuid)
        return item

    def detach(self, folder: Folder, item: Item) -> Orphan:
        """`mv F F~`: the name leaves the listing locally; nothing happens in-world."""
        name = item.name
        folder.bury(name, item)
        orphan = self.rebind(item, self.tree.fresh_inode())
        self.tree.relayout(folder)
        return orphan

    async def unlink(self, folder: Folder, item: Item) -> None:
        shown = self.tree.path_of(item)
        if not item.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission")
        if not self.calls.connected:
            raise FsError(errno.EIO, f"{shown}: not connected to the viewer; not deleted")
        # The delete happens after the grace period, when the rm has long returned: a trash that
        # cannot take the copy now (a file in its place, a read-only or full disk) fails the rm
        # itself, so no rm seems to work and then quietly does not happen.
        problem = await self.keeper.check(TRASH, shown, item.size or 0, "deleted")
        if problem is not None:
            code = errno.ENOSPC if problem.errno in (errno.ENOSPC, errno.EDQUOT) else errno.EIO
            message = f"{shown} was not deleted: its trash copy cannot be written ({problem})"
            self.note_error(message)
            raise FsError(code, message)
        self.rebind(item, self.tree.fresh_inode())
        self.tombstone(folder, item.name, item)

    def tombstone(self, folder: Folder, name: str, item: Item) -> None:
        """The name leaves the listing now; the delete reaches the viewer after the grace period,
        unless a create of the name adopts the item first."""
        folder.bury(name, item)
        self.tree.relayout(folder)
        self.spawn(self._delete_later, folder, name, item)

    def take_back(self, folder: Folder, name: str, item: Item) -> None:
        """A file renamed over the tombstoned `item`'s name saves into it: the item is listed again."""
        if item.folder is folder and folder.unbury(name, item) is not None:
            self.tree.relayout(folder)

    async def _delete_later(self, folder: Folder, name: str, item: Item) -> None:
        with self.pending.counting():
            with trio.move_on_after(self.options.delete_grace):
                await self._hurry.wait()  # set at shutdown: carry the delete out now
            if folder.unbury(name, item) is None:
                return  # re-created meanwhile: the item lives on
            shown = f"{self.tree.path_of(folder)}/{name}".lstrip("/")
            if item.uuid not in folder.items:
                return
            try:
                await self._keep_then_delete(folder, item, shown)
            except FsError as exc:
                self.note_error(exc.message)
                self.tree.relayout(folder)  # it is still there: show it again

    async def _keep_then_delete(self, folder: Folder, item: Item, shown: str) -> None:
        """The item's text to the history and the trash, then the delete in-world. Raises FsError
        when the trash cannot take the copy (the item stays: an rm must stay recoverable, as when
        the viewer refuses the delete) or the viewer refuses. Content the viewer does not give (no
        copy can exist) is no reason to keep the item."""
        data: bytes | None = None
        if item.edit.buffer is not None:
            data = bytes(item.edit.buffer)
        elif item.readable:
            try:
                data = await self.content.read_content(item)
            except FsError as exc:
                log.warning("%s: no copy in the trash (%s)", shown, exc.message)
        else:
            log.info("%s: no copy in the trash (not readable)", shown)
        if data is not None:
            self.history.record(item, DELETED, data)
            if await self.keeper.keep(TRASH, shown, data, "deleted") is None:
                raise FsError(errno.EIO, f"{shown} was not deleted: its trash copy failed ({self.keeper.last_failure})")
        try:
            await self.calls.call(f"delete {shown}", "object.item.delete",
                               ItemDeleteParams(prim_id=folder.uuid, item_id=item.uuid))
        except FsError as exc:
            exc.message = f"deleting {shown} failed: {exc.message}"
            raise
        self.emit(ev.Delete(path=shown, item_id=item.uuid))
        log.info("deleted %s (item %s)", shown, item.uuid)

    async def delete_now(self, folder: Folder, item: Item) -> None:
        """`slfs push --delete` and its rollback (control/push.py): the delete reaches the viewer now,
        with no grace period, after the copy to the trash and a version in the history (a trash
        that cannot take it keeps the item: EIO)."""
        shown = self.tree.path_of(item)
        if not item.writable:
            raise FsError(errno.EACCES, f"{shown}: no modify permission")
        if not self.calls.connected:
            raise FsError(errno.EIO, f"{shown}: not connected to the viewer; not deleted")
        with self.pending.counting():
            await self._keep_then_delete(folder, item, shown)

    def hurry_deletes(self) -> None:
        """Shutdown: deletes whose grace period has not passed are carried out now (wait_idle
        then waits for them), rather than dropped with the daemon."""
        self._hurry.set()
