"""The files whose local text is not in-world, and sending a recovered one again (`slfs resend`).

A save that fails keeps the text it tried in the recovery folder (keep.py: one copy per distinct
text, none for the text the item holds in-world already) and records it here, per item, the
newest text only: `recovered` when the save may work later (the viewer was away, timed out, or the
item changed in-world meanwhile: ESTALE), `refused` when the text or the item is what was refused
(too large, empty, not UTF-8, no permission, gone). Beside them, `unsaved`: items written through
the mount and not saved yet (a dirty buffer). `.slfs/status` and `slfs status` list all three
(`unsent`); a later save of the item that works clears its entry, and so does a fetch showing the
recovered text in-world.

`resend` saves the recovered text with the usual conflict check, made against the text it was
based on (what the file was read from when the save failed): an item changed in-world since is
ESTALE unless forced. What it sends is what the recovery copy holds then (a user may have fixed the
copy), or the text kept in memory when the copy is gone or could not be written.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from .. import event_types as ev
from ..local.keep import KeptCopies, kept_clause
from ..world.fs_errors import FsError
from ..world.tree import Item, NewFile, Tree
from .buffers import HELD_MAX
from .content import Content
from .edits import Edits
from .history import RECOVERED as RECOVERED_VERSION
from .history import History

log = logging.getLogger(__name__)

UNSAVED = "unsaved"
RECOVERED = "recovered"
REFUSED = "refused"
# What the viewer or slfs refuses for what the text or the item is: the same text sent again fails
# the same way until that changes.
REFUSALS = frozenset({errno.EFBIG, errno.EINVAL, errno.EACCES, errno.EPERM, errno.EILSEQ, errno.ENOENT,
                      errno.ENAMETOOLONG})


@attrs.define
class Recovered:
    """The newest text of an item that a save did not land."""

    item_id: str
    path: str  # in the mount, when the save failed
    data: bytes
    copy: Path | None  # its recovery copy (None: the disk refused it)
    reason: str
    err: int
    base: bytes | None  # the in-world text it was based on (what the file was read from)
    at: float

    @property
    def state(self) -> str:
        return state_of(self.err)


def state_of(err: int) -> str:
    """`refused` for what the text or the item is, `recovered` for what may pass."""
    return REFUSED if err in REFUSALS else RECOVERED


def _read_copy(path: Path) -> bytes:
    """A recovery copy's bytes; one grown past what could ever be sent is refused before it is read."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > HELD_MAX:
            raise FsError(errno.EFBIG, f"the recovery copy {path} holds {size} bytes, more than could be sent")
        return f.read()


class Resaves(Protocol):
    """What `slfs resend` needs of the Saver (save.py), which records its failures here: the items'
    edit buffers, and the save itself."""

    edits: Edits

    async def save(self, item: Item) -> None: ...


class Unsent:
    """The recovered texts of this run, by item; the status's `unsent` list; `slfs resend`."""

    def __init__(self, saver: Resaves, keeper: KeptCopies, *, tree: Tree, content: Content, history: History,
                 emit: Callable[..., None], note_error: Callable[[str], None], mountpoint: str) -> None:
        self.saver = saver
        self.keeper = keeper
        self.tree = tree
        self.content = content
        self.history = history
        self.emit = emit
        self.note_error = note_error
        self.mountpoint = mountpoint
        self.entries: dict[str, Recovered] = {}  # by item id

    # Service (model/services.py): the `unsent` lines of the status.

    def on_event(self, event: ev.SlfsEvent) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {"unsent": self.listing()}

    # --- recording ------------------------------------------------------------------------------

    async def recover(self, item_path: str, data: bytes, why: str, *, err: int, noun: str,
                      item: Item | None) -> str:
        """Keep content the viewer did not take (save.py's Saver.recover); the clause the caller's error
        message ends with."""
        if item is not None:
            self.history.record(item, RECOVERED_VERSION, data)
        inworld = (item.edit.base, item.cache.content) if item is not None else ()
        kept = await self.keeper.keep_text(item.uuid if item is not None else item_path, item_path, data, why,
                                           inworld=inworld)
        if kept.inworld:
            clause = f"the {noun} is the text in-world, so no copy was kept"
            earlier = self.entries.get(item.uuid) if item is not None else None
            if earlier is not None and earlier.copy is not None:
                clause += f"; the newest recovered text is in {earlier.copy}"
        else:
            clause = kept_clause(str(kept.path) if kept.path is not None else None, noun)
            if item is not None:
                base = item.edit.base if item.edit.base is not None else item.cache.content
                self.entries[item.uuid] = Recovered(item.uuid, item_path, bytes(data), kept.path, why, err, base,
                                                    time.time())
            self.emit(ev.Recovery(path=item_path, item_id=item.uuid if item is not None else None,
                                     recovery=str(kept.path) if kept.path is not None else None, reason=why,
                                     code=errno.errorcode.get(err, str(err)), made=kept.made, state=state_of(err)))
        self.note_error(f"{why}; {clause}")
        return clause

    def saved(self, item: Item) -> None:
        """A save of `item` landed: what it had recovered is superseded."""
        if self.entries.pop(item.uuid, None) is not None:
            log.info("%s: saved; its recovered text is no longer listed", self.tree.path_of(item))

    # --- listing --------------------------------------------------------------------------------

    def _item(self, item_id: str) -> Item | None:
        node = self.tree.find(item_id)
        return node if isinstance(node, Item) and node.attached else None

    def listing(self) -> list[dict[str, Any]]:
        """The files whose local text is not in-world, each with its path on the mount, state,
        recovery copy and reason."""
        out: list[dict[str, Any]] = []
        for item_id, entry in list(self.entries.items()):
            item = self._item(item_id)
            if item is not None and item.content_current and item.cache.content == entry.data:
                del self.entries[item_id]  # in-world after all (saved elsewhere, or the save landed)
                continue
            out.append(self._recovered(entry, item))
        listed = {e["item_id"] for e in out}
        for node in list(self.tree.nodes.values()):
            if isinstance(node, Item) and node.edit.dirty and node.edit.buffer is not None:
                if node.cache.content_valid and node.edit.buffer == node.cache.content:
                    continue  # written, but what it holds is the text in-world
                recovered = self.entries.get(node.uuid)
                if node.uuid in listed and recovered is not None and bytes(node.edit.buffer) == recovered.data:
                    continue  # the recovered text is the one the file holds: listed once
                out.append(self._unsaved(self.tree.path_of(node), node.uuid, recovered))
            elif isinstance(node, NewFile) and node.folder is not None and node.dirty and node.data:
                out.append(self._unsaved(f"{self.tree.path_of(node.folder)}/{node.name}".lstrip("/"), None, None))
        return out

    def _abspath(self, path: str) -> str:
        return os.path.join(self.mountpoint or "/", path)

    def _recovered(self, entry: Recovered, item: Item | None) -> dict[str, Any]:
        path = self.tree.path_of(item) if item is not None else entry.path
        known = item.cache.content if item is not None else None
        changed = known is not None and entry.base is not None and known not in (entry.base, entry.data)
        held = item is not None and item.edit.dirty and item.edit.buffer is not None \
            and bytes(item.edit.buffer) == entry.data
        return {"path": self._abspath(path), "item_id": entry.item_id, "state": entry.state,
                "recovery": str(entry.copy) if entry.copy is not None else None, "reason": entry.reason,
                "code": errno.errorcode.get(entry.err, str(entry.err)), "at": entry.at, "size": len(entry.data),
                "inworld_changed": changed, "file_holds_it": held, "attached": item is not None}

    def _unsaved(self, path: str, item_id: str | None, entry: Recovered | None) -> dict[str, Any]:
        return {"path": self._abspath(path), "item_id": item_id, "state": UNSAVED,
                "recovery": str(entry.copy) if entry is not None and entry.copy is not None else None,
                "reason": "written through the mount and not saved yet", "code": None}

    # --- resend ---------------------------------------------------------------------------------

    async def _text_of(self, entry: Recovered) -> bytes:
        """What the recovery copy holds now, or the text kept when there is no copy to read."""
        if entry.copy is not None:
            try:
                return await trio.to_thread.run_sync(_read_copy, entry.copy)
            except FileNotFoundError:
                log.info("%s: its recovery copy %s is gone; resending the text kept in memory", entry.path, entry.copy)
            except OSError as exc:
                raise FsError(errno.EIO, f"{entry.path}: cannot read its recovery copy {entry.copy}: "
                              f"{exc.strerror or exc}") from None
        return entry.data

    def _unsaved_writes(self, item: Item, data: bytes) -> None:
        if item.edit.dirty and item.edit.buffer is not None and bytes(item.edit.buffer) != data:
            raise FsError(errno.EBUSY, f"{self.tree.path_of(item)}: has unsaved writes other than its recovered "
                          "text; save or close it first")

    async def resend(self, item: Item, *, force: bool = False) -> dict[str, Any]:
        """Save the newest recovered text of `item`; ESTALE (unless `force`) when the item changed
        in-world since the text was based on it. {"path", "item_id", "recovery", "sent", ...}."""
        path = self.tree.path_of(item)
        entry = self.entries.get(item.uuid)
        if entry is None:
            raise FsError(errno.ENOENT, f"{path}: no recovered text to resend (`slfs status` lists them)")
        out: dict[str, Any] = {"path": self._abspath(path), "item_id": item.uuid,
                               "recovery": str(entry.copy) if entry.copy is not None else None}
        try:
            data = await self._text_of(entry)
            self._unsaved_writes(item, data)
            why = item.save_refusal()
            if why is not None:
                raise FsError(errno.EACCES, f"{path}: {why}")
            current = await self.content.read_content(item, fresh=True)
            self._unsaved_writes(item, data)  # re-checked after the await
            if current == data:
                self._drop_buffer(item, data)
                self.entries.pop(item.uuid, None)
                self._resent(out, "in-world")
                return {**out, "sent": False, "note": "the item holds this text in-world already"}
            if entry.base is not None and current != entry.base:
                if not force:
                    raise FsError(errno.ESTALE, f"{path}: changed in-world since the recovered text was based on "
                                  "it; not sent (`slfs resend --force` sends it over that change, which the "
                                  "history keeps)")
                log.warning("%s: resending over an in-world change (--force)", path)
            await self._save(item, data, current)
        except FsError as exc:
            self._resent(out, "failed", error=exc.message, code=errno.errorcode.get(exc.errno, str(exc.errno)))
            raise
        self._resent(out, "saved", force=force)
        return {**out, "sent": True}

    async def _save(self, item: Item, data: bytes, current: bytes) -> None:
        """A save through the file would be, from `current` (what the item holds in-world now)."""
        self.saver.edits.start(item, bytearray(data))
        item.take_base(current)
        try:
            await self.saver.save(item)
        finally:
            # Failed: the text is in the recovery folder again (save kept it) and listed.
            self._drop_buffer(item, data)

    def _drop_buffer(self, item: Item, data: bytes) -> None:
        if item.edit.buffer is not None and bytes(item.edit.buffer) == data:
            self.saver.edits.drop(item)

    def _resent(self, out: dict[str, Any], outcome: str, *, error: str | None = None, code: str | None = None,
                force: bool | None = None) -> None:
        self.emit(ev.Resend(path=out["path"], item_id=out["item_id"], recovery=out["recovery"], outcome=outcome,
                               error=error, code=code, force=force))
