"""Saving live files into the viewer's temp files (model/live.py says what live files are).

A save writes the temp file whole and atomically (a new file renamed over it) and moves its mtime
to a later whole second than the viewer last saw: the viewer polls once a second and compares whole
seconds, so two writes in one second would otherwise look like one. A save waits, when needed,
until the viewer had time to see the previous one (its compile answer, or one poll period), so no
write is missed or merged with the next. Text that uses the preprocessor is built exactly as an
object-explorer save is; the temp file then holds what in-world will hold. close() returns once
the file is written: the compile is the viewer's, and its answer comes as `script.compiled`.

A new file in `.slfs/live/` under a tool's temporary name (sed -i's `sedXXXXXX`, perl -pi's
`XXXXXXXX`, mkstemp's) is a NewFile kept in memory, as new files of folders are before their first
flush: renamed over a live file it is saved into it exactly as a write and close of the live file
would be, and the live file takes over its inode (as an item does in `Renamer.replace_into`). One
not renamed within SCRATCH_GRACE seconds of its last write, or still there when the daemon stops,
goes to the recovery folder.

Concurrency (trio): like the Writer, every await is followed by a re-check of what it acts on;
saves of one live file are serialised by a per-script lock.
"""

from __future__ import annotations

import errno
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable

import trio

from .. import event_types as ev
from ..local import live_files
from ..world.fs_errors import FsError
from ..world.naming_rules import is_replacement_name, size_limit
from ..world.tree import Item, LiveState, NewFile, Tree
from . import buffers
from .compiles import CompileReports
from .history import SAVED, History
from .live import POLL_MARGIN, VIEWER_POLL, LiveScript, LiveScripts
from .options import Options
from .sources import BuildFailed, Sources, wants_build

log = logging.getLogger(__name__)

Recover = Callable[[str, bytes, str], Awaitable[str]]

# How long a new file of .slfs/live waits, unwritten, for its rename over a live file (sed -i and
# perl -pi rename theirs within milliseconds) before it goes to the recovery folder.
SCRATCH_GRACE = 60.0


class LiveWriter:
    def __init__(self, sources: Sources, recover: Recover, *, tree: Tree, live: LiveScripts,
                 compiles: CompileReports, history: History, options: Options, emit: Callable[[ev.SlfsEvent], None],
                 note_error: Callable[[str], None], spawn: Callable[..., None],
                 invalidate_live_name: Callable[[str], None]) -> None:
        self.tree = tree
        self.live = live
        self.compiles = compiles
        self.history = history
        self.options = options
        self.emit = emit
        self.note_error = note_error
        self.spawn = spawn
        self.invalidate_live_name = invalidate_live_name
        self.sources = sources
        self.recover = recover
        self._locks: defaultdict[str, trio.Lock] = defaultdict(trio.Lock)

    def _shown_name(self, ls: LiveScript) -> str:
        return f".slfs/live/{ls.name}"

    async def open(self, ls: LiveScript, *, truncate: bool) -> None:
        if not self.live.exists(ls):
            raise FsError(errno.ENOENT, f"{ls.name}: {ls.gone}")
        if ls.local is None:
            await self.live.refresh(ls)
            if ls.local is None:  # re-checked after the read
                ls.local = bytearray(ls.shown)
        if truncate:
            ls.local = bytearray()
            ls.dirty = True

    def write(self, ls: LiveScript, off: int, data: bytes) -> None:
        self._refuse_oversize(ls, off + len(data))
        buffers.splice(self._buffer(ls), off, data, self._shown_name(ls))
        ls.dirty = True

    def resize(self, ls: LiveScript, size: int) -> None:
        self._refuse_oversize(ls, size)
        buffers.resize(self._buffer(ls), size, self._shown_name(ls))
        ls.dirty = True

    def _refuse_oversize(self, ls: LiveScript, size: int) -> None:
        """As for items (ItemWrites._refuse_oversize): past the limit the whole pending text is
        dropped, so a close never saves the part that fitted."""
        limit = size_limit("script")
        if size <= limit:
            return
        shown = self._shown_name(ls)
        ls.local, ls.dirty = None, False
        message = f"{shown}: scripts hold at most {limit} bytes; nothing was saved, the in-world text is unchanged"
        self.note_error(message)
        self.emit(ev.Refused(path=shown, errno="EFBIG", message=message))
        raise FsError(errno.EFBIG, message)

    def _buffer(self, ls: LiveScript) -> bytearray:
        if ls.local is None:
            ls.local = bytearray(ls.shown)
        return ls.local

    async def commit(self, ls: LiveScript) -> None:
        """flush/fsync: write the temp file (nothing when nothing changed)."""
        async with self._locks[ls.script_id]:
            if not ls.dirty or ls.local is None:
                return
            data = bytes(ls.local)
            shown = self._shown_name(ls)
            if ls.gone is not None:
                ls.local, ls.dirty = None, False
                kept = await self.recover(shown, data, f"{shown}: {ls.gone}; not saved")
                raise FsError(errno.ENOENT, f"{shown}: {ls.gone}; {kept}")
            try:
                await self._save(ls, data, shown)
            except FsError as exc:
                await self.recover(shown, data, f"saving {shown} failed: {exc.message}")
                raise

    async def _save(self, ls: LiveScript, data: bytes, shown: str) -> None:
        limit = size_limit("script")
        if len(data) > limit:
            raise FsError(errno.EFBIG, f"{shown}: scripts hold at most {limit} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FsError(errno.EILSEQ, f"{shown}: not valid UTF-8 text (byte {exc.start})") from None
        luau = ls.language == "luau"
        build = None
        built = wants_build(text, luau=luau, enveloped=ls.inworld is not None)
        if data == ls.shown:
            # As for items: the text the file shows already. Written again, the viewer would
            # save it, recompile and reset the script (and a build stamp a new //last_compiled).
            ls.local, ls.dirty = None, False
            log.debug("%s: the text is what the viewer's file holds; nothing to save", shown)
            self.compiles.forget_failed_attempt(ls.key, shown)  # its diagnostics describe that text again
            return
        if built:
            try:
                build = await self.sources.build_text(text, self.live.abspath(ls), luau=luau,
                                                      enveloped=ls.inworld is not None, vm=self._vm(ls),
                                                      search_dir=self.live.item_folder_path(ls))
            except BuildFailed as exc:
                self.compiles.note(ls.key, exc.report)
                raise exc.error from None
        out = build.inworld if build is not None else text
        await self._pace(ls)
        if ls.gone is not None:  # re-checked after the wait
            raise FsError(errno.ENOENT, f"{shown}: {ls.gone}")
        mtime_s = max(int(time.time()), ls.mtime_s + 1)
        try:
            stamp = await trio.to_thread.run_sync(live_files.write_atomically, ls.temp_path, ls.where,
                                                  out.encode("utf-8"), mtime_s)
        except FileNotFoundError:
            self.live.end(ls, "the viewer removed its temp file")
            raise FsError(errno.ENOENT, f"{shown}: {ls.gone}") from None
        except FsError as exc:  # no longer the viewer's file: never written (local/live_files.py)
            raise self.live.not_the_viewers(ls, exc) from None
        except OSError as exc:
            raise FsError(errno.EIO, f"{shown}: writing {ls.temp_path} failed: {exc.strerror}") from None
        self.live.wrote(ls, mtime_s)
        self.live.set_text(ls, out, stamp=stamp, ours=True, places=build.places() if build is not None else None)
        if ls.local is not None and bytes(ls.local) == data:
            ls.local, ls.dirty = None, False
        log.info("live: wrote %s to %s (%d bytes)", shown, ls.temp_path, len(out.encode("utf-8")))
        self.emit(ev.LiveSave(name=ls.name, script_id=ls.script_id, bytes=len(out.encode("utf-8")),
                                 preprocessed=build is not None))
        item = self.tree.find(ls.item_id or "")
        if isinstance(item, Item) and item.attached:  # a script of a published object: a version of it
            self.history.record(item, SAVED, data, inworld=out.encode("utf-8") if build is not None else None)

    async def replace(self, ls: LiveScript, data: bytes) -> None:
        """`data` as the whole live file, saved as a write and close of it would be (its errors,
        its recovery copy); when that fails the live file keeps what it held."""
        if not self.live.exists(ls):
            raise FsError(errno.ENOENT, f"{self._shown_name(ls)}: {ls.gone}")
        before = (ls.local, ls.dirty)
        ls.local, ls.dirty = bytearray(data), True
        try:
            await self.commit(ls)
        except FsError:
            ls.local, ls.dirty = before
            raise

    # --- new files: the temp files of sed -i, perl -pi... -------------------------------------

    def new_file(self, name: str) -> NewFile:
        """create(2) in .slfs/live: a tool's temporary name makes a file kept in memory until it
        is renamed over a live file; any other name is refused (live files come from `slfs edit`)."""
        if self.live.named(name) is not None or name in self.live.new_files:
            raise FsError(errno.EEXIST, "")
        if not is_replacement_name(name):
            raise FsError(errno.EPERM, f".slfs/live/{name}: live files come only from `slfs edit`; a new file "
                          "here needs a tool's temporary name (sed -i, perl -pi) and is saved by a rename over "
                          "a live file")
        scratch = NewFile(inode=self.tree.fresh_inode(), uuid="", name=name, mode=0o644, live=LiveState.NAMED)
        self.tree.add_node(scratch)
        self.live.new_files[name] = scratch
        self.spawn(self._expire, scratch)
        return scratch

    def remove(self, scratch: NewFile) -> None:
        """unlink(2) of a new file: it goes, with what it holds (as on any disk)."""
        if self.live.new_files.get(scratch.name) is not scratch:
            raise FsError(errno.ENOENT, "")
        self._drop(scratch)

    def _drop(self, scratch: NewFile) -> None:
        """The new file leaves .slfs/live; open handles keep its data."""
        if self.live.new_files.get(scratch.name) is scratch:
            del self.live.new_files[scratch.name]
            self.invalidate_live_name(scratch.name)
        scratch.live = None

    async def rename(self, scratch: NewFile, new: str, *, replace: bool) -> LiveScript | None:
        """rename(2) of a new file within .slfs/live. Over a live file, its content is saved into
        it as a write and close of the live file would be, and the live file takes the new file's
        inode (returned, for the file system to show). To another temporary name it is renamed.
        Otherwise EPERM, and it keeps its name."""
        old = scratch.name
        if self.live.new_files.get(old) is not scratch:
            raise FsError(errno.ENOENT, "")
        target = self.live.named(new)
        if target is not None:
            if not replace:
                raise FsError(errno.EEXIST, "")
            await self.replace(target, bytes(scratch.data))
            # Saved: the name means the live file, through the inode the kernel now has for it.
            self._drop(scratch)
            self.tree.drop_node(scratch.inode)
            self.tree.bind_key(target.key, scratch.inode)
            target.inode = scratch.inode
            log.info("live: .slfs/live/%s renamed over %s: saved into it", old, target.name)
            return target
        if not is_replacement_name(new):
            raise FsError(errno.EPERM, f".slfs/live/{old} -> {new}: not a live file; a new file here is saved "
                          "only by a rename over a live file")
        other = self.live.new_files.get(new)
        if other is not None:
            if not replace:
                raise FsError(errno.EEXIST, "")
            self._drop(other)
        del self.live.new_files[old]
        scratch.rename(new)
        self.live.new_files[new] = scratch
        return None

    async def _expire(self, scratch: NewFile) -> None:
        """A new file not renamed over a live file within SCRATCH_GRACE seconds of its last write
        is given up: what it holds goes to the recovery folder and its name goes."""
        seen: int | None = None
        while self.live.new_files.get(scratch.name) is scratch:
            if scratch.mtime_ns == seen:
                shown = f".slfs/live/{scratch.name}"
                self._drop(scratch)
                scratch.live = LiveState.EXPIRED
                scratch.give_up(shown, dirty=False)
                if scratch.data:
                    await self.recover(shown, bytes(scratch.data), f"{shown}: not renamed over a live file "
                                       f"within {SCRATCH_GRACE:g} s; not saved")
                else:
                    log.info("live: %s: empty and not renamed within %g s; removed", shown, SCRATCH_GRACE)
                return
            seen = scratch.mtime_ns
            await trio.sleep(SCRATCH_GRACE)

    async def commit_new_file(self, scratch: NewFile) -> None:
        """flush/fsync of a new file: nothing (it is saved by its rename), unless it was given up
        and written since: that is kept in the recovery folder too."""
        if scratch.live is LiveState.EXPIRED and scratch.dirty:
            scratch.settled()
            why = f"{scratch.failed}: written after it was given up (not renamed over a live file); not saved"
            kept = await self.recover(scratch.failed, bytes(scratch.data), why)
            raise FsError(errno.EIO, f"{why}; {kept}")

    async def keep_unsaved(self) -> None:
        """The daemon stops: new files never renamed over a live file go to the recovery folder."""
        for scratch in list(self.live.new_files.values()):
            if scratch.data:
                shown = f".slfs/live/{scratch.name}"
                await self.recover(shown, bytes(scratch.data),
                                   "daemon stopped before the new file was renamed over a live file")
        for node in list(self.tree.nodes.values()):
            if isinstance(node, NewFile) and node.live is LiveState.EXPIRED and node.dirty:
                await self.recover(node.failed, bytes(node.data), "written after it was given up; not saved")

    def _vm(self, ls: LiveScript) -> str:
        node = self.tree.find(ls.item_id or "")
        if isinstance(node, Item) and node.info.vm:
            return node.info.vm
        if ls.inworld is not None:
            from ..sources import envelope
            unwrapped = envelope.unwrap(ls.inworld.decode("utf-8", "replace"))
            if unwrapped is not None and unwrapped.target in ("mono", "lsl2", "luau"):
                return unwrapped.target
        return self.options.vm

    async def _pace(self, ls: LiveScript) -> None:
        """Until the viewer has polled past its own last write of the temp file (which it ignores
        once), and has had our previous write for a whole poll (or answered it). The viewer's poll
        runs on its own clock: there is nothing to wait on but time."""
        await self.live.refresh(ls)  # a rewrite by the viewer since we read it counts as its write
        wait = ls.viewer_wrote_at + VIEWER_POLL + POLL_MARGIN - time.time()
        if wait > 0:
            await trio.sleep(min(wait, VIEWER_POLL + POLL_MARGIN))
        if ls.compiled_since_write or not ls.written_at:
            return
        deadline = ls.written_at + VIEWER_POLL + POLL_MARGIN
        with trio.move_on_at(deadline):
            while not ls.compiled_since_write and ls.gone is None:
                await ls.compiled.wait()

