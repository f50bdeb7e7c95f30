"""The sink: the viewer's notifications applied to the tree, and the events they make.

The workspace is the session's listener. What it does not decide itself it hands to the service
that owns it: calls to the viewer (calls.py), items' content (content.py), live-synced scripts
(live.py), the viewer's editor commands (editor_commands.py). Runtime output is not the
workspace's: the session tells model/runtime.py, which the workspace only builds.

Concurrency (trio): code between two awaits is atomic. Session callbacks run on the session's
reader task and only touch in-memory state; anything that needs I/O is started in the
workspace's own nursery.
"""

from __future__ import annotations

import errno
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

from .. import event_types as ev
from ..debug_hooks import Debug
from ..local.item_times import ItemTimes
from ..protocol.types import (
    CompilationResult,
    ObjectRequestParams,
    ObjectUnpublish,
    ObjectUpdate,
    PublishedObject,
    ScriptUnsubscribe,
    SyntaxChange,
)
from ..session import CONNECTED, SessionInfo, ViewerSession
from ..session.listener import ListedObject
from ..winpaths import PathTranslator, detect
from ..world.fs_errors import FsError
from ..world.generations import features_shown, generation_of
from ..world.tree import EntryChanged, Invalidation, Item, Tree
from .calls import Calls
from .compiles import CompileReports, compiled_report
from .content import Content, FetchQueue
from .editor_commands import EditorCommands
from .history import History, agent_key
from .invalidations import PendingInvalidations
from .live import LIVE_DIR_KEY, LiveScripts
from .options import Options
from .runtime import Runtime
from .services import Broadcast

log = logging.getLogger(__name__)

# `.slfs/status` in the order slfs(5) gives; the services add their lines wherever they are built.
STATUS_ORDER = (
    "state", "state_detail", "endpoint", "windows_paths", "viewer", "viewer_version", "viewer_features",
    "viewer_generation", "agent", "agent_id",
    "objects", "publish_hint", "items", "content_fetches", "fetches_pending", "last_error", "pending_saves",
    "last_recovery",
    "trash", "unsent",
    "region_unavailable",
    "background_errors", "disk_errors", "event_log_errors", "event_log_error", "kernel_refs",
)

# An older viewer (G1) has no object.list: an empty mount there is one nothing was published to yet.
PUBLISH_HINT = ("this viewer publishes nothing until asked: in the viewer, right-click an object and choose "
                "\"Explore in IDE\" (or use its object explorer), or run: slfs open OBJECT_UUID")


class Workspace:
    """The session's listener: applies what the viewer tells to the tree and emits the events.

    It builds the session (it is its listener) and the services the session's notifications feed;
    the callers are given those services (Calls, Content, LiveScripts, History ...) rather than
    asking the workspace to act for them."""

    def __init__(self, host: str, port: int, options: Options | None = None, *, mountpoint: str = "",
                 fanout: Broadcast | None = None, debug: Debug | None = None,
                 kernel_knows: Callable[[int], bool] = lambda _i: False, **session_kw: Any) -> None:
        self.options = options or Options()
        self.debug = debug or Debug()
        # Where events and invalidation reports go (model/services.py): connected by build_services.
        self.fanout = fanout or Broadcast()
        self.invalidations = PendingInvalidations(self.fanout)
        # The tree's stale items are fetched again in the background by the content's workers.
        fetch_queue = FetchQueue()
        self.tree = Tree(on_invalidate=self._invalidate, on_stale=fetch_queue.put, kernel_knows=kernel_knows)
        session_kw.setdefault("live_sync", True)  # scripts open in the viewer's editor (model/live.py)
        # The viewer's local paths (challenge, live sync temp files, editor.open_file) as ours.
        opts = self.options
        # The mount is passed in so a translation never looks into it (see slfs/winpaths.py).
        self.paths = PathTranslator(detect(opts.windows_paths, opts.wine_prefix, opts.windows_mount),
                                    os.path.abspath(mountpoint) if mountpoint else "")
        session_kw.setdefault("paths", self.paths)
        self.session = ViewerSession(self, host, port, **session_kw)
        self.info: SessionInfo | None = None
        self.state = "connecting"
        self.state_detail = "starting"
        self.last_error = ""
        self.started_at = time.time()
        self.compiles = CompileReports(self.emit)  # item_id -> the last compile this session
        self._nursery: trio.Nursery | None = None
        # Set (and replaced) whenever the viewer's state is applied: confirmations wait on it.
        self._world_changed = trio.Event()
        self._loaded: list[ListedObject] | None = None  # the object.list load_objects applied
        self.background_errors = 0
        self.mountpoint = mountpoint
        # Every text seen, kept per agent (model/history.py); the save paths record into it too.
        self.history = History(self.options, self.tree.path_of, self.emit)
        # Times programs set on item files (utimens), kept per agent across remounts.
        self.times = ItemTimes()
        self.calls = Calls(self.session, self.tree, self.options, self.note_error)
        self.content = Content(fetch_queue, self.tree, self.calls, self.session, self.history, self.times,
                               self.options, self.note_error)
        self.live = LiveScripts(self)
        # The session's listener for runtime output: it emits and keeps its lines itself.
        self.runtime = Runtime(self.tree, self.live, self.fanout)
        self.editor = EditorCommands(self)

    # --- life -------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.session.run)
            nursery.start_soon(self.content.run_workers)
            nursery.start_soon(self.history.run)
            nursery.start_soon(self.times.run)
            task_status.started()
            await trio.sleep_forever()

    def spawn(self, fn: Callable[..., Any], *args: Any) -> None:
        """Start a background job owned by the workspace (no-op before run()), under an error
        boundary: a job that fails is logged with its traceback and counted in `.slfs/status`
        (`background_errors`), and the mount goes on serving."""
        if self._nursery is not None:
            self._nursery.start_soon(self._job, fn, args, name=getattr(fn, "__qualname__", repr(fn)))

    async def _job(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        name = getattr(fn, "__name__", repr(fn))
        try:
            if self.debug.job_fault == name:
                raise RuntimeError(f"fault injected into background job {name}")
            await fn(*args)
        except Exception as exc:  # trio.Cancelled is a BaseException: shutdown passes through
            self.background_errors += 1
            log.exception("background job %s failed; the mount goes on", name)
            self.note_error(f"background job {name} failed: {exc!r}")

    @property
    def connected(self) -> bool:
        return self.session.state == CONNECTED

    def _invalidate(self, inv: Invalidation) -> None:
        self.invalidations.add(inv)

    def emit(self, event: ev.SlfsEvent, /) -> None:
        """An event to every consumer, stamped with the time now."""
        self.fanout.event(attrs.evolve(event, time=time.time()))

    def note_error(self, message: str) -> None:
        """Record a user-visible failure for `.slfs/status` and the log."""
        self.last_error = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}"
        log.warning("%s", message)

    def _changed(self) -> None:
        self._world_changed.set()
        self._world_changed = trio.Event()

    async def wait_for_world(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait (at most `timeout` s) until `predicate()` holds, re-checking it each time the
        viewer's state changes (publish, unpublish, update, a new session): no polling."""
        with trio.move_on_after(timeout):
            while not predicate():
                await self._world_changed.wait()
            return True
        return False

    # --- SessionListener --------------------------------------------------------------------

    async def load_objects(self, objects: list[ListedObject]) -> None:
        """A large object.list, applied before on_connected in steps with checkpoints between them:
        the mount goes on answering (each object is seen wholly old or wholly new meanwhile)."""
        for _ in self.tree.replace_all_steps(objects):
            await trio.sleep(0)
        self._loaded = objects

    def on_connected(self, info: SessionInfo, objects: list[ListedObject]) -> None:
        self.info = info
        self.history.open_for(info.agent_id, info.agent_name)
        self.times.open_for(agent_key(info.agent_id, info.agent_name))
        self.calls.connected_again()
        if not info.lists_objects:
            # G1 has no object.list, and it drops the connection whenever its last live-sync editor
            # closes: keep what the mount shows and ask the viewer to publish each object again.
            if self.tree.objects:
                self.spawn(self._request_known_objects, list(self.tree.objects))
        elif objects is not self._loaded:  # not applied by load_objects already
            self.tree.replace_all(objects)
        self._loaded = None
        self._changed()
        log.info("connected to %s %s as %s: %d objects", info.viewer_name, info.viewer_version,
                 info.agent_name, len(objects))
        self.emit(ev.Connected(viewer=info.viewer_name, version=info.viewer_version, agent=info.agent_name,
                               objects=len(objects)))
        if self.live.by_id:
            self.spawn(self.live.resubscribe_all)  # subscriptions end with the connection

    async def _request_known_objects(self, object_ids: list[str]) -> None:
        """object.request for each object shown (a viewer without object.list, after a reconnect):
        a republish replaces each; one the viewer no longer finds leaves the mount."""
        log.info("the viewer has no object.list: asking it to publish the %d objects shown again", len(object_ids))
        for object_id in object_ids:
            try:
                await self.calls.call(f"open {object_id}", "object.request", ObjectRequestParams(object_id=object_id))
            except FsError as exc:
                if exc.errno == errno.ENOENT and self.tree.unpublish(object_id):
                    log.info("%s is gone in-world: %s", object_id, exc.message)
                    self._changed()
                    self.emit(ev.Unpublish(object_id=object_id, reason="not found after a reconnect"))
                else:
                    log.warning("could not ask the viewer to publish %s again: %s", object_id, exc.message)

    def on_disconnected(self, reason: str) -> None:
        self.calls.dropped()
        self.tree.end_own_updates()
        self.emit(ev.Disconnected(reason=reason))

    def on_state(self, state: str, detail: str) -> None:
        self.state = state
        self.state_detail = detail
        if state == "disconnected":
            self.last_error = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} disconnected: {detail}"

    def on_publish(self, obj: PublishedObject) -> None:
        self.tree.publish(obj)
        self._changed()
        self.emit(ev.Publish(object_id=obj.object_id, name=obj.object_name))

    def on_unpublish(self, msg: ObjectUnpublish) -> None:
        if self.tree.unpublish(msg.object_id):
            self._changed()
            self.emit(ev.Unpublish(object_id=msg.object_id, reason=msg.reason))

    def on_update(self, msg: ObjectUpdate) -> None:
        before = self._run_states(msg.object_id)
        if not self.tree.update(msg):
            log.info("update for unpublished object %s ignored", msg.object_id)
            return
        self._changed()
        if before is not None:
            self._emit_run_states(msg.object_id, before)

    def _run_states(self, object_id: str) -> dict[str, str] | None:
        """The run state of each script of a built object (None for one not built: nothing was
        shown of it, so nothing changed that anyone saw)."""
        folder = self.tree.objects.get(object_id)
        if folder is None or not folder.built:
            return None
        return {i.uuid: i.run_state for i in self.tree.items_in(folder) if i.record is not None and i.is_script}

    def _emit_run_states(self, object_id: str, before: dict[str, str]) -> None:
        """A `script.state` event for each script whose confirmed run state the update changed (or
        that it added): what `slfs top` and the event stream see of a run, stop, reset or fault."""
        folder = self.tree.objects.get(object_id)
        if folder is None:
            return
        for item in self.tree.items_in(folder):
            if item.record is None or not item.is_script or not item.attached:
                continue
            state = item.run_state
            was = before.get(item.uuid)
            if was != state:
                self.emit(ev.ScriptState(path=self.tree.path_of(item), item_id=item.uuid, state=state, was=was))

    def on_syntax_change(self, msg: SyntaxChange) -> None:
        self.emit(ev.SyntaxChange(id=msg.id))

    def on_compiled(self, msg: CompilationResult) -> None:
        self.emit(ev.ScriptCompiled(script_id=msg.script_id, success=msg.success))
        if self.live.on_compiled(msg):
            return  # a live-synced save's answer
        # Newer viewers broadcast the result of a save made in the viewer itself (its editor, Script
        # Studio, the compile queue) with the script's place: show it as for a save through slfs.
        # The object.update with the item's higher revision that goes with it refreshes the content.
        node = self.tree.find(msg.item_id or "")
        if not isinstance(node, Item) or not node.attached or not node.is_script:
            return
        if msg.prim_id and node.folder is not None and node.folder.uuid != msg.prim_id:
            log.info("script.compiled for %s names prim %s, not its own; ignored", msg.item_id, msg.prim_id)
            return
        # A build of ours compiled in the viewer: its rows map to the sources as ours do.
        report = compiled_report(msg, "viewer", node.cache.inworld_places)
        self.compiles.record(node, report, self.tree.path_of(node))

    def on_unsubscribe(self, msg: ScriptUnsubscribe) -> None:
        self.live.on_unsubscribe(msg)

    def invalidate_live_name(self, name: str) -> None:
        """A name in `.slfs/live/` that the kernel may have cached means nothing now."""
        self.invalidations.add(EntryChanged(self.tree.inode_for(LIVE_DIR_KEY), name))

    def on_editor_command(self, command: str, params: dict[str, Any]) -> None:
        # editor.open_file and editor.show_message start programs on the peer's word: editor_commands.py.
        if not self.editor.on_command(command, params):
            self.emit(ev.ViewerCommand(command=command, params=params))

    # --- status -----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        info = self.info
        out: dict[str, Any] = {
            "state": self.state,
            "state_detail": self.state_detail,
            "endpoint": self.session.endpoint,
        }
        if info is not None:
            out.update(viewer=info.viewer_name, viewer_version=info.viewer_version,
                       viewer_features=features_shown(info.features),
                       viewer_generation=generation_of(info.features, lists_objects=info.lists_objects),
                       agent=info.agent_name, agent_id=info.agent_id)
        out["windows_paths"] = self.paths.status()
        out.update(objects=len(self.tree.objects), items=self.tree.item_count, **self.content.status())
        if info is not None and not info.lists_objects and self.connected and not self.tree.objects:
            out["publish_hint"] = PUBLISH_HINT
        out["last_error"] = self.last_error or "none"
        out["background_errors"] = self.background_errors + self.content.worker_errors
        out.update(self.calls.status())
        out.update(self.fanout.status())
        ordered = {key: out.pop(key) for key in STATUS_ORDER if key in out}
        return {**ordered, **out}  # keys not in STATUS_ORDER (none today) after the others
