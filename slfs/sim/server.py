"""The simulated viewer: a WebSocket JSON-RPC 2.0 server behaving like the Second Life viewer.

See README.md for what it simulates and how. Version 1 follows the protocol document; version 2
adds what newer viewers do (see the `v2` checks).
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, serve_websocket

from slfs.protocol.errors import (
    ACCESS_DENIED,
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    SERVICE_UNAVAILABLE,
    ProtocolError,
    RpcError,
)
from slfs.protocol.jsonrpc import Notification, Request, Response, parse_object

from . import syntax
from .compiler import compile_source
from .control import NOTECARD_LIMIT, WorldControl, cut_bytes, dumps
from .world import (
    SCRIPT_VMS,
    SUBTYPE_LSL,
    SUBTYPE_LUAU,
    Item,
    Perms,
    Prim,
    SimObject,
    World,
)

log = logging.getLogger("slfs.sim")

NAME_LIMIT = 63
DESCRIPTION_LIMIT = 127
V2_PREAUTH_LIMIT = 64 * 1024
V2_MESSAGE_LIMIT = 16 * 1024 * 1024
V1_MESSAGE_LIMIT = 256 * 1024 * 1024
V2_MAX_UNAUTHENTICATED = 4
# Newer protocol document, Usage Flow 1: "The viewer takes 32 connections at most, and closes any
# more unanswered"; "A client that stops reading is dropped once 32 MB of messages wait unsent to
# it, and a close the viewer starts drops the connection if it has not completed within 5 seconds".
V2_MAX_CONNECTIONS = 32
V2_UNSENT_LIMIT = 32 * 1024 * 1024
CLOSE_TIMEOUT = 5.0
SEND_WAIT = 0.1  # how long a send waits for its frame to be written (see _Conn.send)
# Exact texts of the newer protocol document (AlchemyViewer/Alchemy doc/external-editor-json-rpc.md).
REGION_DOWN = "The object's region is not connected"
EMBEDDED_ITEMS_REFUSED = (
    "The notecard holds embedded items, which saving its text would lose; edit it in the viewer"
)
COMPILE_FAILURES = ("stoi", "nul")
SESSION_FEATURES = {
    "live_sync": False,
    "compilation": True,
    "syntax_cache": True,
    "commands": True,
    "unified_diagnostics": True,
}
# Methods the viewer handles asynchronously; calling them as a notification is an Invalid Request.
ASYNC_METHODS = {"object.content.get", "object.content.save", "object.item.create"}
RECOMPILE_TARGETS = ("luau", "lsl2", "mono", "auto")

Handler = Callable[[dict[str, Any], "_Ctx"], Awaitable[Any]]


def invalid(detail: str) -> RpcError:
    return RpcError.standard(INVALID_PARAMS, detail)


def denied(message: str) -> RpcError:
    return RpcError(ACCESS_DENIED, message)


def correct_name(name: str, limit: int = NAME_LIMIT) -> str:
    """The viewer's inventory name correction (bytes < 32 except LF, non-ASCII, '|' -> space)."""
    raw = name.encode("utf-8")
    fixed = bytes(0x20 if (b < 32 and b != 10) or b >= 128 or b == 0x7C else b for b in raw).decode("ascii")
    return fixed.strip()[:limit]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= (1 << 31) else value


class _Conn:
    """One client connection. Frames go out through a queue and a writer task, so the sim can tell
    how much waits unsent to a client that stops reading (`unsent`, bytes of UTF-8 handed to `send`
    and not yet written to the socket; what the kernel buffers beyond that is not counted)."""

    def __init__(self, ws: WebSocketConnection, number: int, *, unsent_limit: int | None = None) -> None:
        self.ws = ws
        self.number = number
        self.authenticated = False
        self.closed = False
        self.dropped = False  # dropped for not reading (V2 unsent limit)
        self.pending: dict[str, tuple[trio.Event, list[Response]]] = {}
        self.nursery: trio.Nursery | None = None
        self.unsent = 0
        self.unsent_limit = unsent_limit
        self._out_send, self._out_recv = trio.open_memory_channel[Any](math.inf)
        self._writing = False

    async def send(self, text: str) -> None:
        """Queue a frame (frames go out in the order they were queued) and wait until it has been
        written, but no longer than SEND_WAIT: to a client that reads, a frame has gone out when
        this returns (what callers and tests count on); to one that stops reading, frames pile up
        in the queue until the unsent limit drops the connection."""
        if self.closed:
            return
        size = len(text.encode("utf-8"))
        if self.unsent_limit is not None and self.unsent + size > self.unsent_limit:
            log.info("connection %d: %d bytes wait unsent; dropping it", self.number, self.unsent + size)
            self.dropped = True
            await self.abort()
            return
        self.unsent += size
        written = trio.Event()
        self._out_send.send_nowait((text, size, written))
        with trio.move_on_after(SEND_WAIT):
            await written.wait()

    async def writer(self) -> None:
        """Write queued frames until the connection closes."""
        self._writing = True
        try:
            async for entry in self._out_recv:
                if isinstance(entry, trio.Event):  # a flush marker of close()
                    entry.set()
                    continue
                text, size, written = entry
                try:
                    await self.ws.send_message(text)
                except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
                    self.closed = True
                    return
                finally:
                    self.unsent -= size
                    written.set()
        finally:
            self._writing = False
            while True:  # wake whoever waits for a frame or a flush that will not go out
                try:
                    entry = self._out_recv.receive_nowait()
                except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
                    break
                (entry if isinstance(entry, trio.Event) else entry[2]).set()

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        """Send what is queued, then close; a close not done within CLOSE_TIMEOUT drops the socket."""
        self.closed = True
        with trio.move_on_after(CLOSE_TIMEOUT) as scope:
            if self._writing:
                flushed = trio.Event()
                self._out_send.send_nowait(flushed)
                await flushed.wait()
            try:
                await self.ws.aclose(code, reason)
            except Exception:  # already gone
                pass
        if scope.cancelled_caught:
            await self.abort()

    async def abort(self) -> None:
        """Drop the TCP connection without a close handshake."""
        self.closed = True
        try:
            await self.ws._stream.aclose()
        except Exception:  # already gone
            pass


class _Ctx:
    """Per-call context: the connection and actions to run once the response has gone out."""

    def __init__(self, conn: _Conn) -> None:
        self.conn = conn
        self.after: list[Callable[[], Awaitable[None]]] = []



def _apply_properties(target: Any, name: Any, description: Any) -> tuple[bool, bool]:
    """Apply a modify call's name and description the way the viewer does (name correction,
    description cut at its limit; an empty or unchanged name is dropped). Returns what changed."""
    name_changed = desc_changed = False
    if isinstance(name, str):
        fixed = correct_name(name)
        if fixed and fixed != target.name:
            target.name = fixed
            name_changed = True
    if isinstance(description, str):
        fixed = cut_bytes(description, DESCRIPTION_LIMIT)
        if fixed != target.description:
            target.description = fixed
            desc_changed = True
    return name_changed, desc_changed

class SimViewer(WorldControl):
    """A simulated Second Life viewer serving the external-editor protocol on 127.0.0.1."""

    def __init__(
        self,
        world: World,
        viewer_version: int = 1,
        latency_ms: float = 0,
        method_latency_ms: dict[str, float] | None = None,
        *,
        handshake_timeout: float = 30.0,
        publish_delay: float = 0.05,
        apply_delay: float = 0.05,
        create_delay: float = 0.02,
        tmpdir: str | None = None,
        viewer_version_string: str = "7.2.0.1",
        client_ping_interval: float | None = None,
        properties_delay: float | None = 0.05,
        deferred_owner_id: str = "absent",
        compile_failure: str | None = None,
    ) -> None:
        if viewer_version not in (1, 2):
            raise ValueError("viewer_version must be 1 or 2")
        if deferred_owner_id not in ("absent", "null"):
            raise ValueError("deferred_owner_id must be 'absent' or 'null'")
        if compile_failure is not None and compile_failure not in COMPILE_FAILURES:
            raise ValueError("compile_failure must be None, 'stoi' or 'nul'")
        self.world = world
        self.viewer_version = viewer_version
        self.latency_ms = latency_ms
        self.method_latency_ms: dict[str, float] = dict(method_latency_ms or {})
        self.handshake_timeout = handshake_timeout
        self.publish_delay = publish_delay
        self.apply_delay = apply_delay
        self.create_delay = create_delay
        self.tmpdir = tmpdir or tempfile.gettempdir()
        self.viewer_version_string = viewer_version_string
        self.client_ping_interval = client_ping_interval
        # V2, objects with deferred_properties: seconds from publish (or, for an object published in
        # the world file, from the first session.ok) until the properties arrive; None: only
        # deliver_properties() delivers them.
        self.properties_delay = properties_delay
        self.deferred_owner_id = deferred_owner_id  # placeholder owner_id: "absent" or "null" (UUID)
        self.compile_failure = compile_failure  # None, "stoi" or "nul": how a failed LSL save is answered
        self.dropped_connections = 0  # connections dropped for not reading (V2)
        self.client_pings: list[Response] = []  # answers to the sim's own system.ping calls
        self.syntax_id = "e2a4f6b8-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
        self.port: int | None = None
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.notifications_sent: list[tuple[str, dict[str, Any]]] = []
        self.challenge_files: list[str] = []  # every challenge file written (all deleted by now)
        self._conns: list[_Conn] = []
        self._conn_counter = 0
        self._rpc_counter = 1000
        self._fail_next: dict[str, list[RpcError]] = {}
        self._creating: set[str] = set()
        self._refuse_create: dict[str, list[str]] = {}
        self._world_deferred_scheduled = False
        self._last_inventory: dict[tuple[str, str], str] = {}
        self._nursery: trio.Nursery | None = None
        self._listen_scope: trio.CancelScope | None = None
        self._handlers: dict[str, Handler] = {
            "system.ping": self._m_ping,
            "system.getVersion": self._m_get_version,
            "system.status": self._m_status,
            "system.listMethods": self._m_list_methods,
            "language.syntax.id": self._m_syntax_id,
            "language.syntax": self._m_syntax,
            "language.syntax.cache": self._m_syntax_cache,
            "language.syntax.get": self._m_syntax_get,
            "script.subscribe": self._m_subscribe,
            "script.unsubscribe": self._m_unsubscribe,
            "script.list": self._m_script_list,
            "object.list": self._m_object_list,
            "object.request": self._m_object_request,
            "object.unpublish": self._m_object_unpublish,
            "object.content.get": self._m_content_get,
            "object.content.save": self._m_content_save,
            "object.item.create": self._m_item_create,
            "object.item.delete": self._m_item_delete,
            "object.item.modify": self._m_item_modify,
            "object.modify": self._m_object_modify,
            "object.script.set_running": self._m_set_running,
            "object.script.reset": self._m_reset,
            "command.list": self._m_command_list,
            "command.execute": self._m_command_execute,
        }

    @property
    def v2(self) -> bool:
        return self.viewer_version >= 2

    # ============================================================================================
    # serving
    # ============================================================================================

    async def serve(
        self, port: int = 0, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve until cancelled; `await nursery.start(sim.serve, 0)` returns the port."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                server = await nursery.start(self._listen, port)
                self.port = server.port
                task_status.started(self.port)
                await trio.sleep_forever()
        finally:
            self._nursery = None
            self._conns.clear()

    async def _listen(
        self, port: int, *, task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """The listener, in its own cancel scope; connections live in the outer nursery."""
        scope = trio.CancelScope()
        self._listen_scope = scope
        with scope:
            await serve_websocket(
                self._handle,
                "127.0.0.1",
                port,
                None,
                handler_nursery=self._nursery,
                max_message_size=V2_PREAUTH_LIMIT if self.v2 else V1_MESSAGE_LIMIT,
                task_status=task_status,
            )

    def stop_accepting(self) -> None:
        """Stop listening (new connections are refused); existing connections stay."""
        if self._listen_scope is not None:
            self._listen_scope.cancel()
            self._listen_scope = None

    async def resume(self) -> None:
        """Listen again on the same port."""
        assert self._nursery is not None and self.port is not None
        if self._listen_scope is None:
            await self._nursery.start(self._listen, self.port)

    @property
    def connections(self) -> int:
        """Number of authenticated connections."""
        return sum(1 for c in self._conns if c.authenticated and not c.closed)

    async def disconnect_all(self, code: int = 1001) -> None:
        """Close every connection (a client should reconnect)."""
        for conn in list(self._conns):
            await conn.close(code, "Viewer going away")

    async def wait_connections(self, n: int = 1) -> None:
        """Wait until at least `n` connections are authenticated."""
        while self.connections < n:
            await trio.sleep(0.01)

    def fail_next(self, method: str, error: RpcError) -> None:
        """Answer the next call of `method` with `error` instead of handling it."""
        self._fail_next.setdefault(method, []).append(error)

    async def _handle(self, request: WebSocketRequest) -> None:
        if self.v2 and sum(1 for c in self._conns if not c.closed) >= V2_MAX_CONNECTIONS:
            return  # "closes any more unanswered": trio-websocket closes the socket, no HTTP answer
        if any(k.lower() == b"origin" for k, _ in request.headers):
            await request.reject(403)
            return
        ws = await request.accept()
        self._conn_counter += 1
        conn = _Conn(ws, self._conn_counter, unsent_limit=V2_UNSENT_LIMIT if self.v2 else None)
        if self.v2 and sum(1 for c in self._conns if not (c.authenticated or c.closed)) >= V2_MAX_UNAUTHENTICATED:
            await conn.close(1013, "Try again later")
            return
        self._conns.append(conn)
        try:
            async with trio.open_nursery() as cn:
                conn.nursery = cn
                cn.start_soon(conn.writer)
                cn.start_soon(self._handshake, conn)
                await self._reader(conn)
                cn.cancel_scope.cancel()
        finally:
            conn.closed = True
            if conn.dropped:
                self.dropped_connections += 1
            if conn in self._conns:
                self._conns.remove(conn)
            for event, _box in conn.pending.values():
                event.set()

    async def _reader(self, conn: _Conn) -> None:
        while True:
            try:
                frame = await conn.ws.get_message()
            except ConnectionClosed:
                return
            if isinstance(frame, bytes):
                frame = frame.decode("utf-8", "replace")
            await self._on_frame(conn, frame)

    async def _on_frame(self, conn: _Conn, text: str) -> None:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):
            await conn.send(self._error_text(None, RpcError.standard(PARSE_ERROR, "Invalid JSON")))
            return
        if isinstance(obj, list):
            err = RpcError.standard(INVALID_REQUEST, "Batch requests are not supported")
            await conn.send(self._error_text(None, err))
            return
        try:
            msg = parse_object(obj)
        except ProtocolError as exc:
            if self.v2 and self._is_request_like(obj):
                # Newer protocol document, "Malformed messages": answered -32600 with the message's
                # id, or null; an invalid response is dropped. (V1 drops both.)
                rid = obj.get("id") if isinstance(obj, dict) else None
                if not isinstance(rid, (str, int)) or isinstance(rid, bool):
                    rid = None
                err = RpcError.standard(INVALID_REQUEST, f"Malformed request ({exc})")
                await conn.send(self._error_text(rid, err))
                return
            log.debug("dropping invalid message: %s", exc)
            return
        if isinstance(msg, Response):
            if isinstance(msg.id, str) and msg.id in conn.pending:
                event, box = conn.pending.pop(msg.id)
                box.append(msg)
                event.set()
            return
        if isinstance(msg, Notification):
            if msg.method == "session.disconnect":
                await conn.close(1000)
                return
            if not conn.authenticated or msg.method not in self._handlers:
                return
            if msg.method in ASYNC_METHODS:
                if self.v2:
                    # Newer protocol document: "A method that must be called with an id, called as
                    # a notification, is neither run nor answered."
                    return
                err = RpcError.standard(INVALID_REQUEST, f"{msg.method} must be called as a request")
                await conn.send(self._error_text(None, err))
                return
            assert conn.nursery is not None
            conn.nursery.start_soon(self._dispatch, conn, msg.method, msg.params, None, False)
            return
        assert isinstance(msg, Request)
        if not conn.authenticated:
            await conn.send(self._error_text(msg.id, RpcError(AUTH_REQUIRED, "Authentication required")))
            return
        assert conn.nursery is not None
        conn.nursery.start_soon(self._dispatch, conn, msg.method, msg.params, msg.id, True)

    @staticmethod
    def _is_request_like(obj: Any) -> bool:
        """Not a response: anything with a `method`, or with neither `result` nor `error`."""
        if not isinstance(obj, dict):
            return True
        return "method" in obj or not ("result" in obj or "error" in obj)

    def _error_text(self, rid: Any, err: RpcError) -> str:
        return dumps({"jsonrpc": "2.0", "id": rid, "error": err.to_json()})

    def _result_text(self, rid: Any, result: Any) -> str:
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if result is not None:  # V1 and V2 both omit a null result
            out["result"] = result
        return dumps(out)

    async def _dispatch(self, conn: _Conn, method: str, params: Any, rid: Any, answer: bool) -> None:
        self.calls.append((method, params if isinstance(params, dict) else {}))
        ctx = _Ctx(conn)
        try:
            delay = self.method_latency_ms.get(method, self.latency_ms)
            if delay:
                await trio.sleep(delay / 1000)
            queued = self._fail_next.get(method)
            if queued:
                raise queued.pop(0)
            handler = self._handlers.get(method)
            if handler is None:
                raise RpcError.standard(METHOD_NOT_FOUND, method)
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise invalid("params must be an object")
            result = await handler(params, ctx)
            text = self._result_text(rid, result)
        except RpcError as err:
            text = self._error_text(rid, err)
        except Exception as exc:  # a bug in the sim: answer like the viewer would
            log.exception("handler for %s failed", method)
            text = self._error_text(rid, RpcError.standard(INTERNAL_ERROR, str(exc)))
        if answer:
            await conn.send(text)
        for action in ctx.after:
            if self._nursery is not None:
                self._nursery.start_soon(action)

    # --- viewer -> client -----------------------------------------------------------------------

    def _next_rpc_id(self) -> str:
        rid = f"rpc_{self._rpc_counter}"
        self._rpc_counter += 1
        return rid

    async def call_client(self, conn: _Conn, method: str, params: Any, timeout: float = 120.0) -> Response:
        """Send a request to one client; a Response (error -32001/-32000 on timeout/close)."""
        rid = self._next_rpc_id()
        event = trio.Event()
        box: list[Response] = []
        conn.pending[rid] = (event, box)
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            out["params"] = params
        await conn.send(dumps(out))
        with trio.move_on_after(timeout):
            await event.wait()
        conn.pending.pop(rid, None)
        if box:
            return box[0]
        if conn.closed:
            return Response(rid, None, RpcError(-32000, "Connection closed unexpectedly"))
        return Response(rid, None, RpcError(-32001, "Request timed out"))

    async def execute_on_clients(self, command: str, params: dict[str, Any] | None = None) -> list[Response]:
        """A viewer-side command.execute (editor.show_message, editor.open_file) on every
        authenticated client that advertised `commands`; their responses."""
        body: dict[str, Any] = {"command": command}
        if params is not None:
            body["params"] = params
        conns = [c for c in self._conns if c.authenticated and not c.closed]
        return [await self.call_client(c, "command.execute", body, timeout=10.0) for c in conns]

    async def _notify(self, conn: _Conn, method: str, params: Any = None) -> None:
        out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            out["params"] = params
        await conn.send(dumps(out))

    async def broadcast(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification to every authenticated connection."""
        self.notifications_sent.append((method, params))
        for conn in list(self._conns):
            if conn.authenticated and not conn.closed:
                await self._notify(conn, method, params)

    async def _handshake(self, conn: _Conn) -> None:
        challenge = str(uuid.uuid4())
        fd, path = tempfile.mkstemp(prefix="sl_script_challenge_", suffix=".tmp", dir=self.tmpdir)
        self.challenge_files.append(path)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, challenge.encode("ascii"))
            os.close(fd)
            params: dict[str, Any] = {
                "server_version": "1.0.0",
                "protocol_version": "1.0",
                "viewer_name": "Second Life Simulated",
                "viewer_version": self.viewer_version_string,
                "challenge": path,
                "languages": ["lsl", "luau"],
                "syntax_id": self.syntax_id,
                "features": dict(SESSION_FEATURES),
            }
            if not self.v2:
                params["agent_id"] = self.world.agent_id
                params["agent_name"] = self.world.agent_name
            response = await self.call_client(
                conn, "session.handshake", params, timeout=self.handshake_timeout
            )
        finally:
            try:
                os.unlink(path)
            except OSError:
                pass
        if conn.closed:
            return
        err = response.error
        if err is not None and err.code == -32001:
            await self._disconnect(conn, 3, "Handshake timed out")
            return
        if err is not None and self.v2:
            await self._disconnect(conn, 2, "Handshake failed")
            return
        result = response.result if isinstance(response.result, dict) else {}
        answer = result.get("challenge_response")
        if err is not None or not isinstance(answer, str) or answer != challenge:
            await self._disconnect(conn, 2, "Invalid challenge response")
            return
        conn.authenticated = True
        if self.v2:
            conn.ws._max_message_size = V2_MESSAGE_LIMIT
            await self._notify(
                conn, "session.ok", {"agent_id": self.world.agent_id, "agent_name": self.world.agent_name}
            )
        else:
            await self._notify(conn, "session.ok")
        if self.v2 and not self._world_deferred_scheduled:
            # Objects the world file publishes with deferred properties get them this long after
            # the first client is in (a viewer publishes only while a client is connected).
            self._world_deferred_scheduled = True
            for obj in self.world.objects.values():
                if obj.published and obj.deferred_properties:
                    self._schedule_properties(obj.object_id)
        if self.client_ping_interval and conn.nursery is not None:
            conn.nursery.start_soon(self._ping_client, conn, self.client_ping_interval)

    async def _ping_client(self, conn: _Conn, interval: float) -> None:
        """Optionally call the client's system.ping now and then, as a viewer may."""
        while not conn.closed:
            await trio.sleep(interval)
            stamp = int(time.time() * 1000)
            self.client_pings.append(await self.call_client(conn, "system.ping", {"timestamp": stamp}, 30.0))

    async def _disconnect(self, conn: _Conn, reason: int, message: str) -> None:
        await self._notify(conn, "session.disconnect", {"reason": reason, "message": message})
        await conn.close(1000)

    def _later(self, ctx: _Ctx, delay: float, fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await trio.sleep(delay)
            await fn()

        ctx.after.append(run)

    # ============================================================================================
    # validation
    # ============================================================================================

    @staticmethod
    def _str(params: dict[str, Any], key: str) -> str | None:
        value = params.get(key)
        return value.lower() if isinstance(value, str) and value else None

    def _published_prim(self, prim_id: str) -> tuple[SimObject, Prim]:
        """Steps 2 and 3 of every validator: the prim exists, its object is published."""
        found = self.world.find_prim(prim_id)
        if found is None:
            raise invalid("Prim not found")
        obj, prim = found
        if not obj.published:
            raise denied("Object is not published")
        return obj, prim

    def _common(
        self, params: dict[str, Any], *, write: bool, read_script: bool = False, property_check: bool = False
    ) -> tuple[SimObject, Prim, Item]:
        """The shared item validator, in the documented order."""
        prim_id, item_id = self._str(params, "prim_id"), self._str(params, "item_id")
        if prim_id is None or item_id is None:
            raise invalid("prim_id and item_id are required")
        if property_check and not any(k in params for k in ("name", "description", "permissions")):
            raise invalid("At least one property (name, description, or permissions) must be specified")
        obj, prim = self._published_prim(prim_id)
        self._check_region(obj)  # step 4 of the newer document's common preconditions
        item = prim.find(item_id)
        if item is None:
            raise invalid("Item not found in prim inventory")
        if item.type not in ("script", "notecard"):
            raise invalid("Item is not a script or notecard")
        if read_script and item.is_script and not (item.permissions.can_copy and item.permissions.can_modify):
            raise denied("Insufficient permissions")
        if write:
            if not item.permissions.can_modify:
                raise denied("Insufficient permissions")
            if not prim.permissions.can_modify:
                raise denied("No modify permission on object")
        return obj, prim, item

    def _script_target(self, params: dict[str, Any]) -> tuple[SimObject, Prim, Item]:
        """set_running / reset: their own validator."""
        prim_id, item_id = self._str(params, "prim_id"), self._str(params, "item_id")
        if prim_id is None or item_id is None:
            raise invalid("prim_id and item_id are required")
        obj, prim = self._published_prim(prim_id)
        item = prim.find(item_id)
        if item is None:
            raise invalid("Script not found in prim inventory")
        if not item.is_script:
            raise invalid("Item is not a script")
        if not item.permissions.can_modify:
            raise denied("No modify permission on script")
        # The newer document's set_running/reset error table lists the region check last, after
        # the permission check (unlike the common validator, where it precedes the item lookup).
        self._check_region(obj)
        return obj, prim, item

    def _check_region(self, obj: SimObject) -> None:
        if self.v2 and not obj.region_connected:
            raise RpcError(SERVICE_UNAVAILABLE, REGION_DOWN)

    # ============================================================================================
    # methods
    # ============================================================================================

    async def _m_ping(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        stamp = params.get("timestamp", 0)
        return {"pong": "pong", "timestamp": stamp, "server_time": _int32(int(time.time() * 1000))}

    async def _m_get_version(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return {"client_name": "Second Life Simulated", "client_version": self.viewer_version_string}

    async def _m_status(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return {"status": "OK"}

    async def _m_list_methods(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return sorted(self._handlers)

    async def _m_syntax_id(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return {"id": self.syntax_id}

    async def _m_syntax(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        kind = params.get("kind")
        if not isinstance(kind, str) or not kind:
            raise invalid("No syntax category specified")
        defs = {"defs.lsl": syntax.LSL_DEFS, "defs.lua": syntax.LUA_DEFS}.get(kind)
        if defs is None:
            raise invalid("Unknown syntax category requested")
        return {"id": self.syntax_id, "defs": defs, "success": True}

    async def _m_syntax_cache(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return {"files": sorted(syntax.CACHE_FILES), "success": True}

    async def _m_syntax_get(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        name = params.get("filename")
        if not isinstance(name, str) or not name:
            raise invalid("No filename specified")
        text = syntax.CACHE_FILES.get(name)
        if text is None:
            raise invalid("Requested syntax cache file not found")
        if params.get("as_json") is True:
            try:
                return {"content": json.loads(text), "success": True}
            except ValueError:
                raise RpcError.standard(
                    INTERNAL_ERROR, "Failed to load and format syntax cache file."
                ) from None
        return {"content": text, "success": True}

    async def _m_subscribe(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        script_id = params.get("script_id")
        return {
            "script_id": script_id if isinstance(script_id, str) else "",
            "success": False,
            "status": 2,
            "message": "No subscription found for script",
        }

    async def _m_unsubscribe(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return None

    async def _m_script_list(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return {"temp_dir": self.tmpdir, "script_ids": [], "success": True}

    async def _m_object_list(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        return {"objects": [self._wire_object(o) for o in self.world.objects.values() if o.published]}

    async def _m_object_request(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        object_id = self._str(params, "object_id")
        if object_id is None:
            raise invalid("No object_id specified")
        obj = self.world.objects.get(object_id)
        if obj is None:
            raise invalid("Object not found")
        if not obj.root.permissions.can_modify:
            raise denied("Permission denied")
        oid = obj.object_id

        async def do_publish() -> None:
            if oid in self.world.objects:
                await self.publish(oid)

        self._later(ctx, self.publish_delay, do_publish)
        return {"success": True}

    async def _m_object_unpublish(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        object_id = self._str(params, "object_id")
        if object_id is None:
            raise invalid("No object_id specified")
        obj = self.world.objects.get(object_id)
        if obj is None or not obj.published:
            raise invalid("Object is not published")
        obj.published = False
        note = {"object_id": obj.object_id, "reason": "manual"}
        if self.v2:
            await self.broadcast("object.unpublish", note)
        else:

            async def after() -> None:
                await self.broadcast("object.unpublish", note)

            ctx.after.append(after)
        return {"success": True, "object_id": obj.object_id}

    async def _m_content_get(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        _obj, prim, item = self._common(params, write=False, read_script=True)
        content = item.content.split("\x00", 1)[0] if item.is_script else item.content
        out: dict[str, Any] = {
            "success": True,
            "prim_id": prim.prim_id,
            "item_id": item.item_id,
            "content": content,
        }
        if self.v2:
            out["encoding"] = "utf-8"
            if item.type == "notecard":
                # Newer document, ObjectContentGetResponse: `embedded_items?: number`, how many
                # inventory items the notecard holds beside its text. (The older one has no field.)
                out["embedded_items"] = item.embedded_items
        return out

    async def _m_content_save(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        obj, prim, item = self._common(params, write=True)
        content = params.get("content")
        if not isinstance(content, str):
            raise invalid("content is required")
        vm = params.get("vm")
        running = params.get("running")
        if self.v2 and item.is_script and vm is not None and vm not in SCRIPT_VMS:
            raise invalid("vm must be 'luau', 'mono', or 'lsl2'")
        if item.type == "notecard":
            if self.v2 and item.embedded_items:
                # Newer document, ObjectContentSave "Notecards with embedded items": refused, as
                # the text alone would be saved without them. Nothing is stored.
                raise denied(EMBEDDED_ITEMS_REFUSED)
            if self.v2 and len(content.encode("utf-8")) > NOTECARD_LIMIT:
                raise invalid(f"Notecard is too large (more than {NOTECARD_LIMIT} bytes)")
            self._store_content(item, content)
            # V1: the older document is silent, and the viewer saved the text alone: the embedded
            # items are lost.
            item.embedded_items = 0
            await self.send_inventory_update(obj, prim)
            return {"success": True, "prim_id": prim.prim_id, "item_id": item.item_id}
        if isinstance(vm, str) and vm in SCRIPT_VMS and item.subtype != SUBTYPE_LUAU:
            item.vm = vm  # a native Luau script always targets luau
        self._store_content(item, content)
        diagnostics = compile_source(item.content, item.language)
        out: dict[str, Any] = {
            "success": True,
            "prim_id": prim.prim_id,
            "item_id": item.item_id,
            "compiled": not diagnostics,
        }
        item_id = item.item_id
        if diagnostics and item.language == "lsl" and self.compile_failure == "stoi":
            # newer-viewers research: "Some viewer builds answer a failed LSL compile with -32603
            # 'Internal error: stoi' instead of diagnostics". The source was stored all the same,
            # and the inventory update follows as for any save.
            self._later(ctx, self.apply_delay, lambda: self._send_item_update(item_id))
            raise RpcError.standard(INTERNAL_ERROR, "stoi")
        if diagnostics and item.language == "lsl" and self.compile_failure == "nul":
            # "... one answered with NUL bytes": a diagnostic of NUL characters, in the shape the
            # viewer gives a compiler line it cannot parse (row 0, column 0).
            message = "\x00" * max(1, len(diagnostics[0]["message"]))
            diagnostics = [{"row": 0, "column": 0, "level": "ERROR", "message": message, "format": "lsl"}]
        if diagnostics:
            out["diagnostics"] = diagnostics
        else:
            item.compiled_content = item.content
            item.faulted = False
            if isinstance(running, bool):
                item.running = running
        restart = not diagnostics and item.running

        async def after() -> None:
            await trio.sleep(self.apply_delay)
            found = self.world.find_item(item_id)
            if found is None:
                return
            await self.send_inventory_update(found[0], found[1])
            if restart:
                await self.run_script(item_id)

        ctx.after.append(after)
        return out

    async def _m_item_create(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        kind = params.get("type")
        if kind not in ("script", "notecard"):
            raise invalid(f"Unsupported item type: {kind if isinstance(kind, str) else ''}")
        prim_id = self._str(params, "prim_id")
        if prim_id is None:
            raise invalid("prim_id is required")
        found = self.world.find_prim(prim_id)
        if found is None:
            raise invalid("Prim not found")
        obj, prim = found
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise invalid("name is required")
        vm = params.get("vm")
        if kind == "script" and vm not in SCRIPT_VMS:
            raise invalid("vm must be 'luau', 'mono', or 'lsl2'")
        if not obj.published:
            raise denied("Object is not published")
        if self.v2:
            # The newer document's error table, in its order: modify on the prim, then the region.
            if not prim.permissions.can_modify:
                raise denied("No modify permission on prim")
            self._check_region(obj)
        if prim.prim_id in self._creating:
            raise RpcError.standard(INVALID_REQUEST, "An item.create is already in flight for this prim")
        self._creating.add(prim.prim_id)
        try:
            await trio.sleep(self.create_delay)
            refusals = self._refuse_create.get(prim.prim_id)
            if refusals:
                reason = refusals.pop(0)
                if self.v2:
                    raise RpcError.standard(INTERNAL_ERROR, f"Item creation failed: {reason}")
                raise RpcError(REQUEST_TIMEOUT, "Timed out waiting for item creation")
            taken = {i.name for i in prim.inventory}
            final = name
            n = 1
            while final in taken:
                final = f"{name} {n}"
                n += 1
            item = Item(
                item_id=str(uuid.uuid4()),
                name=final,
                type=kind,
                permissions=Perms(),
                creator_id=self.world.agent_id,
                revision=self.world.next_revision(),
            )
            if kind == "script":
                item.vm = vm
                item.subtype = SUBTYPE_LUAU if vm == "luau" else SUBTYPE_LSL
                item.content = DEFAULT_LUAU if vm == "luau" else DEFAULT_LSL
                item.compiled_content = item.content
                item.running = True
            else:
                text = params.get("text")
                item.content = cut_bytes(text, NOTECARD_LIMIT) if isinstance(text, str) else ""
            prim.inventory.append(item)
        finally:
            self._creating.discard(prim.prim_id)
        await self.send_inventory_update(obj, prim)
        out = item.to_wire(revision=self.v2)
        if not self.v2:  # older viewers answer without the run state and revision
            for key in ("running", "faulted", "revision"):
                out.pop(key, None)
        out["prim_id"] = prim.prim_id
        return out

    async def _m_item_delete(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        obj, prim, item = self._common(params, write=True)
        prim.inventory.remove(item)
        await self.send_inventory_update(obj, prim)  # before the response, as viewers do
        return {"success": True, "prim_id": prim.prim_id, "item_id": item.item_id}

    async def _m_item_modify(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        _obj, prim, item = self._common(params, write=True, property_check=True)
        name = params.get("name")
        description = params.get("description")
        perms = params.get("permissions")
        item_id = item.item_id

        async def apply() -> None:
            found = self.world.find_item(item_id)
            if found is None:
                return
            o, p, it = found
            changed = any(_apply_properties(it, name, description))
            if isinstance(perms, dict) and isinstance(perms.get("next_owner"), int):
                it.permissions.next_owner = perms["next_owner"]
                changed = True
            if changed:
                await self.send_inventory_update(o, p)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True, "prim_id": prim.prim_id, "item_id": item.item_id}

    async def _m_object_modify(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        prim_id = self._str(params, "prim_id")
        if prim_id is None:
            raise invalid("prim_id is required")
        if not any(k in params for k in ("name", "description", "permissions")):
            raise invalid("At least one property (name, description, or permissions) must be specified")
        obj, prim = self._published_prim(prim_id)
        if not prim.permissions.can_modify:
            raise denied("No modify permission on object")
        name = params.get("name")
        description = params.get("description")
        perms = params.get("permissions")

        async def apply() -> None:
            name_changed, desc_changed = _apply_properties(prim, name, description)
            if isinstance(perms, dict) and isinstance(perms.get("next_owner"), int):
                prim.permissions.next_owner = perms["next_owner"]  # no update shape carries this
            await self.send_name_update(obj, prim, name=name_changed, description=desc_changed)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True, "prim_id": prim.prim_id}

    async def _m_set_running(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        _obj, _prim, item = self._script_target(params)
        running = params.get("running") is True  # missing means stop
        item_id = item.item_id

        async def apply() -> None:
            found = self.world.find_item(item_id)
            if found is None:
                return
            o, p, it = found
            if it.running != running or not self.v2:
                it.running = running
                await self.send_inventory_update(o, p)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True}

    async def _m_reset(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        _obj, _prim, item = self._script_target(params)
        item_id = item.item_id

        async def apply() -> None:
            found = self.world.find_item(item_id)
            if found is None:
                return
            o, p, it = found
            if it.faulted:
                it.faulted = False
                await self.send_inventory_update(o, p)
            await self.run_script(item_id)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True}

    async def _m_command_list(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        oid = {"type": "string", "required": True, "description": "UUID of the in-world object"}
        return {
            "commands": [
                {
                    "command": "viewer.camera.focus",
                    "description": "Zoom camera to an in-world object.",
                    "params": {"object_id": oid},
                },
                {
                    "command": "viewer.object.save_back_to_contents",
                    "description": "Save an in-world object back to source object contents.",
                    "params": {"object_id": oid},
                },
                {
                    "command": "viewer.script.recompile_all",
                    "description": "Recompile all scripts in an in-world object using the selected target.",
                    "params": {
                        "object_id": oid,
                        "target": {
                            "type": "string",
                            "required": True,
                            "description": "luau, lsl2, mono or auto",
                        },
                    },
                },
                {
                    "command": "viewer.script.reset_all",
                    "description": "Reset all scripts in an in-world object.",
                    "params": {"object_id": oid},
                },
                {
                    "command": "viewer.teleport",
                    "description": "Teleport agent to an in-world object.",
                    "params": {"object_id": oid},
                },
            ]
        }

    async def _m_command_execute(self, params: dict[str, Any], ctx: _Ctx) -> Any:
        command = params.get("command")
        if not isinstance(command, str) or not command:
            raise invalid("command is required")
        known = (
            "viewer.teleport",
            "viewer.camera.focus",
            "viewer.object.save_back_to_contents",
            "viewer.script.reset_all",
            "viewer.script.recompile_all",
        )
        if command not in known:
            raise invalid(f"Unknown command: {command}")
        args = params.get("params")
        args = args if isinstance(args, dict) else {}
        object_id = self._str(args, "object_id")
        if object_id is None:
            raise invalid("object_id is required")
        found = self.world.find_prim(object_id)
        # Newer document, known viewer commands: "an in-world object in a published linkset. Any
        # other object is refused with -32003" (no message given; this one is chosen here).
        outside = found is None or not found[0].published
        if self.v2 and command in ("viewer.teleport", "viewer.camera.focus") and outside:
            raise denied("Object is not in a published linkset")
        if found is None:
            raise invalid("Object not found")
        obj = found[0]
        if command == "viewer.script.recompile_all":
            target = args.get("target")
            if target not in RECOMPILE_TARGETS:
                raise invalid("target must be 'luau', 'lsl2', 'mono', or 'auto'")
            if not obj.root.permissions.can_modify:
                raise denied("Permission denied")
            oid = obj.object_id

            async def recompile() -> None:
                await trio.sleep(self.apply_delay)
                for prim in obj.prims():
                    touched = False
                    for it in prim.inventory:
                        if not it.is_script or not it.permissions.can_modify:
                            continue
                        if target == "luau":
                            it.vm = "luau"
                        elif target in ("lsl2", "mono") and it.subtype != SUBTYPE_LUAU:
                            it.vm = target
                        if not compile_source(it.content, it.language):
                            it.compiled_content = it.content
                            it.faulted = False
                            it.running = True
                        it.revision = self.world.next_revision()
                        touched = True
                    if touched and oid in self.world.objects:
                        await self.send_inventory_update(obj, prim)

            ctx.after.append(recompile)
            return {"success": True}
        if command == "viewer.script.reset_all":
            if not obj.root.permissions.can_modify:
                raise denied("Permission denied")

            async def reset_all() -> None:
                await trio.sleep(self.apply_delay)
                for prim in obj.prims():
                    for it in prim.inventory:
                        if it.is_script and it.running:
                            await self.run_script(it.item_id)

            ctx.after.append(reset_all)
            return {"success": True}
        if command == "viewer.object.save_back_to_contents":
            if not obj.root.permissions.can_modify:
                raise denied("Permission denied")
            return {"success": True, "result": {"object_id": obj.object_id}}
        return {"success": True}


DEFAULT_LSL = """default
{
    state_entry()
    {
        llSay(0, "Hello, Avatar!");
    }

    touch_start(integer total_number)
    {
        llSay(0, "Touched.");
    }
}
"""

DEFAULT_LUAU = """-- New Luau script
ll.Say(0, "Hello, Avatar!")

function touch_start(total_number)
    ll.Say(0, "Touched.")
end
"""
