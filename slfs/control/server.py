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

Commands: status, stats, events {since, seconds} and subscribe here; diag {path}, build,
recompile, run/stop/reset {path}, resend {path, force}, live_subscribe, live_list, script_list
(scripts.py); open {object_id}, close {path}, viewer_command {command, params, path}, commands
(viewer.py); list {path, recursive}, find {uuid}, resolve {path} (listing.py); history {path,
deleted}, restore {path, version} (history_requests.py); push_state, push_create, push_save, push_delete,
push_run (push.py). Each group is given the MountContext (context.py), never this server.
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
from ..local.events import EventLog
from ..model.scripts import Scripts
from ..model.workspace import Workspace
from ..model.writes import Writer
from ..stats import Stats
from ..world.fs_errors import FsError
from .context import Commands, MountContext
from .history_requests import HistoryRequests
from .listing import ListingRequests
from .push import PushRequests
from .requests import (
    EventsParams,
    NoParams,
    structure,
)
from .scripts import ScriptRequests
from .viewer import ViewerRequests

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_FRAME = 1 << 20
# `run` of a faulted script: a reset or a compiling save clears a fault; neither protocol document
# says a running flag does (viewer-external-editor-json-rpc.md, set_running: "dispatched, not
# applied"), so the confirmation wait is short (a viewer that restarts it says so at once) and the
# error then says what is known.
FAULTED_WAIT = 2.0



class ControlServer:
    """The socket, its framing and dispatch, and the mount-wide requests (status, stats, events);
    the other requests are served by their groups (context.py's MountContext is what they share)."""

    def __init__(self, ws: Workspace, scripts: Scripts, writer: Writer, events: EventLog, stats: Stats,
                 socket_path: str) -> None:
        self.ws = ws
        self.stats = stats
        self.events = events
        self.socket_path = socket_path
        ctx = MountContext(ws, scripts, writer, events, stats)
        self.commands: Commands = {
            "status": (NoParams, self._status),
            "stats": (NoParams, self._stats),
            "events": (EventsParams, self._events),
        }
        for group in (ScriptRequests(ctx), ViewerRequests(ctx), ListingRequests(ctx), HistoryRequests(ctx),
                      PushRequests(ctx)):
            group.register(self.commands)
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





    # --- commands ----------------------------------------------------------------------------

    async def _status(self, p: NoParams) -> Any:
        return {"mount": self.ws.mountpoint, **self.ws.status()}

    async def _stats(self, p: NoParams) -> Any:
        return {"mount": self.ws.mountpoint, **self.stats.snapshot()}













    async def _events(self, p: EventsParams) -> Any:
        events = self.events.since(p.since or 0, p.seconds)
        return {"events": events, "cursor": self.events.seq}











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
