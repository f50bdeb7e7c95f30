"""The control socket: newline-delimited JSON over a Unix socket, one per mount (mode 0600).

Protocol (version 1), modelled on a robust NDJSON RPC host:
- The daemon sends first: {"type":"ready","protocolVersion":1,"mount":..., "pid":..., "maxFrameBytes":...}.
- A request is {"id": ID, "type": COMMAND, ...parameters}; the answer is
  {"id": ID, "type":"response", "command": COMMAND, "success": true, "data": {...}} or
  {"id": ID, "type":"response", "command": COMMAND, "success": false, "error": "...", "code": "ENOENT"}.
  Requests are served concurrently; answers are correlated by id, not by order.
- A line that is not a JSON object (or is nested too deeply to decode) gets
  {"type":"response","command":"parse","success":false,...} without an id, and the connection stays
  usable. Frames of an unknown type are ignored.
- {"id":..,"type":"subscribe","since":SEQ} answers, then streams {"type":"event","event":{...}};
  {"type":"unsubscribe"} stops the stream. A subscriber that falls 1,000 events behind gets
  {"type":"subscription_ended","reason":...} and may subscribe again from its last seq.
- On shutdown the daemon sends {"type":"shutdown"} and closes.

Commands: status, stats, diag {path}, run/stop/reset {path}, events {since, seconds}, subscribe,
open {object_id}, close {path}, viewer_command {command, params, path}, commands,
find {uuid}, resolve {path}, list {path, recursive}, history {path, deleted},
restore {path, version} (control/history.py), resend {path, force}, push_state, push_create,
push_save, push_delete, push_run (control/push.py).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import stat
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .. import jsontext
from ..model.events import EventLog
from ..model.live import LiveScript
from ..model.scripts import Scripts
from ..model.tree import ROOT_INODE, Folder, Item, Node
from ..model.workspace import Workspace
from ..model.writes import Writer
from ..protocol.command_types import VIEWER_COMMANDS, CommandExecuteParams, CommandInfo, CommandListResponse
from ..protocol.errors import METHOD_NOT_FOUND
from ..protocol.types import (
    ObjectRequestParams,
    ObjectUnpublishParams,
    ScriptList,
)
from ..stats import Stats
from ..world.errors import FsError
from .history import HistoryParams, HistoryRequests, RestoreParams
from .push import PushRequests
from .requests import (
    DiagParams,
    EventsParams,
    FindParams,
    ListParams,
    LiveSubscribeParams,
    NoParams,
    OpenParams,
    PathParams,
    ResendParams,
    StateParams,
    ViewerCommandParams,
    structure,
)

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 20
# `run` of a faulted script: a reset or a compiling save clears a fault; neither protocol document
# says a running flag does (viewer-external-editor-json-rpc.md, set_running: "dispatched, not
# applied"), so the confirmation wait is short (a viewer that restarts it says so at once) and the
# error then says what is known.
FAULTED_WAIT = 2.0

Handler = Callable[[Any], Awaitable[Any]]


def _wait_bound(wait: float | None) -> float | None:
    """`diag`'s `wait` (seconds) as the time to wait, at most 70; None for no wait."""
    if wait is not None and wait > 0:
        return min(wait, 70.0)
    return None


class ControlServer:
    def __init__(self, ws: Workspace, scripts: Scripts, writer: Writer, events: EventLog, stats: Stats,
                 socket_path: str) -> None:
        self.ws = ws
        self.stats = stats  # the mount's, for `stats`
        self.tree = ws.tree
        self.scripts = scripts  # state changes and diagnostics are the model's
        self.writer = writer  # and so are builds
        self.events = events
        self.socket_path = socket_path
        self._offered: tuple[Any, dict[str, CommandInfo]] | None = None  # (session info, command.list)
        # Each command: the record its parameters are structured into (requests.py), its handler.
        self.commands: dict[str, tuple[type, Handler]] = {
            "status": (NoParams, self._status),
            "stats": (NoParams, self._stats),
            "diag": (DiagParams, self._diag),
            "build": (PathParams, self._build),
            "recompile": (PathParams, self._recompile),
            "live_subscribe": (LiveSubscribeParams, self._live_subscribe),
            "live_list": (NoParams, self._live_list),
            "script_list": (NoParams, self._script_list),
            "run": (StateParams, lambda p: self._set_state(p, "run")),
            "stop": (StateParams, lambda p: self._set_state(p, "stop")),
            "reset": (StateParams, lambda p: self._set_state(p, "reset")),
            "events": (EventsParams, self._events),
            "open": (OpenParams, self._open),
            "close": (PathParams, self._close),
            "viewer_command": (ViewerCommandParams, self._viewer_command),
            "commands": (NoParams, self._commands),
            "find": (FindParams, self._find),
            "resolve": (PathParams, self._resolve_cmd),
            "list": (ListParams, self._list),
            "resend": (ResendParams, self._resend),
        }
        history = HistoryRequests(self)  # control/history.py
        self.commands.update(history=(HistoryParams, history.history), restore=(RestoreParams, history.restore))
        PushRequests(self).register(self.commands)  # control/push.py: slfs push and pull
        self._streams: list[trio.SocketStream] = []

    # --- transport ---------------------------------------------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        os.makedirs(os.path.dirname(self.socket_path), mode=0o700, exist_ok=True)
        try:
            if stat.S_ISSOCK(os.lstat(self.socket_path).st_mode):
                os.unlink(self.socket_path)  # left by a crashed daemon
        except FileNotFoundError:
            pass
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            await sock.bind(self.socket_path)
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        sock.listen(16)
        listener = trio.SocketListener(sock)
        log.info("control socket at %s", self.socket_path)
        try:
            async with trio.open_nursery() as nursery:
                task_status.started()
                await trio.serve_listeners(self._connection, [listener], handler_nursery=nursery)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                for stream in list(self._streams):
                    try:
                        await stream.send_all(b'{"type":"shutdown"}\n')
                        await stream.aclose()
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        pass
            try:
                os.unlink(self.socket_path)
            except OSError:
                pass

    async def _connection(self, stream: trio.SocketStream) -> None:
        uid = peer_uid(stream)
        if uid is not None and uid not in (os.geteuid(), 0):
            # The socket's directory is 0700 and the socket 0600; this holds if someone loosens them.
            log.warning("control socket: refused a connection from uid %d (not ours, uid %d)", uid, os.geteuid())
            await stream.aclose()
            return
        self._streams.append(stream)
        lock = trio.Lock()
        ended = False

        async def send(frame: dict[str, Any]) -> None:
            data = encode_frame(frame)
            async with lock:
                await stream.send_all(data)

        try:
            async with trio.open_nursery() as nursery:
                await send({"type": "ready", "protocolVersion": PROTOCOL_VERSION,
                            "supportedProtocolVersions": [PROTOCOL_VERSION], "maxFrameBytes": MAX_FRAME,
                            "mount": self.ws.mountpoint, "pid": os.getpid()})
                subscription: list[trio.CancelScope] = []
                buf = b""
                while True:
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        if line.strip():
                            self._dispatch(line, send, nursery, subscription)
                    if len(buf) > MAX_FRAME:
                        await send({"type": "response", "command": "parse", "success": False,
                                    "error": f"frame longer than {MAX_FRAME} bytes"})
                        break
                nursery.cancel_scope.cancel()  # EOF: the client is done
            ended = True
        except* (trio.BrokenResourceError, trio.ClosedResourceError):
            # The client went away (killed, or Ctrl-C on `slfs events -f`): its connection ends,
            # never the daemon. The nursery hands it over in a group, from the read or a send.
            ended = True
        finally:
            self._streams.remove(stream)
            if not ended:
                # Cancelled: the daemon is shutting down. This task ends before serve()'s own
                # cleanup runs, so say so here, while the stream is still open.
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    try:
                        await stream.send_all(b'{"type":"shutdown"}\n')
                    except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError,
                            OSError):
                        pass

    def _dispatch(self, line: bytes, send: Callable[[dict[str, Any]], Awaitable[None]],
                  nursery: trio.Nursery, subscription: list[trio.CancelScope]) -> None:
        try:
            frame = jsontext.loads(line)  # a line too deep or too big is a parse error too
            if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
                raise ValueError("a frame is a JSON object with a string \"type\"")
        except ValueError as exc:
            nursery.start_soon(send, {"type": "response", "command": "parse", "success": False,
                                      "error": f"malformed frame: {exc}"})
            return
        kind = frame["type"]
        if kind == "subscribe":
            for scope in subscription:
                scope.cancel()
            subscription.clear()
            scope = trio.CancelScope()
            subscription.append(scope)
            nursery.start_soon(self._stream_events, frame, send, scope)
        elif kind == "unsubscribe":
            for scope in subscription:
                scope.cancel()
            subscription.clear()
        elif kind in self.commands:
            nursery.start_soon(self._answer, frame, send)
        else:
            log.debug("control: ignoring a frame of unknown type %r", kind)

    async def _answer(self, frame: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[None]]) -> None:
        kind = frame["type"]
        reply: dict[str, Any] = {"type": "response", "command": kind}
        if "id" in frame:
            reply["id"] = frame["id"]
        try:
            params_type, handler = self.commands[kind]
            reply.update(success=True, data=await handler(structure(frame, params_type, kind)))
        except FsError as exc:
            reply.update(success=False, error=exc.message or os.strerror(exc.errno),
                         code=getattr(exc, "control_code", None) or errno.errorcode.get(exc.errno, str(exc.errno)))
        except Exception as exc:
            log.exception("control command %s failed", kind)
            reply.update(success=False, error=f"internal error: {exc}", code="EIO")
        await send(reply)

    async def _stream_events(self, frame: dict[str, Any], send: Callable[[dict[str, Any]], Awaitable[None]],
                             scope: trio.CancelScope) -> None:
        with scope:
            recv = self.events.subscribe()
            since = frame.get("since")
            backlog = self.events.since(int(since)) if isinstance(since, int) else []
            reply: dict[str, Any] = {"type": "response", "command": "subscribe", "success": True,
                                     "data": {"cursor": self.events.seq}}
            if "id" in frame:
                reply["id"] = frame["id"]
            await send(reply)
            last = 0
            for event in backlog:
                await send({"type": "event", "event": event})
                last = event["seq"]
            async with recv:
                async for event in recv:
                    if event["seq"] > last:
                        await send({"type": "event", "event": event})
                        last = event["seq"]
            # The log closed our channel: this subscriber fell too far behind to be kept.
            await send({"type": "subscription_ended", "reason": "the subscriber fell too far behind; "
                        f"resubscribe with since={last}"})

    # --- paths -------------------------------------------------------------------------------

    def resolve(self, path: Any) -> Node:
        """A path in the mount (absolute, or relative to it) -> its node; pure string handling
        (a stat of the mount from inside the daemon would wait on itself)."""
        if not isinstance(path, str) or not path:
            raise FsError(errno.EINVAL, "a path is required")
        mount = self.ws.mountpoint.rstrip("/")
        norm = os.path.normpath(path)
        if os.path.isabs(norm):
            if norm != mount and not norm.startswith(mount + "/"):
                raise FsError(errno.EINVAL, f"{path} is not inside the mount {mount}")
            rel = norm[len(mount):].lstrip("/")
        else:
            rel = norm if norm != "." else ""
        node: Node = self.tree.root
        for part in filter(None, rel.split("/")):
            if not isinstance(node, Folder) or part not in node.entries:
                raise FsError(errno.ENOENT, f"{path}: no such item or prim")
            node = node.entries[part]
        return node

    def _item(self, path: Any) -> Item:
        node = self.resolve(path)
        if not isinstance(node, Item):
            raise FsError(errno.EISDIR, f"{path}: not an item file")
        return node

    def _object(self, path: Any) -> Folder:
        node = self.resolve(path)
        while node is not None and not (isinstance(node, Folder) and node.parent is self.tree.root):
            node = node.parent  # type: ignore[assignment]
        if node is None or node.inode == ROOT_INODE:
            raise FsError(errno.EINVAL, f"{path}: not inside an object folder")
        assert isinstance(node, Folder)
        return node

    def _describe(self, node: Node) -> dict[str, Any]:
        return {"path": self.scripts.abspath(node), "uuid": node.uuid}

    # --- commands ----------------------------------------------------------------------------

    async def _status(self, p: NoParams) -> Any:
        return {"mount": self.ws.mountpoint, **self.ws.status()}

    async def _stats(self, p: NoParams) -> Any:
        return {"mount": self.ws.mountpoint, **self.stats.snapshot()}

    async def _diag(self, p: DiagParams) -> Any:
        live = self._live_named(p.path)
        if live is not None:
            return await self._live_diag(live, p.wait)
        node = self.resolve(p.path or self.ws.mountpoint)
        waited: bool | None = None
        bound = _wait_bound(p.wait)
        if bound is not None:
            if not isinstance(node, Item) or not node.is_script:
                raise FsError(errno.EINVAL, f"{p.path}: diag --wait names one script")
            # A save through the mount returns with its compile answer: the wait is for a save in
            # progress (another program's close) to end.
            waited = False
            with trio.move_on_after(bound):
                await self.writer.wait_saved(node)
                waited = True
        items = [node] if isinstance(node, Item) else self._items_under(node)
        files = []
        diagnostics: list[dict[str, Any]] = []
        if node.inode == ROOT_INODE:
            for ls in list(self.ws.live.by_id.values()):
                part = await self._live_diag(ls, None)
                diagnostics += part["diagnostics"]
                files += part["files"]
        for item in items:
            report = self.ws.compiles.get(item.uuid)
            if report is None:
                continue
            diags = self.scripts.diagnostics_of(item)
            diagnostics.extend(diags)
            files.append({"path": self.scripts.abspath(item), "compiled": report.compiled, "at": report.at,
                          "note": report.note, "source": report.source})
        out: dict[str, Any] = {"diagnostics": diagnostics, "files": files}
        if waited is not None:
            out["waited"] = waited
        return out

    def _live_named(self, path: str | None) -> LiveScript | None:
        """The live script of `MOUNT/.slfs/live/NAME` (or `.slfs/live/NAME`), None for other paths."""
        if not path:
            return None
        mount = self.ws.mountpoint.rstrip("/")
        norm = os.path.normpath(path)
        rel = norm[len(mount):].lstrip("/") if norm.startswith(mount + "/") else norm
        folder, _, name = rel.rpartition("/")
        if folder != ".slfs/live":
            return None
        ls = self.ws.live.entries.get(name)
        if ls is None:
            raise FsError(errno.ENOENT, f"{path}: no such live file")
        return ls

    async def _live_diag(self, ls: LiveScript, wait: float | None) -> dict[str, Any]:
        """A live file's diagnostics; with `wait` (seconds, at most 70), once the viewer answered
        its last save (a live save is compiled by the viewer after close() returned)."""
        waited = True
        bound = _wait_bound(wait)
        if bound is not None and not ls.compiled_since_write:
            waited = False
            with trio.move_on_after(bound):
                while not ls.compiled_since_write and ls.gone is None:
                    await ls.compiled.wait()
                waited = True
        report = self.ws.live.report(ls)
        files = [] if report is None else [{"path": self.ws.live.abspath(ls), "compiled": report.compiled,
                                            "at": report.at, "note": report.note, "source": report.source}]
        return {"diagnostics": self.ws.live.diagnostics_of(ls), "files": files, "waited": waited}

    async def _live_subscribe(self, p: LiveSubscribeParams) -> Any:
        temp_path = p.temp_path
        if not temp_path:
            raise FsError(errno.EINVAL, "temp_path is required")
        ls = await self.ws.live.subscribe(temp_path)
        return {"path": self.ws.live.abspath(ls), "script_id": ls.script_id, "name": ls.name,
                "temp_path": ls.temp_path, "open_cmd": self.ws.options.open_cmd}

    async def _live_list(self, p: NoParams) -> Any:
        live = self.ws.live
        return {"scripts": [live.describe(ls) for ls in list(live.by_id.values()) if live.exists(ls)]}

    async def _script_list(self, p: NoParams) -> Any:
        res: ScriptList = await self.ws.call("script.list", "script.list", None, ScriptList)
        # The viewer's own path to its temp dir (a Windows one under Wine or WSL2): ours, to list it.
        temp_dir = await self.ws.live.translated(res.temp_dir) if res.temp_dir else ""
        return {"temp_dir": temp_dir, "script_ids": list(res.script_ids)}

    def _items_under(self, node: Node) -> list[Item]:
        if isinstance(node, Folder):
            return self.tree.items_in(node)
        prefix = self.tree.path_of(node)
        return [i for i in self.tree.iter_items() if not prefix or self.tree.path_of(i).startswith(prefix + "/")]

    async def _build(self, p: PathParams) -> Any:
        """`slfs build`: every script under the path that is a built source, expanded and saved
        again unless its expansion is what is in-world already."""
        node = self.resolve(p.path or self.ws.mountpoint)
        named = isinstance(node, Item)
        if isinstance(node, Item) and not node.is_script:
            raise FsError(errno.EINVAL, f"{p.path}: not a script")
        items = [node] if isinstance(node, Item) else [i for i in self._items_under(node) if i.is_script and i.readable]
        results: list[dict[str, Any]] = []
        for item in items:
            entry: dict[str, Any] = {"path": self.scripts.abspath(item)}
            try:
                entry["status"] = await self.writer.rebuild(item)
            except FsError as exc:
                entry.update(status="failed", error=exc.message, code=errno.errorcode.get(exc.errno, "EIO"))
            if entry["status"] == "plain" and not named:
                continue  # not a built source: nothing to say about it
            results.append(self._with_compile(item, entry))
        return {"results": results}

    async def _recompile(self, p: PathParams) -> Any:
        """`slfs recompile FILE`: the script's in-world text saved again, and the compile's answer."""
        item = self._item(p.path)
        if not item.is_script:
            raise FsError(errno.EINVAL, f"{p.path}: not a script")
        entry: dict[str, Any] = {"path": self.scripts.abspath(item)}
        try:
            await self.writer.recompile(item)
            entry["status"] = "saved"
        except FsError as exc:
            entry.update(status="failed", error=exc.message, code=errno.errorcode.get(exc.errno, "EIO"))
        return {"results": [self._with_compile(item, entry)]}

    def _with_compile(self, item: Item, entry: dict[str, Any]) -> dict[str, Any]:
        """A build's or recompile's entry, with the compile's answer when it saved or failed."""
        report = self.ws.compiles.get(item.uuid)
        if entry["status"] in ("saved", "failed") and report is not None:
            entry["compiled"] = report.compiled
            entry["diagnostics"] = self.scripts.diagnostics_of(item)
            entry["includes"] = list(report.includes)
        return entry

    async def _set_state(self, p: StateParams, word: str) -> Any:
        item = self._item(p.path)
        if not item.is_script:
            raise FsError(errno.EINVAL, f"{p.path}: not a script")
        faulted = bool(item.info.faulted)
        record = item.record
        await self.scripts.set_state(item, word)
        if word == "reset":
            return await self._reset_confirmed(item, record, faulted)
        want = {"run": True, "stop": False}.get(word)
        if want is not None:
            # set_running answers "dispatched": wait for the viewer's object.update to confirm.
            def confirmed() -> bool:
                return bool(item.info.running) == want and not (want and item.info.faulted)

            wait = p.timeout
            if want and faulted:
                wait = min(wait, FAULTED_WAIT)
            if await self.ws.wait_for_world(confirmed, wait):
                return {**self._describe(item), "state": self.scripts.state_word(item), "confirmed": True}
            if want and item.info.faulted:
                raise FsError(errno.EIO, f"{p.path}: the viewer accepted run, but the script is still faulted "
                              "(stopped by a run-time error); a reset clears that: reset it to start it again")
            raise FsError(errno.ETIMEDOUT, f"{p.path}: the viewer accepted {word} but has not yet confirmed it "
                          f"(last known state: {self.scripts.state_word(item)})")
        return {**self._describe(item), "state": self.scripts.state_word(item), "confirmed": False}

    async def _reset_confirmed(self, item: Item, record: object, faulted: bool) -> Any:
        """A reset's answer. The viewer says nothing of a reset, except that a faulted script's
        fault is cleared (an update of the item, after which it may fault again): that one is
        waited for, briefly; any other reset is reported as not yet confirmed, with the state
        last known."""
        confirmed = faulted and await self.ws.wait_for_world(lambda: item.record is not record, FAULTED_WAIT)
        return {**self._describe(item), "state": self.scripts.state_word(item), "confirmed": confirmed}

    async def _events(self, p: EventsParams) -> Any:
        events = self.events.since(p.since or 0, p.seconds)
        return {"events": events, "cursor": self.events.seq}

    async def _open(self, p: OpenParams) -> Any:
        object_id = p.object_id.lower()
        if not object_id:
            raise FsError(errno.EINVAL, "an object UUID is required")
        await self.ws.call(f"open {object_id}", "object.request", ObjectRequestParams(object_id=object_id))
        if await self.ws.wait_for_world(lambda: object_id in self.tree.objects,
                                        p.timeout):
            return self._describe(self.tree.objects[object_id])
        raise FsError(errno.ETIMEDOUT, f"the viewer accepted the request for {object_id} but did not publish it")

    async def _close(self, p: PathParams) -> Any:
        obj = self._object(p.path)
        await self.ws.call(f"close {obj.name}", "object.unpublish", ObjectUnpublishParams(object_id=obj.uuid))
        return self._describe(obj)

    async def _viewer_command(self, p: ViewerCommandParams) -> Any:
        command = p.command
        if not command:
            raise FsError(errno.EINVAL, "a command is required")
        params = dict(p.params)
        if p.path:
            params.setdefault("object_id", self._object(p.path).uuid)
        offered = await self._offered_commands()
        spec = offered.get(command)
        if spec is None:
            names = ", ".join(sorted(offered)) or "none"
            raise FsError(errno.EOPNOTSUPP, f"the viewer does not offer {command} (its command.list offers: {names})")
        required = {name for name, param in (spec.params or {}).items() if param.required}
        missing = sorted(k for k in required.union(VIEWER_COMMANDS.get(command, ())) if k not in params)
        if missing:
            raise FsError(errno.EINVAL, f"{command} needs {', '.join(missing)}")
        result = await self.ws.call(command, "command.execute",
                                    CommandExecuteParams(command=command, params=params))
        return {"command": command, "result": result}

    async def _offered_commands(self) -> dict[str, CommandInfo]:
        """The viewer's command.list, asked once per session: what a command is checked against
        before anything is sent. The handshake's `commands` feature is not asked: no viewer
        consults its features (viewer-source.md §2), and G1 has no command.list at all."""
        info = self.ws.info
        if info is not None and self._offered is not None and self._offered[0] is info:
            return self._offered[1]
        try:
            res: CommandListResponse = await self.ws.call("commands", "command.list", {}, CommandListResponse)
        except FsError as exc:
            if exc.rpc_code == METHOD_NOT_FOUND:
                raise FsError(errno.EOPNOTSUPP, "the viewer offers no commands (it has no command.list; "
                              "viewers before Alchemy's explorer have none)") from None
            raise
        offered = {c.command: c for c in res.commands}
        self._offered = (info, offered)
        return offered

    async def _commands(self, p: NoParams) -> Any:
        try:
            return await self.ws.call("commands", "command.list", {})
        except FsError as exc:
            if exc.rpc_code == METHOD_NOT_FOUND:
                return {"commands": []}  # G1: no command.list, so no commands
            raise

    async def _find(self, p: FindParams) -> Any:
        uuid = p.uuid.lower()
        node = self.tree.find(uuid)
        if node is None or not node.attached:
            raise FsError(errno.ENOENT, f"{uuid} is not published")
        return self._describe(node)

    async def _resolve_cmd(self, p: PathParams) -> Any:
        return self._describe(self.resolve(p.path))

    async def _resend(self, p: ResendParams) -> Any:
        """`slfs resend`: save the newest recovered text of the item at `path` (model/unsent.py)."""
        item = self._item(p.path)
        out = await self.writer.unsent.resend(item, force=p.force)
        report = self.ws.compiles.get(item.uuid)
        if out["sent"] and item.is_script and report is not None:
            out.update(compiled=report.compiled, diagnostics=self.scripts.diagnostics_of(item))
        return out

    # --- list (slfs mcp's slfs_list) ----------------------------------------------------------

    async def _list(self, p: ListParams) -> Any:
        """The objects, prims and items in the folder `path` (default the root), with what the
        model knows of each; with `recursive`, everything under it. Nothing is fetched: an item
        whose content is not known yet has size null."""
        node = self.resolve(p.path or self.ws.mountpoint)
        if isinstance(node, Item):
            return {"path": self.scripts.abspath(node), "entries": [self._list_entry(node)]}
        assert isinstance(node, Folder)
        entries: list[dict[str, Any]] = []
        todo = [node]
        while todo:
            folder = todo.pop(0)
            for child in list(folder.entries.values()):
                if isinstance(child, (Item, Folder)):
                    entries.append(self._list_entry(child))
                    if isinstance(child, Folder) and p.recursive:
                        todo.append(child)
        return {"path": self.scripts.abspath(node), "entries": entries}

    def _list_entry(self, node: Item | Folder) -> dict[str, Any]:
        out: dict[str, Any] = {"name": node.name, "path": self.scripts.abspath(node), "uuid": node.uuid}
        if isinstance(node, Folder):
            out.update(kind="prim" if node.is_child else "object", permissions={"modify": node.writable})
            return out
        info = node.info
        out.update(kind=info.type, size=node.size,
                   permissions={"read": node.readable, "modify": node.writable, "save": node.saveable,
                                "why_not": node.save_refusal()})
        if node.is_script:
            report = self.ws.compiles.get(node.uuid)
            out.update(language="luau" if info.is_luau else "lsl", vm=info.vm, running=bool(info.running),
                       faulted=bool(info.faulted), state=self.scripts.state_word(node),
                       preprocessed=node.cache.inworld is not None,
                       last_compile=None if report is None else {
                           "compiled": report.compiled, "at": report.at, "note": report.note,
                           "source": report.source,
                           "errors": sum(1 for d in report.diagnostics if d.level.lower() == "error"),
                           "first": self._first_diagnostic(node)})
        return out

    def _first_diagnostic(self, item: Item) -> dict[str, Any] | None:
        """The first error of the item's last compile (else its first line of any level), its row
        mapped to the source as `slfs diag` shows it: what a one-line summary quotes."""
        rows = self.scripts.diagnostics_of(item)
        errors = [d for d in rows if str(d.get("level", "")).lower() == "error"]
        return (errors or rows)[0] if rows else None


def encode_frame(frame: dict[str, Any]) -> bytes:
    """One line for the client. An answer carrying what the viewer sent nested too deeply to encode
    (json.dumps raises RecursionError) becomes a failed answer saying so, not a dead connection."""
    try:
        return json.dumps(frame, default=str).encode() + b"\n"
    except (RecursionError, ValueError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        log.warning("control: could not encode a %s frame: %s", frame.get("type"), why)
        event = frame.get("event")
        if frame.get("type") == "event" and isinstance(event, dict):
            # An event keeps its scalar fields (seq, type, path, ...) and says what was left out.
            kept = {k: v for k, v in event.items() if v is None or isinstance(v, (str, int, float, bool))}
            return json.dumps({"type": "event", "event": {**kept, "unencodable": why}}).encode() + b"\n"
        kept = {k: frame[k] for k in ("id", "type", "command") if isinstance(frame.get(k), (str, int))}
        failed = {**kept, "success": False, "error": f"the answer could not be encoded: {why}", "code": "EIO"}
        return json.dumps(failed).encode() + b"\n"


def peer_uid(stream: trio.SocketStream) -> int | None:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED), or None off Linux."""
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        return None
    creds = stream.socket.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)
