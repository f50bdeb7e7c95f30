"""Live sync: scripts open in the viewer's own script editor, seen through their temp files.

The viewer writes a script being edited to `<tmpdir>/sl_script_<name>_<md5>.lsl|.luau` (the md5,
of `<prim uuid>_<item uuid>`, is the `script_id`), polls it once a second by whole-second mtime,
and compiles and stores whatever it finds there (../shared/research/live-sync.md). `slfs edit`
subscribes the daemon to such a script (`script.subscribe`); the script then appears as
`MOUNT/.slfs/live/<name>` with `.diag`, `.log` and `.state` beside it. Compile results come as
`script.compiled` to the subscribed connection only.

The registry here is owned by the workspace (it is session state: subscriptions end with the
connection and are made again after a reconnect); the writer saves live files into their temp files.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import logging
import os
import time
from typing import Any, Protocol

import attrs
import trio

from .. import event_types as ev
from ..local import live_files
from ..protocol import constants
from ..protocol.types import (
    CompilationResult,
    ScriptList,
    ScriptSubscribe,
    ScriptSubscribeResponse,
    ScriptUnsubscribe,
)
from ..sources import envelope
from ..winpaths import PathTranslator, WindowsPathError, is_windows_path
from ..world import names
from ..world.fs_errors import FsError
from ..world.places import Place
from ..world.tree import Item, NewFile, Tree
from .calls import Calls
from .compiles import CompileReport, CompileReports, compile_event, compiled_report, diagnostic_rows

log = logging.getLogger(__name__)

# How the viewer names its temp files (llpreviewscript.cpp; the research page gives the pattern),
# and the fallback it uses when the name cannot be written.
# The inode key of MOUNT/.slfs/live (the fs layer's control directory uses the same one).
LIVE_DIR_KEY = "ctl:live"
# The viewer polls its temp file once a second; a state held longer is seen by at least one poll.
VIEWER_POLL = 1.0
POLL_MARGIN = 0.25
# How long translating a path the viewer names may take (in a worker thread; see `translated`).
TRANSLATE_TIMEOUT = 10.0


def parse_temp_name(path: str) -> tuple[str, str, str] | None:
    """(script name, script_id, language) of a viewer temp file's path, None when not one."""
    parsed = constants.parse_temp_name(os.path.basename(path))
    if parsed is None:
        return None
    name, script_id, language = parsed
    return name or "script", script_id, language


class ViewerRefused(FsError):
    """script.subscribe answered with a status other than 0 (the control socket's EREFUSED)."""

    control_code = "EREFUSED"


@attrs.define(eq=False)
class LiveScript:
    """One subscribed script. `shown` is what its live file shows (the temp file's text, decoded
    from an envelope), `inworld` the temp file's text when it is an envelope."""

    script_id: str
    script_name: str
    language: str
    temp_path: str
    inode: int
    # Where its temp file may be (local/live_files.py): checked at every read and write.
    where: live_files.TempDirs = live_files.TempDirs((), "none")
    object_id: str | None = None  # the prim holding it (None: the agent's inventory)
    root_id: str | None = None
    item_id: str | None = None
    name: str = ""  # its file name in .slfs/live
    shown: bytes = b""
    inworld: bytes | None = None
    inworld_places: tuple[Place | None, ...] | None = None
    seen_stamp: tuple[int, int] | None = None  # (st_mtime_ns, st_size) of the temp file last read
    mtime_s: int = 0  # the whole-second mtime the viewer last saw (ours or its own)
    written_at: float = 0.0  # trio clock of our last write of the temp file
    # When the viewer last wrote the temp file itself (its mtime, wall clock): it ignores its own
    # write at its next poll, so a write of ours before that poll would be ignored with it.
    viewer_wrote_at: float = 0.0
    unplaced_until: float = 0.0  # item_of found no published item for it until this monotonic time
    compiled_since_write: bool = True
    running: bool | None = None
    # Local edits (shared by every handle, as for items) and whether they are unsaved.
    local: bytearray | None = None
    dirty: bool = False
    gone: str | None = None  # why the subscription ended (the live file is gone then)
    compiled: trio.Event = attrs.field(factory=trio.Event)

    # names.Named
    @property
    def uuid(self) -> str:
        return self.script_id

    @property
    def wanted_base(self) -> str:
        return names.to_fs(self.script_name)

    @property
    def wanted_ext(self) -> str:
        return "." + self.language

    @property
    def always_tagged(self) -> bool:
        return False

    @property
    def key(self) -> str:
        return f"live:{self.script_id}"


class LiveHost(Protocol):
    """What the registry needs of its owner, the workspace (which holds it, so no import back)."""

    calls: Calls
    tree: Tree
    mountpoint: str
    compiles: CompileReports
    paths: PathTranslator

    def note_error(self, message: str) -> None: ...
    def emit(self, event: ev.SlfsEvent, /) -> None: ...
    def invalidate_live_name(self, name: str) -> None: ...


class LiveScripts:
    def __init__(self, ws: LiveHost) -> None:
        self.ws = ws
        self.by_id: dict[str, LiveScript] = {}
        self.entries: dict[str, LiveScript] = {}  # file name -> script, as listed
        # New files (sed -i's and perl -pi's temp files), by name: live_writes.py owns them.
        self.new_files: dict[str, NewFile] = {}
        # One subscribe in flight per script: two `slfs edit` of one temp file share it.
        self._subscribing: dict[str, trio.Lock] = {}

    # --- subscriptions ----------------------------------------------------------------------

    async def subscribe(self, temp_path: str) -> LiveScript:
        """Subscribe to the script of a viewer temp file; ViewerRefused with the viewer's message
        when it refuses. `temp_path` may be the viewer's Windows path (Wine, WSL2): the local one is
        read and written."""
        viewer_path = temp_path
        temp_path = await self.translated(temp_path)
        parsed = parse_temp_name(temp_path)
        if parsed is None:
            raise FsError(errno.EINVAL, f"{viewer_path}: not a viewer script temp file "
                          "(sl_script_<name>_<md5>.lsl|.luau)")
        script_name, script_id, language = parsed
        here = f" (here {temp_path})" if temp_path != viewer_path else ""
        # Refused before subscribing at all: a file that is not the viewer's is never read.
        where = await self._temp_dirs(temp_path, windows=is_windows_path(viewer_path))
        try:
            await trio.to_thread.run_sync(live_files.check_file, temp_path, where)
        except FileNotFoundError:
            raise FsError(errno.ENOENT, f"{viewer_path}{here}: no such file "
                          "(the viewer writes it when you press Edit)") from None
        except FsError as exc:
            raise self.refused(f"live: not subscribing to {viewer_path}{here}", exc) from None
        if temp_path != viewer_path:
            log.info("live: the viewer's %r is %s here", viewer_path, temp_path)
        lock = self._subscribing.setdefault(script_id, trio.Lock())
        async with lock:
            return await self._subscribe(temp_path, where, script_name, script_id, language)

    async def _temp_dirs(self, temp_path: str, *, windows: bool) -> live_files.TempDirs:
        """Where the viewer keeps its temp files: script.list's temp_dir (checked), else, for a
        viewer without script.list or one giving no temp_dir, live_files.fallback_dirs."""
        temp_dir = ""
        try:
            res: ScriptList = await self.ws.calls.call("script.list", "script.list", None, ScriptList)
            temp_dir = res.temp_dir if isinstance(res.temp_dir, str) else ""
        except FsError as exc:
            log.info("live: script.list failed (%s): no temp_dir from the viewer", exc.message)
        mapper = self.ws.paths.mapper
        drives = mapper.windows_mount if mapper.mode == "wsl" else None
        try:
            if temp_dir:
                local = await self.translated(temp_dir)
                return await trio.to_thread.run_sync(live_files.viewer_dirs, local, drives)
            return await trio.to_thread.run_sync(functools.partial(live_files.fallback_dirs, temp_path,
                                                                   windows=windows, windows_drives=drives))
        except FsError as exc:
            raise self.refused(f"live: not subscribing to {temp_path}", exc) from None

    def refused(self, what: str, exc: FsError) -> FsError:
        """A temp file (or dir) that is not the viewer's: logged, in .slfs/status, its errno kept."""
        message = f"{what}: {exc.message}"
        self.ws.note_error(message)
        return FsError(exc.errno, message)

    async def translated(self, path: str) -> str:
        """local_path in a worker thread, at most TRANSLATE_TIMEOUT seconds (ETIMEDOUT): a path the
        viewer names may lead through a stuck file system, or into the mount this loop serves."""
        with trio.move_on_after(TRANSLATE_TIMEOUT):
            return await trio.to_thread.run_sync(self.local_path, path, abandon_on_cancel=True)
        raise FsError(errno.ETIMEDOUT, f"{path!r}: not translated within {TRANSLATE_TIMEOUT:g} s")

    def local_path(self, path: str) -> str:
        """A path the viewer names (a temp file, script.list's temp_dir) as a local absolute path:
        a Windows one translated (slfs/winpaths.py), EINVAL naming the option to set when it cannot be."""
        if isinstance(path, str) and not os.path.isabs(path) and not is_windows_path(path):
            path = os.path.abspath(path)
        try:
            return self.ws.paths.to_local(path)
        except WindowsPathError as exc:
            raise FsError(errno.EINVAL, str(exc)) from None

    async def _subscribe(self, temp_path: str, where: live_files.TempDirs, script_name: str, script_id: str,
                         language: str) -> LiveScript:
        known = self.by_id.get(script_id)
        if known is not None and known.gone is None:
            known.temp_path, known.where = temp_path, where
            await self.refresh(known)
            return known
        res = await self._subscribe_call(script_id, script_name, language)
        ls = LiveScript(script_id=script_id, script_name=script_name, language=language, temp_path=temp_path,
                        where=where, inode=self.ws.tree.inode_for(f"live:{script_id}"), object_id=res.object_id,
                        root_id=res.root_id, item_id=res.item_id)
        self.by_id[script_id] = ls
        self._relayout()
        await self.refresh(ls)
        ls.mtime_s = int(ls.seen_stamp[0] // 1_000_000_000) if ls.seen_stamp else 0
        log.info("live: subscribed to %s (%s) at %s", ls.name, script_id, temp_path)
        self.ws.emit(ev.LiveSubscribe(name=ls.name, script_id=script_id, temp_path=temp_path, item_id=res.item_id))
        return ls

    async def _subscribe_call(self, script_id: str, script_name: str, language: str) -> ScriptSubscribeResponse:
        res: ScriptSubscribeResponse = await self.ws.calls.call(
            f"subscribe {script_name}", "script.subscribe",
            ScriptSubscribe(script_id=script_id, script_name=script_name, script_language=language),
            ScriptSubscribeResponse)
        if not res.success or res.status != 0:
            raise ViewerRefused(errno.EPERM, f"the viewer refused: {res.message} (status {res.status})")
        return res

    def on_unsubscribe(self, msg: ScriptUnsubscribe) -> None:
        ls = self.by_id.get(msg.script_id.lower())
        if ls is not None:
            self.end(ls, "the viewer ended the subscription (its script editor was closed)")

    def end(self, ls: LiveScript, why: str) -> None:
        """The live file goes; a handle with unsaved writes fails its close() with ENOENT."""
        if ls.gone is not None:
            return
        ls.gone = why
        self.by_id.pop(ls.script_id, None)
        self._relayout()
        ls.compiled.set()
        log.info("live: %s: %s", ls.name, why)
        self.ws.emit(ev.LiveUnsubscribe(name=ls.name, script_id=ls.script_id, why=why))

    async def resubscribe_all(self) -> None:
        """After a reconnect: subscribe again; a script the viewer no longer knows goes."""
        for ls in list(self.by_id.values()):
            try:
                await self._subscribe_call(ls.script_id, ls.script_name, ls.language)
            except ViewerRefused as exc:
                self.end(ls, f"not subscribed again after the reconnect: {exc.message}")
            except FsError as exc:
                # Gone again before it answered: the next connect tries again.
                log.info("live: subscribing %s again failed (%s); retried at the next connect", ls.name,
                         exc.message)
                return

    def _relayout(self) -> None:
        layout = names.resolve(self.by_id.values())
        old = self.entries
        self.entries = {name: ls for name, ls in layout.items() if isinstance(ls, LiveScript)}
        for name, ls in self.entries.items():
            ls.name = name
        for name in old:
            if self.entries.get(name) is not old[name]:  # gone, or another script's name now
                self.ws.invalidate_live_name(name)

    def named(self, name: str) -> LiveScript | None:
        """The live script whose file is `name` now (None when none is, or its temp file went)."""
        ls = self.entries.get(name)
        return ls if ls is not None and self.exists(ls) else None

    # --- content ----------------------------------------------------------------------------

    def exists(self, ls: LiveScript) -> bool:
        """The temp file is still there; when the viewer removed it, the subscription is over."""
        if ls.gone is not None:
            return False
        if not os.path.lexists(ls.temp_path):  # a symlink put there is refused when read, not "removed"
            self.end(ls, "the viewer removed its temp file")
            return False
        return True

    async def refresh(self, ls: LiveScript) -> None:
        """Read the temp file again when it changed (the viewer rewrites it on its own saves).
        A file that is no longer the viewer's (live_files) is never read: the subscription ends."""
        try:
            stamp, data = await trio.to_thread.run_sync(live_files.read_file, ls.temp_path, ls.where)
        except FileNotFoundError:
            self.end(ls, "the viewer removed its temp file")
            raise FsError(errno.ENOENT, f"{ls.name}: the viewer's temp file is gone ({ls.temp_path})") from None
        except FsError as exc:
            raise self.not_the_viewers(ls, exc) from None
        except OSError as exc:
            raise FsError(errno.EIO, f"{ls.name}: reading {ls.temp_path} failed: {exc.strerror}") from None
        if stamp == ls.seen_stamp:
            return
        self.set_text(ls, data.decode("utf-8", "replace"), stamp=stamp, ours=False)

    def not_the_viewers(self, ls: LiveScript, exc: FsError) -> FsError:
        """The temp file was swapped after the subscribe (or its dir changed): the subscription
        ends (a handle's unsaved writes go to the recovery folder), logged and in .slfs/status."""
        err = self.refused(f"live: {ls.name}", exc)
        self.end(ls, f"its temp file is no longer the viewer's ({exc.message})")
        return err

    def read_log(self, ls: LiveScript) -> bytes:
        """`<temp file>.log`, the compile result the viewer writes beside its temp file, under
        the temp file's checks (b"" when missing or refused)."""
        return live_files.read_sidecar(ls.temp_path + ".log", ls.where)

    def wrote(self, ls: LiveScript, mtime_s: int) -> None:
        """We wrote its temp file (model/live_writes.py), stamped `mtime_s` (whole seconds): a compile
        of that text is awaited. A live script's times are written here only."""
        ls.mtime_s = mtime_s
        ls.written_at = trio.current_time()
        ls.compiled_since_write = False

    def set_text(self, ls: LiveScript, text: str, *, stamp: tuple[int, int] | None, ours: bool,
                 places: tuple[Place | None, ...] | None = None) -> None:
        unwrapped = envelope.unwrap(text)
        inworld = text.encode("utf-8") if unwrapped is not None else None
        if inworld != ls.inworld:
            ls.inworld_places = None
        ls.inworld = inworld
        if places is not None:
            ls.inworld_places = places
        ls.shown = (unwrapped.source if unwrapped is not None else text).encode("utf-8")
        ls.seen_stamp = stamp
        if stamp is not None:
            ls.mtime_s = max(ls.mtime_s, stamp[0] // 1_000_000_000)
            if not ours:
                ls.viewer_wrote_at = min(stamp[0] / 1e9, time.time())

    def abspath(self, ls: LiveScript) -> str:
        return os.path.join(self.ws.mountpoint or "/", names.CONTROL_DIR, "live", ls.name)

    def item_of(self, ls: LiveScript) -> Item | None:
        """The script's item when it is in a published object: named by the subscribe answer, or
        found by its script_id, the md5 of "<prim uuid>_<item uuid>"."""
        node = self.ws.tree.find(ls.item_id or "")
        if isinstance(node, Item) and node.attached:
            return node
        if ls.unplaced_until > time.monotonic():
            return None  # looked for a moment ago (an inventory script is in no object)
        ls.unplaced_until = time.monotonic() + 5.0
        for item in self.ws.tree.iter_items():
            if item.is_script and item.folder is not None and item.attached and hashlib.md5(
                    f"{item.folder.uuid.lower()}_{item.uuid.lower()}".encode()).hexdigest() == ls.script_id:
                ls.item_id = item.uuid
                return item
        return None

    def item_folder_path(self, ls: LiveScript) -> str | None:
        """The mount path of the folder holding the script's item, when it is in a published object."""
        node = self.item_of(ls)
        if node is None or node.parent is None:
            return None
        return os.path.join(self.ws.mountpoint or "/", self.ws.tree.path_of(node.parent))

    def item_path(self, ls: LiveScript) -> str | None:
        node = self.item_of(ls)
        return os.path.join(self.ws.mountpoint or "/", self.ws.tree.path_of(node)) if node is not None else None

    # --- compiles ---------------------------------------------------------------------------

    def on_compiled(self, msg: CompilationResult) -> bool:
        """A `script.compiled` for a subscribed script: its `.diag`, `.state`, the root
        diagnostics and a `compile` event with "source": "live". False when not ours."""
        ls = self.by_id.get(msg.script_id.lower())
        if ls is None:
            return False
        if ls.compiled_since_write:
            # No write of ours awaits a compile: this one is of text saved in the viewer's own
            # editor, whose rows are its own, not our build's (research/live-sync.md: the viewer
            # then rewrites the temp file, read again at the next access).
            ls.inworld_places = None
        report = compiled_report(msg, "live", ls.inworld_places)
        ls.running = msg.running
        ls.compiled_since_write = True
        ls.compiled.set()
        ls.compiled = trio.Event()
        self.ws.compiles.note(ls.key, report)
        self.ws.emit(compile_event(report, path=f"{names.CONTROL_DIR}/live/{ls.name}", script_id=ls.script_id,
                                   item_id=ls.item_id))
        return True

    def report(self, ls: LiveScript) -> CompileReport | None:
        return self.ws.compiles.get(ls.key)

    def diagnostics_of(self, ls: LiveScript) -> list[dict[str, object]]:
        report = self.report(ls)
        if report is None:
            return []
        return diagnostic_rows(report, self.abspath(ls))

    def describe(self, ls: LiveScript) -> dict[str, Any]:
        report = self.report(ls)
        return {"name": ls.name, "path": self.abspath(ls), "script_id": ls.script_id, "temp_path": ls.temp_path,
                "item": self.item_path(ls), "compiled": report.compiled if report else None,
                "at": report.at if report else None,
                "errors": sum(1 for d in (report.diagnostics if report else ()) if d.level.upper() == "ERROR")}
