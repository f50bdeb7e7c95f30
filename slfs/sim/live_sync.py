"""The simulated viewer's live sync: its own script editor, the temp file, and script.subscribe.

`LiveSync` is a mixin of `SimViewer` (server.py). What it simulates, and where each rule comes from
(see README.md, "Live sync", for the whole list):

* Pressing Edit in the viewer's script editor (`open_script_editor`) writes the script to
  `<tmpdir>/sl_script_<name>_<md5>.lsl|.luau`, creates the subscription entry, launches the
  external editor on the file and polls the file once a second (research: live-sync.md, "The
  viewer side"; the file watching is the viewer's LLLiveFile / LLLiveLSLFile: a change is the file
  appearing, vanishing or its st_mtime, in whole seconds, growing past the last one loaded; a
  one-shot "ignore the next change" covers the viewer's own writes, the first one included).
* `script.subscribe` only attaches a connection to an existing entry (statuses 0-4 and their fixed
  messages: the protocol document, ScriptSubscribeResponse); `script.unsubscribe` from a client
  drops the entry it holds; `script.list` lists the entries.
* A compile of a live-synced change, or of any save made in the viewer (`viewer_save`,
  `viewer_save_live`), goes out as `script.compiled` (`_send_compiled`): in V1 only to the
  connection subscribed to that script ("routed only to the connection subscribed", older
  document, CompilationResult), in V2 to that connection if there is one, else broadcast when the
  script's object is published (newer document, CompilationResult "Delivery").
* Closing the editor (`close_script_editor`) deletes the temp file, sends `script.unsubscribe` to
  the holder and drops the entry; V1 also sends `session.disconnect {1, "Editor closed"}` to a
  connection that lost its last subscription, and closes it (live-sync.md: "Older viewers also
  send session.disconnect {1, "Editor closed"} when a connection loses its last subscription").

Words used below: the *editor* is the viewer's script editor panel with its temp file and its
file watcher; the *entry* is the viewer's subscription record for that script (what `script.list`
lists and `script.subscribe` attaches to); the *holder* is the connection attached to the entry.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from slfs.protocol.constants import NULL_UUID

from .connection import Connection
from .live_entries import LiveEditor, LiveSubscriptions, log_text, write_text
from .sync_points import SyncError
from .world import Item, Prim, SimObject, script_id_for

log = logging.getLogger(__name__)

__all__ = ["EditorLaunch", "LiveEditor", "LiveSync", "editor_argv", "script_id_for"]

LIVE_POLL_INTERVAL = 1.0  # "The viewer polls the temp file once a second"
# live-sync.md: "<name> has <>:"\/|?* removed".
_NAME_DROP = str.maketrans("", "", '<>:"\\/|?*')


def editor_argv(command: str, path: str) -> list[str]:
    """The external editor's argv: the command split like a shell would split it (no shell runs
    it), `%s` appended as an argument of its own when no argument holds one, then every `%s`
    replaced by the temp file's path (live-sync.md: "%s is appended when missing and replaced by
    the temp file's path")."""
    argv = shlex.split(command)
    if not any("%s" in arg for arg in argv):
        argv.append("%s")
    return [arg.replace("%s", path) for arg in argv]


@attrs.define
class EditorLaunch:
    """One start of the external editor: its argv, and its process (None if it did not start:
    `error` says why)."""

    script_id: str
    argv: list[str]
    process: subprocess.Popen[bytes] | None = None
    error: str | None = None


class LiveSync(LiveSubscriptions):
    """The live-sync part of SimViewer; the attributes annotated below are SimViewer's."""

    tmpdir: str
    viewer_path: Callable[[str], str]
    external_editor: str | None
    live_poll_interval: float | None
    _conns: list[Connection]

    # Transport's (annotations only, so that no stub shadows them)
    _notify: Callable[[Connection, str, Any], Awaitable[None]]
    _disconnect: Callable[[Connection, int, str], Awaitable[None]]
    _busy_begin: Callable[[str], None]
    _busy_end: Callable[[str], None]

    def _init_live(self) -> None:
        self._editors: dict[str, LiveEditor] = {}
        self.editor_launches: list[EditorLaunch] = []
        # notifications sent to one connection only: (connection number, method, params)
        self.directed_notifications: list[tuple[int, str, dict[str, Any]]] = []

    # ============================================================================================
    # the viewer's side: its script editor
    # ============================================================================================

    def _script_place(self, item_id: str) -> tuple[SimObject | None, Prim | None, Item]:
        obj, prim, item = self._locate(item_id)
        if not item.is_script:
            raise ValueError(f"{item.name!r} is not a script: only scripts are live-synced")
        return obj, prim, item

    async def open_script_editor(self, item_id: str) -> tuple[str, str]:
        """The user opens the script's editor in the viewer and presses Edit (external editor): for
        a script in any object, published or not, or in the agent's inventory. Writes the temp file
        with the item's content, creates the subscription entry, starts the external editor (if one
        is configured) and the file watcher. Returns (script_id, temp file path).

        Again for a script whose editor is open: the file is written anew, the entry refreshed
        (kept if held) and the editor launched again, as pressing Edit again does."""
        _obj, prim, item = self._script_place(item_id)
        prim_id = prim.prim_id if prim is not None else NULL_UUID
        sid = script_id_for(prim_id, item.item_id)
        old = self._editors.get(sid)
        if old is not None:
            self._stop_watch(old)
        path = self._write_temp(sid, item)
        ed = LiveEditor(sid, prim_id, item.item_id, path)
        if old is not None and old.tracked:
            ed.holder = old.holder
            ed.fail_next_subscribe = old.fail_next_subscribe
        self._editors[sid] = ed
        self._launch_editor(sid, path)
        self._start_watch(ed)
        return sid, path

    def _write_temp(self, sid: str, item: Item) -> str:
        ext = "luau" if item.language == "luau" else "lsl"
        name = item.name.translate(_NAME_DROP)
        first = os.path.join(self.tmpdir, f"sl_script_{name}_{sid}.{ext}")
        try:
            write_text(first, item.content)
            return first
        except (OSError, ValueError) as exc:  # a name the file system refuses (too long, NUL, ...)
            log.info("temp file %r not written (%s); falling back to the bare id", first, exc)
        fallback = os.path.join(self.tmpdir, f"sl_script_{sid}.{ext}")
        write_text(fallback, item.content)
        return fallback

    def _launch_editor(self, sid: str, path: str) -> None:
        """Start the configured external editor on the temp file: `external_editor`, else
        $LL_SCRIPT_EDITOR (live-sync.md: the ExternalEditor setting, else that variable). Not a
        shell; not waited for; not ended with the sim. A binary that does not exist starts nothing."""
        command = self.external_editor or os.environ.get("LL_SCRIPT_EDITOR")
        if not command:
            return
        try:
            # a Windows viewer passes its own (Windows) name of the file
            argv = editor_argv(command, self.viewer_path(path))
        except ValueError as exc:
            self.editor_launches.append(EditorLaunch(sid, [], None, f"bad command: {exc}"))
            return
        if not argv or shutil.which(argv[0]) is None:
            self.editor_launches.append(EditorLaunch(sid, argv, None, "editor not found"))
            return
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            self.editor_launches.append(EditorLaunch(sid, argv, None, str(exc)))
            return
        self.editor_launches.append(EditorLaunch(sid, argv, proc))

    def _editor(self, script_id: str) -> LiveEditor:
        ed = self._editors.get(script_id)
        if ed is None:
            raise KeyError(script_id)
        return ed

    def live_editor(self, script_id: str) -> LiveEditor:
        """The editor state of an open script editor (KeyError if none)."""
        return self._editor(script_id)

    @property
    def live_script_ids(self) -> list[str]:
        """The script ids of every open editor."""
        return list(self._editors)

    async def close_script_editor(self, script_id: str) -> None:
        """The user closes the viewer's script editor: the temp file is deleted, the holder (if any)
        is sent `script.unsubscribe {script_id}` and the entry dropped (research, live-sync.md);
        V1: a holder left with no subscription is sent `session.disconnect {1, "Editor closed"}`
        and closed. The `.log` file stays."""
        ed = self._editor(script_id)
        self._stop_watch(ed)
        del self._editors[script_id]
        try:
            os.unlink(ed.path)
        except OSError:
            pass
        if ed.tracked:
            holder = ed.live_holder
            if holder is not None:
                await self._send_to(holder, "script.unsubscribe", {"script_id": script_id})
            await self._editor_closed(self._untrack(ed))

    def invalidate_editor(self, script_id: str) -> None:
        """The editor panel goes away without its entry (a viewer bug, or a panel torn down under
        it): the file watcher stops, nothing is sent, the temp file stays. The next
        `script.subscribe` of the script answers status 1 "Invalid editor handle" and drops the
        entry (the viewer's updateScriptSubscription does so), so one after it answers 2."""
        ed = self._editor(script_id)
        ed.panel_alive = False
        self._stop_watch(ed)

    def fail_next_subscribe(self, script_id: str) -> None:
        """The next `script.subscribe` of this script answers status 4 "Internal server error" (the
        viewer does when it cannot find the calling connection among its own); queued per script."""
        self._editor(script_id).fail_next_subscribe += 1

    async def viewer_save_live(self, script_id: str, text: str) -> list[dict[str, Any]]:
        """The user saves in the viewer's own editor while it is live-synced: stored and compiled as
        `viewer_save` does (script.compiled routed as always), then the temp file is rewritten with
        the text and the watcher ignores that one change (research: "When the viewer itself saves,
        it rewrites the temp file and ignores that one change"). The flag is one-shot: if the rewrite
        does not move st_mtime to a later second, the watcher sees no change and the next change it
        does see is the one ignored, as in the viewer. Returns the compile's diagnostics."""
        ed = self._editor(script_id)
        diagnostics = await self._viewer_side_save(ed.item_id, text)
        write_text(ed.path, self._locate(ed.item_id)[2].content)
        ed.ignore_next = True
        return diagnostics

    # ============================================================================================
    # the file watcher
    # ============================================================================================

    def _start_watch(self, ed: LiveEditor) -> None:
        interval = self.live_poll_interval
        if interval is None or self._nursery is None:
            return  # tests drive it with live_poll()
        scope = trio.CancelScope()
        ed.scope = scope

        async def watch() -> None:
            with scope:
                while True:
                    await trio.sleep(interval)
                    await self._check(ed)

        self._nursery.start_soon(watch)

    @staticmethod
    def _stop_watch(ed: LiveEditor) -> None:
        if ed.scope is not None:
            ed.scope.cancel()
            ed.scope = None

    async def live_poll(self, script_id: str) -> bool:
        """Run one check of the temp file now, as the watcher's timer would; True if it found a
        change (handled before this returns). Serialized with the background watcher, so after it
        returns every change the file showed by then has been handled by one or the other."""
        ed = self._editor(script_id)
        if not ed.panel_alive:
            return False
        return await self._check(ed)

    def live_changes(self, script_id: str) -> int:
        """How many changes the watcher of this script has handled."""
        return self._editor(script_id).changes

    async def live_seen(self, script_id: str, n: int, timeout: float = 10.0) -> None:
        """Wait until the watcher of this script has handled at least `n` changes (counted from the
        editor's opening; the first is normally the file's appearance, which it ignores). Raises
        SyncError after `timeout`."""
        ed = self._editor(script_id)
        with trio.move_on_after(timeout):
            while ed.changes < n:
                await ed.seen.wait()
            return
        raise SyncError(f"live_seen: {ed.changes} change(s) of {script_id} handled, {n} wanted")

    def _stat(self, ed: LiveEditor) -> bool:
        """LLLiveFile's check: is there a change? Whole seconds of st_mtime are compared."""
        try:
            st = os.stat(ed.path)
        except OSError:
            if ed.last_exists:
                ed.last_exists = False
                return True  # "no longer existing is a change"
            return False
        mtime = int(st.st_mtime)
        if ed.last_exists and mtime <= ed.last_mod:
            return False
        ed.last_exists = True
        ed.last_stat = mtime
        return True

    async def _check(self, ed: LiveEditor) -> bool:
        async with ed.lock:
            if not self._stat(ed):
                return False
            label = f"live {ed.script_id}"
            self._busy_begin(label)
            try:
                outcome = await self._on_change(ed)
            finally:
                self._busy_end(label)
            ed.outcomes.append(outcome)
            ed.changes += 1
            ed.seen.set()
            ed.seen = trio.Event()
            return True

    async def _on_change(self, ed: LiveEditor) -> str:
        """LLLiveLSLFile::loadFile: the viewer's own write is skipped once; else the whole file is
        read, saved into the item (compiled; a failed compile keeps the old version running) and
        `<temp file>.log` written with the result. The version loaded sets the mtime to compare
        with; a file that cannot be read (it vanished) is no version."""
        if ed.ignore_next:
            ed.ignore_next = False
            ed.last_mod = ed.last_stat
            return "ignored"
        try:
            with open(ed.path, "rb") as f:
                data = f.read()
        except OSError:
            return "vanished"
        ed.last_mod = ed.last_stat
        try:
            _obj, _prim, item = self._script_place(ed.item_id)
        except (KeyError, ValueError):
            return "gone"  # the item was deleted meanwhile
        diagnostics = await self._viewer_side_save(item.item_id, data.decode("utf-8", "replace"))
        try:
            write_text(ed.path + ".log", log_text(item, diagnostics))
        except OSError:
            pass
        return "failed" if diagnostics else "compiled"
