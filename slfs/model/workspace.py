"""The model's live side: the tree fed by the session, content fetched on demand, status.

Concurrency (trio): code between two awaits is atomic. Session callbacks run on the session's
reader task and only touch in-memory state; anything that needs I/O is started in the
workspace's own nursery. Content fetches of one item are coalesced: the first caller fetches,
the others wait on its event.
"""

from __future__ import annotations

import errno
import logging
import math
import os
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

from ..backoff import Backoff
from ..local.item_times import ItemTimes
from ..protocol.codec import RequestParams, encode_params
from ..protocol.errors import RpcError
from ..protocol.text import clean
from ..protocol.types import (
    CompilationResult,
    ContentGetParams,
    ContentGetResponse,
    ObjectRequestParams,
    ObjectUnpublish,
    ObjectUpdate,
    PublishedObject,
    RuntimeDebug,
    RuntimeError_,
    ScriptUnsubscribe,
    SyntaxChange,
)
from ..session import CONNECTED, NotConnected, SessionInfo, ViewerSession
from ..session.listener import ListedObject
from ..sources import envelope
from ..winpaths import PathTranslator, detect
from ..world.errors import CallCut, FsError, from_rpc, region_down, transient_read_error
from ..world.generations import features_shown, generation_of
from .compiles import CompileReport, compiled_report, event_fields
from .editor_commands import EditorCommands
from .history import FETCHED, VIEWER, History, agent_key
from .invalidations import PendingInvalidations
from .live import LIVE_DIR_KEY, LiveScripts
from .options import Debug, Options
from .runtime import attribute
from .services import Fanout
from .tree import EntryChanged, Folder, Invalidation, Item, Tree

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

# Runtime output is other residents' text: each message is bounded (a script can say 16 MB in one
# event on viewers with no frame limit) and kept terminal-safe.
MAX_RUNTIME_TEXT = 16384
MAX_STACK = 64


@attrs.define
class _Fetch:
    done: trio.Event = attrs.field(factory=trio.Event)
    error: FsError | None = None


class Workspace:
    """Everything the file system shows, kept current from the viewer."""

    def __init__(self, host: str, port: int, options: Options | None = None, *, mountpoint: str = "",
                 fanout: Fanout | None = None, debug: Debug | None = None,
                 kernel_knows: Callable[[int], bool] = lambda _i: False, **session_kw: Any) -> None:
        self.options = options or Options()
        self.debug = debug or Debug()
        # Where events and invalidation reports go (model/services.py): connected by build_services.
        self.fanout = fanout or Fanout()
        self.invalidations = PendingInvalidations(self.fanout)
        self.tree = Tree(on_invalidate=self._invalidate, on_stale=self.confirm_content, kernel_knows=kernel_knows)
        session_kw.setdefault("live_sync", True)  # scripts open in the viewer's editor (model/live.py)
        # The viewer's local paths (challenge, live sync temp files, editor.open_file) as ours.
        opts = self.options
        # The mount is passed in so a translation never looks into it (see slfs/winpaths.py).
        self.paths = PathTranslator(detect(opts.windows_paths, opts.wine_prefix, opts.windows_mount),
                                    os.path.abspath(mountpoint) if mountpoint else "")
        session_kw.setdefault("paths", self.paths)
        self.session = ViewerSession(self, host, port, **session_kw)
        self.info: SessionInfo | None = None
        self.live = LiveScripts(self)
        self.editor = EditorCommands(self)
        self.state = "connecting"
        self.state_detail = "starting"
        self.last_error = ""
        self.started_at = time.time()
        self._fetches: dict[str, _Fetch] = {}  # by item UUID: renames move inodes, not items
        self.compiles: dict[str, CompileReport] = {}  # item_id -> the last compile this session
        # item_id -> the report of the in-world text (None: none) while `compiles` holds a failed
        # attempt's, which never reached the item (CompileReport.landed).
        self._inworld_compiles: dict[str, CompileReport | None] = {}
        # Objects whose region answered "not connected" to the last call about them: id -> name.
        self.regions_down: dict[str, str] = {}
        self._nursery: trio.Nursery | None = None
        # Background fetches go through one queue served by `prefetch` workers: a queued item costs a
        # reference, not a task (a find over 100,000 items would otherwise park 100,000 tasks).
        self._fetch_send, self._fetch_recv = trio.open_memory_channel[Item](math.inf)
        self.fetch_count = 0
        self._fetching = 0  # background fetches a worker has taken and not finished
        # Set (and replaced) whenever the viewer's state is applied: confirmations wait on it.
        self._world_changed = trio.Event()
        self._dropped_at: float | None = None  # trio clock of the last drop of a ready session
        self._loaded: list[ListedObject] | None = None  # the object.list load_objects applied
        self.background_errors = 0
        self.mountpoint = mountpoint
        # Every text seen, kept per agent (model/history.py); the save paths record into it too.
        self.history = History(self.options, self.tree.path_of, self.emit)
        # Times programs set on item files (utimens), kept per agent across remounts.
        self.times = ItemTimes()

    # --- life -------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await nursery.start(self.session.run)
            for _ in range(max(1, self.options.prefetch)):
                nursery.start_soon(self._fetch_worker)
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

    def emit(self, kind: str, **fields: Any) -> None:
        self.fanout.event({"time": time.time(), "type": kind, **fields})

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
        self._dropped_at = None
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
        self.emit("connected", viewer=info.viewer_name, version=info.viewer_version,
                  agent=info.agent_name, objects=len(objects))
        if self.live.by_id:
            self.spawn(self.live.resubscribe_all)  # subscriptions end with the connection

    async def _request_known_objects(self, object_ids: list[str]) -> None:
        """object.request for each object shown (a viewer without object.list, after a reconnect):
        a republish replaces each; one the viewer no longer finds leaves the mount."""
        log.info("the viewer has no object.list: asking it to publish the %d objects shown again", len(object_ids))
        for object_id in object_ids:
            try:
                await self.call(f"open {object_id}", "object.request", ObjectRequestParams(object_id=object_id))
            except FsError as exc:
                if exc.errno == errno.ENOENT and self.tree.unpublish(object_id):
                    log.info("%s is gone in-world: %s", object_id, exc.message)
                    self._changed()
                    self.emit("unpublish", object_id=object_id, reason="not found after a reconnect")
                else:
                    log.warning("could not ask the viewer to publish %s again: %s", object_id, exc.message)

    def on_disconnected(self, reason: str) -> None:
        self._dropped_at = trio.current_time()
        self.tree.end_own_updates()
        self.emit("disconnected", reason=reason)

    def on_state(self, state: str, detail: str) -> None:
        self.state = state
        self.state_detail = detail
        if state == "disconnected":
            self.last_error = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} disconnected: {detail}"

    def on_publish(self, obj: PublishedObject) -> None:
        self.tree.publish(obj)
        self._changed()
        self.emit("publish", object_id=obj.object_id, name=obj.object_name)

    def on_unpublish(self, msg: ObjectUnpublish) -> None:
        if self.tree.unpublish(msg.object_id):
            self._changed()
            self.emit("unpublish", object_id=msg.object_id, reason=msg.reason)

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
                self.emit("script.state", path=self.tree.path_of(item), item_id=item.uuid, state=state,
                          was=was)

    def on_runtime_debug(self, msg: RuntimeDebug) -> None:
        self.emit("runtime.debug", **self._speaker_fields(msg), channel=clean(msg.channel, 40),
                  message=clean(msg.message, MAX_RUNTIME_TEXT, keep_newlines=True))

    def on_runtime_error(self, msg: RuntimeError_) -> None:
        stack = [clean(str(frame), 1000) for frame in msg.stack[:MAX_STACK]]
        self.emit("runtime.error", **self._speaker_fields(msg), channel=clean(msg.channel, 40),
                  message=clean(msg.message, MAX_RUNTIME_TEXT, keep_newlines=True),
                  error=clean(msg.error, 2000), line=msg.line, column=msg.column, stack=stack)

    def _speaker_fields(self, msg: RuntimeDebug | RuntimeError_) -> dict[str, Any]:
        """Who spoke, as far as any reference the viewer sent resolves (model/runtime.py): the
        item's ids and path, else its object's, else what the viewer sent; `scope` says which."""
        who = attribute(self.tree, self.live, object_id=msg.object_id, prim_id=msg.prim_id, item_id=msg.item_id,
                        script_id=msg.script_id, ref=msg.item)
        fields: dict[str, Any] = {"scope": who.scope, "object_id": msg.object_id, "prim_id": msg.prim_id,
                                  "item_id": msg.item_id, "object_name": clean(msg.object_name, 200)}
        if msg.script_id:
            fields["script_id"] = clean(msg.script_id, 64)
        if who.item is not None and who.item.folder is not None:
            fields.update(item_id=who.item.uuid, prim_id=who.item.folder.uuid, path=self.tree.path_of(who.item),
                          item_name=clean(who.item.info.name, 200))
        if who.obj is not None:  # names are residents' text too: they lead the lines of the logs
            fields.update(object_id=who.obj.uuid, object_name=clean(who.obj.link_name, 200))
            fields.setdefault("path", self.tree.path_of(who.obj))
        return fields

    def on_syntax_change(self, msg: SyntaxChange) -> None:
        self.emit("syntax.change", id=msg.id)

    def on_compiled(self, msg: CompilationResult) -> None:
        self.emit("script.compiled", script_id=msg.script_id, success=msg.success)
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
        self.record_compile(node, report, self.tree.path_of(node))

    def record_compile(self, item: Item, report: CompileReport, path: str) -> None:
        """The viewer's answer to a compile of `item`: F.diag, F.state, root diagnostics, an event."""
        self.note_compile(item.uuid, report)
        self.emit("compile", path=path, item_id=item.uuid, **event_fields(report))

    def note_compile(self, key: str, report: CompileReport) -> None:
        """The compile report of an item or a live file (`key`); a failed attempt's, which never
        reached it (CompileReport.landed), keeps the in-world text's aside for forget_failed_attempt."""
        before = self.compiles.get(key)
        if report.landed:
            self._inworld_compiles.pop(key, None)
        elif before is None or before.landed:
            self._inworld_compiles[key] = before  # still what describes the in-world text
        self.compiles[key] = report

    def forget_failed_attempt(self, key: str, path: str) -> None:
        """A save that found the file holding the in-world text (nothing to send): diagnostics
        describe the in-world text, so those of an earlier attempt that never reached the item (an
        include not found, a save the viewer failed) go, and the in-world text's come back."""
        report = self.compiles.get(key)
        if report is None or report.landed:
            return
        inworld = self._inworld_compiles.pop(key, None)
        if inworld is None:
            del self.compiles[key]
        else:
            self.compiles[key] = inworld
        log.info("%s: holds the in-world text again; the failed attempt's diagnostics are cleared", path)

    def refetch(self, item: Item) -> None:
        """What the viewer holds may differ from what we know: fetch it again (in the background)."""
        item.cache.content_valid = False
        item.cache.generation += 1
        self.tree.invalidate_item(item, data=True)
        self._fetch_send.send_nowait(item)

    def on_unsubscribe(self, msg: ScriptUnsubscribe) -> None:
        self.live.on_unsubscribe(msg)

    def invalidate_live_name(self, name: str) -> None:
        """A name in `.slfs/live/` that the kernel may have cached means nothing now."""
        self.invalidations.add(EntryChanged(self.tree.inode_for(LIVE_DIR_KEY), name))

    def on_editor_command(self, command: str, params: dict[str, Any]) -> None:
        # editor.open_file and editor.show_message start programs on the peer's word: editor_commands.py.
        if not self.editor.on_command(command, params):
            self.emit("viewer.command", command=command, params=params)

    # --- calls ------------------------------------------------------------------------------

    async def call(self, what: str, method: str, params: RequestParams, result_type: type[Any] | None = None,
                   *, timeout: float | None = None, retries: int = 0,
                   transient: Callable[[RpcError], bool] = lambda _e: False, idempotent: bool = False) -> Any:
        """Call the viewer; every failure becomes an FsError with a clear errno and message.

        An error `transient` says will pass is retried up to `retries` times, with jittered
        exponential backoff. A region that stays down is named in `.slfs/status`."""
        about = self._object_of(params)
        # Reconnecting right after a drop: wait (bounded) rather than fail at once. A call the
        # drop interrupts is not sent again (a create might then happen twice).
        await self.await_viewer()
        backoff = Backoff(0.1, 2.0)
        resent = False
        for attempt in range(retries + 2):  # one more for a read resent after a reconnect
            try:
                if result_type is None:
                    result = await self.session.call(method, params, timeout=timeout)
                else:
                    result = await self.session.call_typed(method, params, result_type, timeout=timeout)
                if about is not None:
                    self.regions_down.pop(about.uuid, None)
                return result
            except NotConnected as exc:
                if self._dropped_at is None and self.info is not None:
                    self._dropped_at = trio.current_time()  # the drop, before the session reports it
                if idempotent and not resent and await self.await_viewer():
                    resent = True  # cut by a drop and the session is back: asking again is safe
                    continue
                raise CallCut(errno.EIO, f"{what}: not connected to the viewer ({exc.message})") from None
            except RpcError as exc:
                if attempt >= retries or not transient(exc):
                    err = from_rpc(exc, what)
                    if region_down(exc) and about is not None:
                        self.regions_down[about.uuid] = about.name or about.uuid
                        self.note_error(err.message)
                    raise err from None
                delay = backoff.delay()
                log.info("%s: %s; retrying in %.2f s", what, exc.message, delay)
                await trio.sleep(delay)
        raise AssertionError("unreachable")

    async def await_viewer(self) -> bool:
        """Whether the session is up, waiting for it while it reconnects after a drop: at most
        `reconnect_wait` seconds from the drop (a viewer gone for longer fails calls at once)."""
        if self.session.ready:
            return True
        if self._dropped_at is None:
            return False
        left = self._dropped_at + self.options.reconnect_wait - trio.current_time()
        if left <= 0:
            return False
        with trio.move_on_after(left):
            await self.session.wait_ready()
            return True
        return False

    def _object_of(self, params: RequestParams) -> Folder | None:
        """The object folder a call is about (by its prim_id), for status lines."""
        wire = encode_params(params) or {}
        node = self.tree.find(str(wire.get("prim_id") or wire.get("object_id") or ""))
        return node.object_folder if isinstance(node, Folder) else None

    # --- content ----------------------------------------------------------------------------

    async def read_content(self, item: Item, *, current: bool = False, fresh: bool = False) -> bytes:
        """The item's content, fetched once and cached. Offline, the last known content.
        `current`: known at the item's current revision, which our own save's content is not
        until a fetch confirms it (Item.content_current); a read shows it meanwhile. `fresh`:
        fetched now, whatever is cached (what a save cut by a drop left in-world)."""
        for _attempt in range(4):
            cache = item.cache
            if cache.content is not None and not fresh and (item.content_current if current else cache.content_valid):
                return cache.content
            if not item.readable:
                raise FsError(errno.EACCES, f"{self.tree.path_of(item)}: script is not readable "
                              "(needs copy and modify permission)")
            if not self.connected and not await self.await_viewer():
                if item.cache.content is not None and not fresh:
                    return item.cache.content
                raise FsError(errno.EIO, f"{self.tree.path_of(item)}: not connected to the viewer "
                              f"({self.session.state_detail})")
            fetch = self._fetches.get(item.uuid)
            if fetch is not None:
                await fetch.done.wait()
                if fetch.error is not None:
                    raise fetch.error
                continue
            fetch = self._fetches[item.uuid] = _Fetch()
            try:
                await self._fetch(item)
                fresh = False
            except FsError as exc:
                fetch.error = exc
                raise
            finally:
                fetch.done.set()
                del self._fetches[item.uuid]
        if item.cache.content is not None:
            return item.cache.content  # changing faster than we can read it: serve the newest we have
        raise FsError(errno.EIO, f"{self.tree.path_of(item)}: content keeps changing")

    async def _fetch(self, item: Item) -> None:
        assert item.folder is not None
        first = item.cache.content is None
        if first:
            await self.history.wait_open()  # the history tells a first fetch's mtime (below)
        generation, revision = item.cache.generation, item.info.revision
        path = self.tree.path_of(item)
        res: ContentGetResponse = await self.call(
            f"read {path}", "object.content.get", ContentGetParams(prim_id=item.folder.uuid, item_id=item.uuid),
            ContentGetResponse, retries=self.options.save_retries, transient=transient_read_error, idempotent=True,
        )
        self.fetch_count += 1
        if item.info.type == "notecard":
            self.set_embedded_items(item, res.embedded_items or 0)
        current = generation == item.cache.generation
        # A script kept in an envelope (Firestorm's preprocessor) is shown as the source inside it.
        unwrapped = envelope.unwrap(res.content) if item.is_script else None
        shown = unwrapped.source if unwrapped is not None else res.content
        data = shown.encode("utf-8", "replace")
        # Content that changed since we last knew it, and not by our save (whose text we knew): a
        # save in the viewer, someone else's edit, a recompile.
        origin = VIEWER if item.cache.content is not None and item.cache.content != data else FETCHED
        inworld = res.content.encode("utf-8", "replace") if unwrapped is not None else None
        seen = None
        if first and item.cache.content is None and self.times.shown(item.uuid, data) is None:
            # A first fetch (no stat has shown the file yet: sizes are unknown before it): its
            # mtime is when the item came to hold this text, as far as the history knows, so a
            # remount shows what the last mount did; else now. Never changed once shown: editors
            # take a changed mtime for a change on disk.
            since = self.history.since(item.uuid, data)
            seen = since if since is not None else time.time()
            item.mtime_ns = round(seen * 1e6) * 1000  # the store's doubles hold microseconds exactly
        self.set_content(item, data, valid=current, revision=revision if current else None, inworld=inworld)
        self.history.record(item, origin, data, inworld=inworld, at=seen)
        if current:
            item.fetched_at(data, revision)

    def set_embedded_items(self, item: Item, count: int) -> None:
        """What the viewer says the notecard embeds: more than none makes it read-only (mode 0444)."""
        if item.cache.embedded_items != count:
            item.cache.embedded_items = count
            self.tree.invalidate_item(item, data=False)

    def set_content(self, item: Item, data: bytes, *, valid: bool, revision: int | None = None,
                    inworld: bytes | None = None) -> None:
        """Record content (of `revision`, by default the item's current one) as the file shows it,
        and, for a script kept in an envelope, the text as stored in-world; mtime moves only when
        the bytes differ from what was known before."""
        first = item.cache.content is None
        changed = not first and item.cache.content != data
        item.cache.content = data
        if inworld != item.cache.inworld:
            item.cache.inworld_places = None  # no longer the text our build's places describe
        item.cache.inworld = inworld
        item.cache.content_valid = valid
        item.cache.content_revision = revision if revision is not None or not valid else item.info.revision
        item.echo.set_unconfirmed(False)
        set_on = self.times.shown(item.uuid, data) if first or changed else None
        if changed:
            # A time a program set on this very text (cp -p sets it before the close that saves)
            # stays; any other change is now, and forgets the time set on the old text.
            if set_on is None:
                self.times.forget(item.uuid)
            item.mtime_ns = set_on if set_on is not None else time.time_ns()
            self.tree.invalidate_item(item, data=True)
        else:
            if set_on is not None:
                item.mtime_ns = set_on
            # A first fetch needs no kernel invalidation (unknown sizes were never cached there),
            # but the size listings show is known now.
            self.tree.stat_changed(item)

    def set_mtime(self, item: Item, mtime_ns: int) -> None:
        """utimens (touch -d, cp -p, rsync -a): the time is shown, and kept across remounts, while
        the item holds the text the file shows now."""
        item.mtime_ns = mtime_ns
        shown = bytes(item.edit.buffer) if item.edit.buffer is not None else item.cache.content
        if shown is not None:
            self.times.set(item.uuid, mtime_ns, shown)
        self.tree.invalidate_item(item, data=False)  # a rename onto the item: the kernel has the old time

    def confirm_content(self, item: Item) -> None:
        """Fetch the item in the background until its content is current (Item.content_current):
        items someone has read, so sizes stay exact without a stat waiting on the viewer, and our
        own save's content at the revision its echo brought. The tree's on_stale."""
        self._fetch_send.send_nowait(item)

    async def _fetch_worker(self) -> None:
        async for item in self._fetch_recv:
            if item.attached and not item.content_current and item.readable and self.connected:
                self._fetching += 1
                try:
                    await self.read_content(item, current=True)
                except FsError as exc:
                    log.debug("background fetch of %s failed: %s", item.uuid, exc.message)
                except Exception as exc:  # a bug: this worker must go on serving the queue
                    self.background_errors += 1
                    log.exception("background fetch of %s failed", item.uuid)
                    self.note_error(f"background fetch failed: {exc!r}")
                finally:
                    self._fetching -= 1

    def start_prefetch(self, folder: Folder) -> None:
        """The first listing of a prim fetches its items, `prefetch` at a time."""
        if folder.listed:
            return
        folder.listed = True
        if self.options.prefetch <= 0 or not self.connected:
            return
        for item in list(folder.items.values()):
            if item.readable and item.cache.content is None:
                self._fetch_send.send_nowait(item)

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
        out.update(objects=len(self.tree.objects), items=self.tree.item_count, content_fetches=self.fetch_count,
                   fetches_pending=self._fetch_send.statistics().current_buffer_used + self._fetching)
        if info is not None and not info.lists_objects and self.connected and not self.tree.objects:
            out["publish_hint"] = PUBLISH_HINT
        out["last_error"] = self.last_error or "none"
        out["background_errors"] = self.background_errors
        out["region_unavailable"] = ", ".join(sorted(self.regions_down.values())) or "none"
        out.update(self.fanout.status())
        ordered = {key: out.pop(key) for key in STATUS_ORDER if key in out}
        return {**ordered, **out}  # keys not in STATUS_ORDER (none today) after the others
