"""An item's edit buffer (`Item.edit`), started, ended and touched here only, and the checks every
write service makes before it sends a text: the size limit, UTF-8, whether the item may be saved,
and how a refusal is told."""

from __future__ import annotations

import errno
import time
from collections.abc import Callable

from .. import event_types as ev
from ..world.fs_errors import FsError
from ..world.naming_rules import size_limit
from ..world.tree import Item, Tree
from .content import Content


def check_size(item_type: str, size: int, shown: str) -> None:
    """EFBIG when a text of `size` bytes is more than an item of `item_type` may hold."""
    limit = size_limit(item_type)
    if size > limit:
        raise FsError(errno.EFBIG, f"{shown}: {item_type}s hold at most {limit} bytes")


def decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FsError(errno.EILSEQ, f"{path}: not valid UTF-8 text (byte {exc.start})") from None


class Edits:
    """Start, touch and end items' local edits; the refusals said before anything is sent."""

    def __init__(self, tree: Tree, content: Content, *, emit: Callable[[ev.SlfsEvent], None],
                 note_error: Callable[[str], None]) -> None:
        self.tree = tree
        self.content = content
        self.emit = emit
        self.note_error = note_error

    def empty(self, item: Item) -> bool:
        """An O_TRUNC open of an item being edited: its buffer empties; whether it held anything."""
        buffer = item.edit.buffer
        if not buffer:
            return False
        buffer.clear()
        return True

    def set_buffer(self, item: Item, buffer: bytearray | None) -> None:
        """Start or end a local edit: what stat shows of the item is its buffer's while it lasts, so
        listings that kept its attributes are told (writes into the buffer need no telling: an item
        being edited is never replayed)."""
        if item.edit.buffer is None and buffer is not None:
            item.edit.mtime_before = item.mtime_ns
        item.edit.buffer = buffer
        self.tree.stat_changed(item)

    def start(self, item: Item, buffer: bytearray | None, *, dirty: bool = True) -> None:
        """A local edit holding `buffer`, to be saved when `dirty`."""
        self.set_buffer(item, buffer)
        item.edit.dirty = dirty

    def drop(self, item: Item) -> None:
        """The local edit ends unsaved (its text is in-world, in the recovery folder, or refused)."""
        self.set_buffer(item, None)
        item.edit.dirty = False

    def touch(self, item: Item) -> None:
        """The buffer changed: to be saved, and the file's time moves."""
        item.edit.dirty = True
        self.content.set_edit_mtime(item, time.time_ns())

    def undo(self, item: Item, *, data: bool) -> None:
        """The edit ends as if never made, its mtime too; the kernel is told (its data as well when
        `data`: the file shows the in-world text again)."""
        before = item.edit.mtime_before
        self.drop(item)
        if before is not None and item.mtime_ns != before:
            self.content.set_edit_mtime(item, before)
            self.tree.invalidate_item(item, data=data)
        elif data:
            self.tree.invalidate_item(item, data=True)

    def refuse_unsaveable(self, item: Item) -> None:
        """EACCES for text that cannot be saved, before anything is sent; the status says why when
        it is not the plain permission case (a notecard's embedded items come with its content)."""
        why = item.save_refusal()
        if why is not None:
            message = f"{self.tree.path_of(item)}: {why}"
            if item.writable:
                self.note_error(message)
            raise FsError(errno.EACCES, message)

    def refused(self, shown: str, exc: FsError) -> FsError:
        """A text refused before anything was sent, said in the status, the log and an event; the
        error to raise."""
        message = f"{exc.message}; nothing was saved, the in-world text is unchanged"
        self.note_error(message)
        self.emit(ev.Refused(path=shown, errno=errno.errorcode.get(exc.errno, str(exc.errno)), message=message))
        return FsError(exc.errno, message)
