"""Saving an item's edits in-world: the size and text checks, the conflict check against what
the file was read from, the save's echo, the resend of a save a drop cut, the compile verdict, and
the recovery folder for what the viewer did not take. The Writer (writes.py) hands saves here;
creates (create.py), renames (rename.py) and the item writes (item_writes.py) save through it."""

from __future__ import annotations

import errno
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any, NoReturn

import trio

from ..local.keep import KeptCopies
from ..protocol import rpc_errors as codes
from ..protocol.codec import RequestParams
from ..protocol.compile_output import CompileRows, compile_rows
from ..protocol.types import (
    ContentSaveParams,
    ContentSaveResponse,
)
from ..world.fs_errors import CallCut, FsError, transient_save_error
from ..world.tree import Item, Tree
from .calls import Calls
from .compiles import CompileReport, CompileReports, failure_report, log_problems
from .content import Content
from .edits import Edits, check_size, decode
from .history import SAVED, History
from .options import Options
from .pending import PendingSaves
from .sources import Build, Sources
from .unsent import Unsent

log = logging.getLogger(__name__)


class Saver:
    """Saves of items' texts: the per-item save locks, and the scripts no compile has accepted
    yet. Each save counts in `pending` while it is in flight."""

    def __init__(self, keeper: KeptCopies, sources: Sources, edits: Edits, pending: PendingSaves, *, tree: Tree,
                 calls: Calls, content: Content, history: History, compiles: CompileReports, options: Options,
                 emit: Callable[..., None], note_error: Callable[[str], None], mountpoint: str) -> None:
        self.keeper = keeper
        self.sources = sources
        self.edits = edits
        self.pending = pending
        self.tree = tree
        self.calls = calls
        self.content = content
        self.history = history
        self.compiles = compiles
        self.options = options
        self.note_error = note_error
        self._save_locks: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)
        self._never_compiled: set[str] = set()  # scripts created here that no compile has accepted yet
        # The texts not in-world, and `slfs resend`.
        self.unsent = Unsent(self, keeper, tree=tree, content=content, history=history, emit=emit,
                             note_error=note_error, mountpoint=mountpoint)

    # --- the recovery folder ---------------------------------------------------------------

    async def recover(self, item_path: str, data: bytes, why: str, *, noun: str = "content",
                      item: Item | None = None, err: int = errno.EIO) -> str:
        """Keep content the viewer did not take (one copy per distinct text; unsent.py lists it and
        resends it); returns the clause the caller's error message ends with: "your content is in
        PATH", or, when the copy failed, that it did. The status says the same; a disk that refuses
        the copy is said there too. A copy of an item's text is a version of it too."""
        return await self.unsent.recover(item_path, data, why, err=err, noun=noun, item=item)

    # --- saving -----------------------------------------------------------------------------

    def created_script(self, item: Item) -> None:
        """A script created here: until a compile accepts it, nothing of it runs."""
        self._never_compiled.add(item.uuid)

    async def wait_saved(self, item: Item) -> None:
        """Until no save of `item` is in progress (a script's compile answer is then in)."""
        async with self._save_locks[item.uuid]:
            pass

    async def save(self, item: Item) -> None:
        """Store the item's local edits in-world. Returns once the viewer stored them."""
        async with self._save_locks[item.uuid]:
            if not item.edit.dirty or item.edit.buffer is None:
                return
            data = bytes(item.edit.buffer)
            path = self.tree.path_of(item)
            with self.pending.counting():
                try:
                    sent = await self._save(item, data, path)
                except FsError as exc:
                    if exc.errno != errno.ESTALE and data:  # an empty text refused: nothing to keep
                        await self.recover(path, data, f"saving {path} failed: {exc.message}", item=item,
                                           err=exc.errno)
                    if exc.errno == errno.EACCES and "embedded items" in exc.message:
                        # The viewer knows the notecard embeds items we were not told of: read-only now.
                        self.content.set_embedded_items(item, max(1, item.cache.embedded_items or 0))
                    raise
                if sent:  # a text in-world already leaves a recovered one still unsent
                    self.unsent.saved(item)

    async def push_save(self, item: Item, data: bytes, *, running: bool | None, expect: bytes | None,
                        main: str | None = None, local_root: str | None = None, verbatim: bytes | None = None) -> bool:
        """`slfs push` (control/push.py): save `data` into `item` with the run state `running`
        (None: as it runs now), when it still holds `expect` (None: anything; ESTALE otherwise:
        the push planned on another text). A built source's quoted includes are searched from the
        local file `main` inside `local_root` (the pushed tree); `verbatim`: the in-world text to
        store as it is for the source `data` (a rollback puts back the envelope it replaced, not a
        new build of it). Returns whether anything was sent.
        Nothing goes to the recovery folder: the text is in the pushed tree."""
        async with self._save_locks[item.uuid]:
            path = self.tree.path_of(item)
            if item.edit.buffer is not None and item.edit.dirty:
                raise FsError(errno.EBUSY, f"{path}: has unsaved writes on the mount; save or close it first")
            self.edits.refuse_unsaveable(item)
            if expect is not None:
                current = await self.content.read_content(item, current=True)
                if current != expect:
                    raise FsError(errno.ESTALE, f"{path}: changed in-world since the push planned it")
                item.take_base(current)
            with self.pending.counting():
                check_size(item.info.type, len(data), path)
                text = decode(data, path)
                build: Build | None = None
                if verbatim is not None:
                    held = item.cache.inworld if item.cache.inworld is not None else item.cache.content
                    if held == verbatim:
                        self._nothing_to_save(item, path)
                        return False
                    sent = await self._save(item, data, path, running=running,
                                            verbatim=decode(verbatim, path))
                    if sent:
                        self.unsent.saved(item)
                    return sent
                if item.is_script and self.sources.wants_build(item, text):
                    build = await self.sources.build_pushed(item, text, path, main, local_root)
                    if build is not None and self.sources.unchanged(item, build):
                        self._nothing_to_save(item, path)
                        return False
                sent = await self._save(item, data, path, build=build, running=running)
            if sent:
                self.unsent.saved(item)
            return sent

    async def _save(self, item: Item, data: bytes, path: str, *, build: Build | None = None,
                    force: bool = False, running: bool | None = None, verbatim: str | None = None) -> bool:
        """Whether anything was sent (nothing when the text is in-world already)."""
        check_size(item.info.type, len(data), path)
        text = decode(data, path)
        if build is None and verbatim is None:
            if not force and await self._inworld_already(item, data, text):
                # An editor's :w without a change, a cp or rsync of the same text, a restore of
                # what is in-world: saving again would recompile and reset the script, and make a
                # version of nothing.
                self._nothing_to_save(item, path)
                return False
            if item.is_script:
                build = await self.sources.build(item, text, path)  # awaits: includes may be fetched
        await self._check_conflict(item, data, path)
        assert item.folder is not None
        inworld = verbatim if verbatim is not None else build.inworld if build is not None else text
        # `running` always, as the item runs now: G1 uploads a save without it as stopped
        # (viewer-source.md §2, object.content.save), later viewers keep the state.
        if running is None:
            running = item.info.running
        params = ContentSaveParams(prim_id=item.folder.uuid, item_id=item.uuid, content=inworld,
                                   running=running if item.is_script else None)
        revision_before = item.info.revision
        try:
            res, revision_before = await self._send_save(item, params, data, path)
        except FsError as exc:
            if not inworld and exc.errno == errno.EINVAL:
                self._refuse_empty(item, path, exc.rpc_message or exc.message)
            if not (item.is_script and exc.rpc_code == codes.INTERNAL_ERROR):
                raise
            res = await self._stored_without_verdict(item, inworld, path, exc.rpc_message or exc.message)
        # Rows of any bytes (NULs, escapes) are cleaned there: the verdict never fails a save that landed.
        verdict = compile_rows(res.diagnostics, res.errors) if item.is_script else None
        echo_came = not item.echo.awaited
        if not echo_came:
            item.echo.expect()
        if item.edit.buffer is not None and bytes(item.edit.buffer) == data:
            self.edits.drop(item)
        # What we saved is known at the revision before the save: its echo (or an edit of someone
        # else's that came first) moves the revision, and a fetch there tells which
        # (Item.content_current); one that has told it already: the revision it confirmed.
        confirmed = item.content_current and item.cache.content == data
        self.content.set_content(item, data, valid=True, revision=None if confirmed else revision_before,
                            inworld=inworld.encode("utf-8") if build is not None or verbatim is not None else None)
        self.history.record(item, SAVED, data, inworld=item.cache.inworld)
        if build is not None:
            self.content.set_inworld_places(item, build.places())
        item.take_base(data)
        item.echo.set_unconfirmed(echo_came and revision_before is None and not confirmed)
        if not item.content_current:
            self.content.confirm_content(item)  # the echo (or what passed for it) came before the answer
        if verdict is not None:
            self._record_compile(item, res, verdict, path, build)
        if build is not None:
            log.info("saved %s (%d bytes of source, %d in-world)", path, len(data), len(inworld.encode()))
        else:
            log.info("saved %s (%d bytes)", path, len(data))
        return True

    async def _send_save(self, item: Item, params: ContentSaveParams, data: bytes,
                         path: str) -> tuple[ContentSaveResponse, int | None]:
        """object.content.save, and the item's revision before it. A save cut by a drop (CallCut)
        is sent once more when the session is back within reconnect_wait and the item then holds
        what the file was read from or what we sent: the same content again loses nothing, and
        the second answer brings the compile verdict the first one lost."""
        for attempt in range(2):
            # The viewer answers our save with an inventory update that says nothing of whose
            # change it was; the first one after our save is presumably ours, and must not make the
            # file look stale (on newer viewers a fetch at its revision confirms it:
            # Tree._content_may_have_changed).
            item.echo.expect()
            revision_before = item.info.revision
            try:
                res: ContentSaveResponse = await self._with_retries(
                    f"save {path}", "object.content.save", params, ContentSaveResponse)
                return res, revision_before
            except CallCut:
                item.echo.cancel()
                if attempt or not await self._resend_cut_save(item, data, params.content or "", path):
                    raise
            except BaseException:
                item.echo.cancel()
                raise
        raise AssertionError("unreachable")

    async def _resend_cut_save(self, item: Item, data: bytes, inworld: str, path: str) -> bool:
        """Whether a save the drop cut may go again: the session is back and the item holds its
        base (the save did not land) or what we sent (it did). Anything else is someone else's
        change, which a resend would overwrite: ESTALE, the edits in the recovery folder."""
        if not await self.calls.await_viewer():
            return False
        current = await self.content.read_content(item, fresh=True)
        if current == data or current == inworld.encode("utf-8"):
            log.info("%s: the link to the viewer dropped during the save, which landed; saving again "
                     "for the viewer's answer", path)
        elif item.edit.base is None or current == item.edit.base:
            log.info("%s: the link to the viewer dropped during the save, which did not land; saving again", path)
        else:
            await self._stale(item, data, path, current)
        return True

    async def _inworld_already(self, item: Item, data: bytes, text: str) -> bool:
        """Whether saving `data` would send nothing new. A built script's source the file shows
        already (saving it again would only recompile the same expansion; `slfs build` is the way
        to pick up changed includes); any other text, when it is what the item holds now."""
        if item.cache.content != data or not item.cache.content_valid:
            return False
        if item.cache.inworld is not None or (item.is_script and self.sources.wants_build(item, text)):
            return item.edit.base == data
        if item.content_current:
            return True
        try:
            # Ours, not yet confirmed, or an older revision: only the viewer's current text tells.
            return await self.content.read_content(item, current=True) == data
        except FsError:
            return False  # the save path says why, with its own errno

    def _nothing_to_save(self, item: Item, path: str) -> None:
        """The text is in-world already: the edit ends as if never made (its mtime too)."""
        self.edits.undo(item, data=False)
        log.debug("%s: the text is what the item holds in-world; nothing to save", path)
        self.compiles.forget_failed_attempt(item.uuid, path)  # its diagnostics describe the in-world text again

    async def rebuild(self, item: Item) -> str:
        """`slfs build`: expand the item's source again and save it when the build differs from
        what is in-world. Returns "saved", "unchanged" or "plain" (not a built source)."""
        async with self._save_locks[item.uuid]:
            if item.edit.buffer is not None and item.edit.dirty:
                raise FsError(errno.EBUSY, f"{self.tree.path_of(item)}: has unsaved writes; save or close it first")
            path = self.tree.path_of(item)
            data = await self.content.read_content(item)
            text = decode(data, path)
            build = await self.sources.build(item, text, path)
            if build is None:
                return "plain"
            if self.sources.unchanged(item, build):
                self.compiles.forget_failed_attempt(item.uuid, path)
                return "unchanged"
            item.take_base(data)
            with self.pending.counting():
                await self._save(item, data, path, build=build)
            return "saved"

    async def recompile(self, item: Item) -> None:
        """`slfs recompile FILE`: save the script's in-world text again, which the viewer compiles
        (and which resets the script: the one way to ask for that, as identical text is otherwise
        never sent)."""
        async with self._save_locks[item.uuid]:
            path = self.tree.path_of(item)
            if item.edit.buffer is not None and item.edit.dirty:
                raise FsError(errno.EBUSY, f"{path}: has unsaved writes; save or close it first")
            data = await self.content.read_content(item, current=True)
            item.take_base(data)
            with self.pending.counting():
                await self._save(item, data, path, force=True)

    def _refuse_empty(self, item: Item, path: str, answer: str) -> NoReturn:
        """G1-G3 refuse an empty `content` ("Invalid params: content is required", checked before
        anything else; viewer-source.md §2); G4 and the documented viewers store it, so the viewer
        decides. Refused, the file shows the in-world text again (nothing written is lost: there
        was nothing) and the error says what to do."""
        self.edits.drop(item)
        self.tree.invalidate_item(item, data=True)
        why = (f"{path}: this viewer cannot store an empty {item.info.type} ({answer}); nothing was saved "
               "and the file shows the in-world text again. Write at least one character, or rm the item")
        self.note_error(why)
        raise FsError(errno.EINVAL, why)

    async def _stored_without_verdict(self, item: Item, inworld: str, path: str, message: str) -> ContentSaveResponse:
        """-32603 "Internal error: stoi" (G1's and one G2 copy's JSON-RPC layer) or a bare "Internal
        error" (G3's) answering a script save: the viewer threw while converting the compiler's
        answer (viewer-source.md §3, "stoi"), after the upload. When the item now holds what we
        sent, that is a failed compile without detail: the save stands. Anything else leaves what
        the viewer stored unknown: F.diag says so, the item is fetched again, and EIO."""
        try:
            await self.content.read_content(item, fresh=True)
        except FsError as exc:
            log.warning("%s: cannot read back after %r: %s", path, message, exc.message)
        stored = item.cache.inworld if item.cache.inworld is not None else item.cache.content
        if stored != inworld.encode("utf-8"):
            self._garbled_compile(item, path, message)
            raise FsError(errno.EIO, f"{path}: the viewer failed the save without diagnostics ({message})")
        log.warning("%s: stored, but the viewer answered %r: a failed compile without detail", path, message)
        return ContentSaveResponse(success=True, prim_id=item.folder.uuid if item.folder else None, item_id=item.uuid,
                                   compiled=False, errors=[f"the viewer failed the compile without detail ({message})"])

    def _garbled_compile(self, item: Item, path: str, message: str) -> None:
        """A save answered without a usable verdict: `F.diag` says what the viewer said, the local
        edits go (save() keeps them in the recovery folder) and the item is fetched again."""
        self.compiles.record(item, failure_report(message, "the viewer did not say whether it compiled"), path)
        self.edits.drop(item)
        self.content.refetch(item)

    async def _check_conflict(self, item: Item, data: bytes, path: str) -> None:
        """Never overwrite an in-world change the file did not show (the viewer's save has no
        precondition, so slfs checks before it saves)."""
        base = item.edit.base
        if base is None:
            return
        now = item.info.revision
        if now is not None and item.edit.base_revision is not None:
            # Newer viewers: the revision says it. Read at the current one, or stale.
            if item.edit.base_revision >= now:
                return
            current = await self.content.read_content(item, current=True)
            if current not in (item.edit.base, data):  # the base again: nothing in-world is lost
                await self._stale(item, data, path, current)
            return
        if item.content_current and item.cache.content == base:
            return
        current = await self.content.read_content(item, current=True)
        if current in (base, data):
            return
        await self._stale(item, data, path, current)

    async def _stale(self, item: Item, data: bytes, path: str, current: bytes) -> NoReturn:
        kept = await self.recover(path, data, f"{path} changed in-world since it was read; not saved (conflict)",
                                  noun="version", item=item, err=errno.ESTALE)
        # The file now shows the in-world version; the local edits are in the recovery folder.
        self.edits.drop(item)
        self.content.set_content(item, current, valid=True)
        item.take_base(current)
        self.tree.invalidate_item(item, data=True)
        raise FsError(errno.ESTALE, f"{path}: changed in-world since it was read; {kept}")

    async def _with_retries(self, what: str, method: str, params: RequestParams, result_type: type[Any]) -> Any:
        """Right after a save some viewers report an existing item as not found, and a region may be
        briefly down: retry a few times."""
        return await self.calls.call(what, method, params, result_type, retries=self.options.save_retries,
                                  transient=transient_save_error)

    def _record_compile(self, item: Item, res: ContentSaveResponse, verdict: CompileRows, path: str,
                        build: Build | None) -> None:
        # A verdict with error rows and no `compiled` (a viewer that leaves it out) failed.
        compiled = res.compiled is True or (res.compiled is None and not any(
            d.level.upper() == "ERROR" for d in verdict.rows))
        if compiled:
            self._never_compiled.discard(item.uuid)
            note = ""
        elif item.uuid in self._never_compiled:
            note = "the script has never compiled, so nothing of it runs"
        else:
            note = "the previously compiled version keeps running"
        log_problems(verdict.problems, path)
        diagnostics = verdict.rows
        if build is None:
            report = CompileReport(compiled=compiled, diagnostics=diagnostics, at=time.time(), note=note)
        else:
            report = CompileReport(compiled=compiled, diagnostics=diagnostics, at=time.time(), note=note,
                                   places=tuple(build.place_of(d.row) if d.row > 0 else None for d in diagnostics),
                                   preprocessed=True,
                                   includes=build.expansion.includes)
        self.compiles.record(item, report, path)
