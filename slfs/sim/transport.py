"""The simulated viewer's transport: connections, framing, limits, the handshake, and sync points.

`Transport` is a mixin of `SimViewer` (server.py). It owns:

* the listener (127.0.0.1 only, an `Origin` header refused, the V2 connection limits) and one
  `Connection` per client: its outgoing queue and writer task, the V2 unsent limit, closes;
* JSON-RPC framing: parsing each frame, answering malformed ones, routing responses to the sim's own
  requests, and dispatching client calls to the method table (`_handlers`, which server.py fills
  from methods.py) with `latency_ms` / `method_latency_ms`, `fail_next` and a per-call context;
* the operation log (`calls`, `notifications_sent`).

What the sim sends on its own (requests, notifications, `broadcast`) and the sync points (`sync()`,
`idle()`, `quiesce()`) are sync_points.py's.

One client connection is connection.py's, the handshake handshake.py's; the methods themselves are
in methods.py and commands.py, the world-editing API in world_control.py.
"""

from __future__ import annotations

import collections
import json
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket

from slfs.protocol.jsonrpc import Notification, Request, Response, parse_object
from slfs.protocol.rpc_errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ProtocolError,
    RpcError,
)

from .connection import CallContext, Connection, Handler, invalid
from .generation import DOC_ASYNC_METHODS, Generation
from .sync_points import SyncPoints
from .world import World
from .world_control import dumps

log = logging.getLogger(__name__)

V2_PREAUTH_LIMIT = 64 * 1024
V1_MESSAGE_LIMIT = 256 * 1024 * 1024
V2_MAX_UNAUTHENTICATED = 4
# Newer protocol document, Usage Flow 1: "The viewer takes 32 connections at most, and closes any
# more unanswered"; "A client that stops reading is dropped once 32 MB of messages wait unsent to
# it, and a close the viewer starts drops the connection if it has not completed within 5 seconds".
V2_MAX_CONNECTIONS = 32
V2_UNSENT_LIMIT = 32 * 1024 * 1024
SESSION_FEATURES = {
    "live_sync": True,  # live_sync.py; both documents list the flag, the viewer sets it
    "compilation": True,
    "syntax_cache": True,
    "commands": True,
    "unified_diagnostics": True,
}
# Methods the documents' viewer handles asynchronously; calling them as a notification is an
# Invalid Request (V1/V2; the generations have their own lists, generation.py).
ASYNC_METHODS = set(DOC_ASYNC_METHODS)


class Transport(SyncPoints):
    """The transport half of SimViewer; the attributes annotated below are SimViewer's."""

    world: World
    viewer_version_string: str
    syntax_id: str
    latency_ms: float
    method_latency_ms: dict[str, float]
    handshake_timeout: float | None
    tmpdir: str
    profile: Generation
    viewer_path: Callable[[str], str]
    client_ping_interval: float | None
    _handlers: dict[str, Handler]

    @property
    def v2(self) -> bool:
        raise NotImplementedError

    # WorldControl's: called after each session.ok has been sent (annotation only, no stub)
    _on_session_ok: Callable[[], None]
    # LiveSync's: a connection has closed (its subscriptions end)
    _on_connection_closed: Callable[[Connection], None]
    # Handshake's (handshake.py): run on each new connection before any other frame is served
    _handshake: Callable[[Connection], Coroutine[Any, Any, None]]

    def _init_transport(self) -> None:
        self.port: int | None = None
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.notifications_sent: list[tuple[str, dict[str, Any]]] = []
        self.challenge_files: list[str] = []  # every challenge file written (all deleted by now)
        self.dropped_connections = 0  # connections dropped for not reading (V2)
        self.client_pings: list[Response] = []  # answers to the sim's own periodic system.ping calls
        self.client_handshakes: list[dict[str, Any]] = []  # what each client answered session.handshake
        self._conns: list[Connection] = []
        self._conn_counter = 0
        self._rpc_counter = 1000
        self._fail_next: dict[str, list[RpcError]] = {}
        self._nursery: trio.Nursery | None = None
        self._listen_scope: trio.CancelScope | None = None
        # What idle() waits for: calls being dispatched and deferred actions, by label.
        self._busy: collections.Counter[str] = collections.Counter()
        self._quiet = trio.Event()
        self._quiet.set()

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

    async def send_raw(self, frame: str | bytes) -> int:
        """Tests of a client against a hostile viewer: send `frame` exactly as given (a str as a
        text frame, bytes as a binary frame; nothing checked, nothing recorded) to every
        authenticated connection, in order with the sim's other frames. Returns how many got it."""
        conns = [c for c in self._conns if c.authenticated and not c.closed]
        for conn in conns:
            await conn.send(frame)
        return len(conns)

    async def _handle(self, request: WebSocketRequest) -> None:
        if self.v2 and sum(1 for c in self._conns if not c.closed) >= V2_MAX_CONNECTIONS:
            return  # "closes any more unanswered": trio-websocket closes the socket, no HTTP answer
        if any(k.lower() == b"origin" for k, _ in request.headers):
            await request.reject(403)
            return
        ws = await request.accept()
        self._conn_counter += 1
        conn = Connection(ws, self._conn_counter, unsent_limit=V2_UNSENT_LIMIT if self.v2 else None)
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
            self._on_connection_closed(conn)
            if conn.dropped:
                self.dropped_connections += 1
            if conn in self._conns:
                self._conns.remove(conn)
            for event, _box in conn.pending.values():
                event.set()

    # ============================================================================================
    # framing and dispatch
    # ============================================================================================

    async def _reader(self, conn: Connection) -> None:
        while True:
            try:
                frame = await conn.ws.get_message()
            except ConnectionClosed:
                return
            if isinstance(frame, bytes):
                frame = frame.decode("utf-8", "replace")
            await self._on_frame(conn, frame)

    async def _on_frame(self, conn: Connection, text: str) -> None:
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError, MemoryError):
            await conn.send(self._error_text(None, RpcError.standard(PARSE_ERROR, "Invalid JSON")))
            return
        if isinstance(obj, list):
            if self.profile.batches == "each":
                # viewer-source.md §5: "G1 accepts batches: each element is processed separately
                # (no array answer); an empty array gets -32600 'Invalid Request: Empty batch'".
                if not obj:
                    await conn.send(self._error_text(None, RpcError.standard(INVALID_REQUEST, "Empty batch")))
                for element in obj:
                    await self._on_message(conn, element)
                return
            err = RpcError.standard(INVALID_REQUEST, "Batch requests are not supported")
            await conn.send(self._error_text(None, err))
            return
        await self._on_message(conn, obj)

    def _gated(self, conn: Connection) -> bool:
        """Whether calls of this connection are refused for now: not authenticated, and the viewer
        has an auth gate (G1/G2 have none: viewer-source.md §6, "requests served and explorer
        notifications sent before session.ok")."""
        return self.profile.auth_gate and not conn.authenticated

    def _is_async(self, method: str) -> bool:
        sync = self.profile.sync_methods
        return method in ASYNC_METHODS if sync is None else method not in sync

    async def _on_message(self, conn: Connection, obj: Any) -> None:
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
            if self._gated(conn) or msg.method not in self._handlers:
                return
            if self._is_async(msg.method):
                if self.profile.async_notification == "drop":
                    # Newer protocol document: "A method that must be called with an id, called as
                    # a notification, is neither run nor answered."
                    return
                if self.profile.is_generation:
                    # viewer-source.md §2 "Dispatch": each generation's list of async methods
                    detail = f"Method {msg.method} cannot be called as a notification"
                else:
                    detail = f"{msg.method} must be called as a request"
                await conn.send(self._error_text(None, RpcError.standard(INVALID_REQUEST, detail)))
                return
            self._start_dispatch(conn, msg.method, msg.params, None, False)
            return
        assert isinstance(msg, Request)
        if self._gated(conn):
            await conn.send(self._error_text(msg.id, RpcError(AUTH_REQUIRED, "Authentication required")))
            return
        self._start_dispatch(conn, msg.method, msg.params, msg.id, True)

    def _start_dispatch(self, conn: Connection, method: str, params: Any, rid: Any, answer: bool) -> None:
        """Record the call and start handling it, before the next frame of the connection is read
        (what sync() relies on: a call is in `calls` and counted busy once its frame is read)."""
        assert conn.nursery is not None
        self.calls.append((method, params if isinstance(params, dict) else {}))
        conn.nursery.start_soon(self._dispatch, conn, method, params, rid, answer)
        self._busy_begin(method)  # the task cannot run before this returns

    @staticmethod
    def _is_request_like(obj: Any) -> bool:
        """Not a response: anything with a `method`, or with neither `result` nor `error`."""
        if not isinstance(obj, dict):
            return True
        return "method" in obj or not ("result" in obj or "error" in obj)

    def internal_error(self, detail: str) -> RpcError:
        """-32603 for a C++ exception: "Internal error: <what>" (G1/G2 and the documents' viewers
        append the exception text), plain "Internal error" in G3 (viewer-source.md §3: "G3's
        JSON-RPC layer hides details")."""
        if self.profile.internal_error_detail:
            return RpcError.standard(INTERNAL_ERROR, detail)
        return RpcError(INTERNAL_ERROR, "Internal error")

    def _error_text(self, rid: Any, err: RpcError) -> str:
        return dumps({"jsonrpc": "2.0", "id": rid, "error": err.to_json()})

    def _result_text(self, rid: Any, result: Any) -> str:
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
        if result is not None:  # V1 and V2 both omit a null result
            out["result"] = result
        return dumps(out)

    async def _dispatch(self, conn: Connection, method: str, params: Any, rid: Any, answer: bool) -> None:
        """Handle one call (already recorded and counted busy by _start_dispatch)."""
        try:
            ctx = CallContext(conn)
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
                text = self._error_text(rid, self.internal_error(str(exc)))
            if answer:
                await conn.send(text)
            for action in ctx.after:
                self._spawn_deferred(action, f"after {method}")
        finally:
            self._busy_end(method)
