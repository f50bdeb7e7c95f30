"""The WebSocket session with the viewer: connect, authenticate, serve, call, reconnect.

One connection at a time. Per connection there is one reader task that never awaits a handler:
responses wake their callers, notifications go to the (synchronous) listener in arrival order, and
requests from the viewer are answered by tasks spawned in the connection's nursery. The one
exception is a large object.list answer: it is decoded off the trio thread and applied through the
listener's optional `load_objects` in steps, and the reader reads the next frame after that. Frames are sent
under one lock so they never interleave. When the link drops every pending call fails with
NotConnected, the listener hears about it, and run() reconnects with capped, jittered backoff.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs
import trio
from trio_websocket import (
    ConnectionClosed,
    ConnectionTimeout,
    HandshakeError,
    WebSocketConnection,
)

from slfs.backoff import Backoff
from slfs.protocol import codec
from slfs.protocol.errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ProtocolError,
    RpcError,
)
from slfs.protocol.gcpause import paused_gc
from slfs.protocol.jsonrpc import (
    Message,
    Notification,
    Request,
    Response,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
    parse_message,
    parse_message_steps,
)
from slfs.protocol.text import one_line
from slfs.protocol.types import (
    DISCONNECT_EDITOR_CLOSED,
    CompilationResult,
    ObjectListResponse,
    ObjectPublish,
    ObjectUnpublish,
    ObjectUpdate,
    RuntimeDebug,
    RuntimeError_,
    ScriptUnsubscribe,
    SessionDisconnect,
    SessionHandshake,
    SessionOk,
    SyntaxChange,
    SystemPing,
)
from slfs.stats import Stats
from slfs.winpaths import PathTranslator

from . import challenge as _challenge
from . import peer
from .commands import command_list, validate_command
from .errors import CallTimeout, MessageTooLarge, NotConnected
from .ids import IdAllocator
from .listener import SessionInfo, SessionListener
from .opening import PeerRefused, open_checked_websocket

log = logging.getLogger(__name__)

T = TypeVar("T")

CLIENT_NAME = "slfs"
CLIENT_VERSION = "1.0"
PROTOCOL_VERSION = "1.0"

# Our timeouts sit above the viewer's own (content.save allows 60 s for a script upload).
DEFAULT_TIMEOUT = 30.0
METHOD_TIMEOUTS: dict[str, float] = {
    "object.content.get": 40.0,
    "object.item.create": 40.0,
    "object.content.save": 70.0,
}

MAX_MESSAGE_SIZE = 64 * 1024 * 1024  # the viewer sends at most 16 MiB
# What the viewer takes from us: 64 KB before authentication, 16 MB after; larger closes with 1009
# (newer protocol document, "Usage Flow"). We refuse such a message locally instead.
PREAUTH_SEND_LIMIT = 64 * 1024
SEND_LIMIT = 16 * 1024 * 1024
CLOSE_TOO_BIG = 1009
# An object.list answer from this many objects on is decoded off the trio thread and applied in steps.
BIG_LIST = 50
# Bytes read from the socket at a time (trio_websocket's default is 4 KiB: a 20 MB object.list
# answer took 5,000 reads through wsproto).
RECEIVE_BUFFER = 256 * 1024
# How long after connect_timeout the session ends an opening trio-websocket did not end (see
# ViewerSession._connect_once).
OPENING_GRACE = 1.0
CLOSE_TRY_AGAIN = 1013
# The other end of the connection is not in /proc/net/tcp (peer.check_connection): in WSL2
# (-o windows_paths=wsl) the viewer listens on the Windows side; otherwise another host.
RELYING = "; relying on the challenge"
WINDOWS_SIDE = "the viewer's listener is on the Windows side" + RELYING
PEER_UNSEEN = "the viewer's end of the connection is not in /proc/net/tcp" + RELYING
# Frames from this size on are parsed in steps (see _Connection.handle_big_frame).
STEPPED_FRAME = 1 << 20

CONNECTING = "connecting"
CONNECTED = "connected"
DISCONNECTED = "disconnected"

_CLOSED_ERRORS = (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError)


def _is_cancellation(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_cancellation(e) for e in exc.exceptions)
    return isinstance(exc, trio.Cancelled)


def now_ms() -> int:
    return int(time.time() * 1000)


def timeout_for(method: str) -> float:
    return METHOD_TIMEOUTS.get(method, DEFAULT_TIMEOUT)


def _object_count(result: Any) -> int:
    """How many objects an object.list result holds, before decoding (0 when it is not the shape)."""
    objects = result.get("objects") if isinstance(result, dict) else None
    return len(objects) if isinstance(objects, list) else 0


@attrs.define
class _Pending:
    method: str
    event: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: RpcError | None = None
    # Run by the reader when the response arrives, before any later frame is handled; when it
    # returns an awaitable, the reader awaits it first (the call's timeout no longer runs).
    on_response: Callable[[Response], Awaitable[None] | None] | None = None
    arrived: bool = False  # the answer came; on_response may still be running


class _Connection:
    """One WebSocket connection to the viewer and everything that lives and dies with it."""

    def __init__(self, session: ViewerSession, ws: WebSocketConnection, nursery: trio.Nursery) -> None:
        self.session = session
        self.ws = ws
        self.nursery = nursery
        self.pending: dict[int, _Pending] = {}
        self.send_lock = trio.Lock()
        self.closed = False
        self.close_reason = ""
        self.disconnect_note = ""  # what a session.disconnect notification said
        self.handshake: SessionHandshake | None = None
        self.session_ok = False  # session.ok received
        self.refused = ""  # why we refused the peer's handshake: the connection then ends
        self.last_sent_size = 0  # for the log when the viewer closes with 1009
        self.ready = False  # object.list answered and on_connected delivered
        self.listener_note = ""  # WINDOWS_SIDE or PEER_UNSEEN: the other end could not be checked

    # --- teardown -------------------------------------------------------------------------------

    def abort(self, reason: str) -> None:
        """Tear the connection down (sync; safe from anywhere)."""
        if not self.close_reason:
            self.close_reason = reason
        self.nursery.cancel_scope.cancel()

    def fail_pending(self, reason: str) -> None:
        self.closed = True
        pending, self.pending = self.pending, {}
        for waiter in pending.values():
            if not waiter.event.is_set():
                waiter.error = NotConnected(f"Connection closed: {reason}")
                waiter.event.set()

    # --- sending --------------------------------------------------------------------------------

    async def send(self, text: str, what: str = "a message") -> None:
        size = len(text.encode("utf-8"))
        limit = SEND_LIMIT if self.session_ok else PREAUTH_SEND_LIMIT
        if size > limit:
            raise MessageTooLarge(what, size, limit)
        async with self.send_lock:
            self.last_sent_size = size
            await self.ws.send_message(text)

    async def notify(self, method: str, params: codec.RequestParams = None) -> None:
        await self.send(encode_notification(method, codec.encode_params(params)))

    async def call(
        self,
        method: str,
        params: codec.RequestParams = None,
        timeout: float | None = None,
        on_response: Callable[[Response], Awaitable[None] | None] | None = None,
    ) -> Any:
        if self.closed:
            raise NotConnected(f"Connection closed: {self.close_reason or 'closed'}")
        if timeout is None:
            timeout = timeout_for(method)
        rid = self.session._ids.allocate(self.pending)
        waiter = _Pending(method, on_response=on_response)
        self.pending[rid] = waiter
        start = time.perf_counter_ns()
        try:
            with trio.move_on_after(timeout) as scope:
                try:
                    await self.send(encode_request(rid, method, codec.encode_params(params)), method)
                except _CLOSED_ERRORS:
                    raise NotConnected(f"Connection closed while sending {method}") from None
                log.debug("call %s id=%s sent", method, rid)
                await waiter.event.wait()
            if scope.cancelled_caught and waiter.arrived and not waiter.event.is_set():
                await waiter.event.wait()  # answered in time, still being handled (a large object.list)
            if scope.cancelled_caught and not waiter.event.is_set():
                log.warning("call %s id=%s timed out after %g s", method, rid, timeout)
                raise CallTimeout(method, timeout)
        finally:
            if self.pending.get(rid) is waiter:
                del self.pending[rid]
            # `slfs stats`: send to answer handled (on_response included), by method.
            self.session.stats.rpc_done(method, time.perf_counter_ns() - start,
                                        waiter.error is not None or not waiter.event.is_set())
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    # --- reading --------------------------------------------------------------------------------

    async def read_loop(self) -> None:
        """Read frames until the connection closes; sets close_reason."""
        while True:
            try:
                frame = await self.ws.get_message()
            except ConnectionClosed as exc:
                code = exc.reason.code if exc.reason is not None else None
                text = (exc.reason.reason or "") if exc.reason is not None else ""
                reason = f"viewer closed the connection (code {code}{': ' + text if text else ''})"
                if code == CLOSE_TOO_BIG:
                    log.warning("viewer closed the connection as a message was too big (1009); the last "
                                "message we sent was %d bytes", self.last_sent_size)
                elif code == CLOSE_TRY_AGAIN:
                    reason = "viewer is busy with other connections (code 1013: Try Again Later); backing off"
                if self.disconnect_note:
                    reason = f"{self.disconnect_note}; {reason}"
                if not self.close_reason:
                    self.close_reason = reason
                return
            try:
                handling = self.handle_frame(frame)
                if handling is not None:  # the next frame waits: arrival order is kept
                    await handling
            except Exception:  # a bug below us must not kill the reader
                log.exception("failed to handle a frame from the viewer: %.200r", frame)

    @staticmethod
    def parse_frame(frame: str | bytes) -> Message | None:
        """The frame's message; None (logged) for a frame that is not one."""
        if isinstance(frame, bytes):
            try:
                frame = frame.decode("utf-8")
            except UnicodeDecodeError:
                log.warning("ignoring a binary frame that is not UTF-8 (%d bytes)", len(frame))
                return None
        try:
            return parse_message(frame)
        except ProtocolError as exc:
            log.warning("ignoring an invalid frame from the viewer: %s: %.200r", exc, frame)
            return None

    def handle_frame(self, frame: str | bytes) -> Awaitable[None] | None:
        """Handle one frame; an awaitable when its handling goes on (the reader awaits it)."""
        if len(frame) >= STEPPED_FRAME:
            return self.handle_big_frame(frame)
        msg = self.parse_frame(frame)
        return self.handle_message(msg) if msg is not None else None

    async def handle_big_frame(self, frame: str | bytes) -> None:
        """A large frame (an object.list answer) is parsed in steps with checkpoints between them, so
        the mount goes on answering, and handled with the cycle collector paused throughout: what
        the parse makes is freed (by reference counting) before a collection could walk it, and
        what the handling keeps (the tree) is frozen out of the collector's reach (see gcpause)."""
        with paused_gc(freeze=True):
            if isinstance(frame, bytes):
                try:
                    frame = frame.decode("utf-8")
                except UnicodeDecodeError:
                    log.warning("ignoring a binary frame that is not UTF-8 (%d bytes)", len(frame))
                    return
            steps = parse_message_steps(frame)
            try:
                while True:
                    next(steps)
                    await trio.sleep(0)
            except StopIteration as done:
                msg: Message = done.value
            except ProtocolError as exc:
                log.warning("ignoring an invalid frame from the viewer: %s: %.200r", exc, frame)
                return
            del steps, frame
            handling = self.handle_message(msg)
            del msg
            if handling is not None:
                await handling

    def handle_message(self, msg: Message) -> Awaitable[None] | None:
        if isinstance(msg, Response):
            return self.handle_response(msg)
        elif isinstance(msg, Request):
            self.nursery.start_soon(self.serve_request, msg)
        else:
            self.session._handle_notification(self, msg)
        return None

    def handle_response(self, msg: Response) -> Awaitable[None] | None:
        waiter = self.pending.pop(msg.id, None) if isinstance(msg.id, int) else None
        if waiter is None:
            if msg.error is not None:
                log.warning("viewer sent an error for unknown id %r: %s", msg.id, msg.error)
            else:
                log.warning("ignoring a response with unknown id %r", msg.id)
            return None
        waiter.arrived = True
        if msg.error is not None:
            log.debug("call %s id=%r failed: %s", waiter.method, msg.id, msg.error)
            waiter.error = msg.error
        else:
            waiter.result = msg.result
        if waiter.on_response is not None:
            try:
                handling = waiter.on_response(msg)
            except Exception:
                log.exception("handling the response to %s failed", waiter.method)
            else:
                if handling is not None:
                    return self._finish_response(waiter, handling)
        waiter.event.set()
        return None

    async def _finish_response(self, waiter: _Pending, handling: Awaitable[None]) -> None:
        try:
            await handling
        except Exception:
            log.exception("handling the response to %s failed", waiter.method)
        finally:
            waiter.event.set()

    # --- serving the viewer's calls -----------------------------------------------------------------

    async def serve_request(self, req: Request) -> None:
        handler = self.session._methods.get(req.method)
        try:
            if handler is None:
                raise RpcError.standard(METHOD_NOT_FOUND, req.method)
            result = await handler(self, req.params)
            reply = encode_result(req.id, result)
        except RpcError as err:
            log.info("answering %s id=%r with error %s", req.method, req.id, err)
            reply = encode_error(req.id, err)
        except Exception as exc:
            log.exception("handler for %s failed", req.method)
            reply = encode_error(req.id, RpcError.standard(INTERNAL_ERROR, str(exc) or type(exc).__name__))
        try:
            try:
                await self.send(reply, f"the answer to {req.method}")
            except MessageTooLarge as exc:
                log.error("%s", exc.message)
                await self.send(encode_error(req.id, RpcError.standard(INTERNAL_ERROR, exc.message)))
        except _CLOSED_ERRORS:
            log.info("could not answer %s id=%r: connection closed", req.method, req.id)
        if self.refused:
            # Whatever the peer says next (even session.ok), this connection is over; run() backs off.
            self.abort(f"refused the viewer's handshake: {self.refused}")


Handler = Callable[[_Connection, Any], Awaitable[Any]]


class ViewerSession:
    """The client side of the viewer's external-editor WebSocket."""

    def __init__(
        self,
        listener: SessionListener,
        host: str = "127.0.0.1",
        port: int = 9020,
        *,
        ping_interval: float = 30.0,
        backoff_min: float = 0.5,
        backoff_max: float = 10.0,
        live_sync: bool = False,
        ping_timeout: float = 10.0,
        handshake_timeout: float = 45.0,
        connect_timeout: float = 10.0,
        paths: PathTranslator | None = None,
        stats: Stats | None = None,
    ) -> None:
        self.listener = listener
        self.stats = stats or Stats()  # the mount's (`slfs stats`): calls by method
        # The viewer's local paths (the challenge) as ours: Wine, WSL2 (slfs/winpaths.py).
        self.paths = paths or PathTranslator()
        self.host = host
        self.port = port
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.backoff_min = backoff_min
        self.backoff_max = backoff_max
        self.live_sync = live_sync
        self.handshake_timeout = handshake_timeout
        self.connect_timeout = connect_timeout
        self.state = DISCONNECTED
        self.state_detail = "not started"
        self.info: SessionInfo | None = None
        self.last_error = ""
        self._ids = IdAllocator()
        self._ignored_fields: set[tuple[str, str]] = set()  # (method, field) already logged
        self._conn: _Connection | None = None
        self._state_changed = trio.Event()
        self._methods: dict[str, Handler] = {
            "session.handshake": self._serve_handshake,
            "system.ping": self._serve_ping,
            "system.getVersion": self._serve_version,
            "system.status": self._serve_status,
            "system.listMethods": self._serve_list_methods,
            "command.list": self._serve_command_list,
            "command.execute": self._serve_command_execute,
        }

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 address
        return f"ws://{host}:{self.port}/"

    # --- public API -----------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Connect, serve and reconnect until cancelled."""
        task_status.started()
        backoff = Backoff(self.backoff_min, self.backoff_max)
        try:
            while True:
                if self.state != CONNECTING:
                    self._set_state(CONNECTING, f"connecting to {self.url}")
                reached_ok = await self._connect_once()
                if reached_ok:
                    backoff.reset()
                delay = backoff.delay()
                log.debug("reconnecting to %s in %.2f s", self.url, delay)
                await trio.sleep(delay)
        finally:
            if self.info is not None:
                self.info = None
                self._listen("on_disconnected", "session stopped")
            self._set_state(DISCONNECTED, "session stopped")

    async def call(
        self, method: str, params: codec.RequestParams = None, *, timeout: float | None = None
    ) -> Any:
        """Call a viewer method and return its raw result (None when the viewer omitted it).

        `params` is a params object of protocol.types (sent as codec.to_json encodes it) or a dict.

        Raises RpcError for the viewer's error, NotConnected at once when not connected (and when the
        link drops while the call is pending), CallTimeout when no answer came in time."""
        conn = self._conn
        if self.state != CONNECTED or conn is None or not conn.ready or conn.closed:
            raise NotConnected(f"{self.state}: {self.state_detail}")  # callers say "not connected to the viewer"
        return await conn.call(method, params, timeout)

    async def call_typed(
        self,
        method: str,
        params: codec.RequestParams,
        result_type: type[T],
        *,
        timeout: float | None = None,
    ) -> T:
        """call(), with the result parsed into `result_type`; a malformed result raises RpcError -32603."""
        result = await self.call(method, params, timeout=timeout)
        try:
            return self.decode(result_type, result, f"{method} result")
        except ProtocolError as exc:
            log.warning("malformed result of %s: %s", method, exc)
            raise RpcError.standard(INTERNAL_ERROR, f"malformed result of {method}: {exc}") from None

    @property
    def ready(self) -> bool:
        """A call can be sent now (the state may still say connected for a connection just closed)."""
        conn = self._conn
        return self.state == CONNECTED and conn is not None and conn.ready and not conn.closed

    async def wait_ready(self) -> None:
        """Wait until a call can be sent (use under a timeout)."""
        while not self.ready:
            await self._state_changed.wait()

    async def wait_state(self, state: str, timeout: float | None = None) -> None:
        """Wait until the session is in `state` (raises trio.TooSlowError after `timeout`)."""
        with trio.fail_after(timeout if timeout is not None else float("inf")):
            while self.state != state:
                await self._state_changed.wait()

    async def wait_connected(self, timeout: float | None = None) -> SessionInfo:
        """Wait for a ready session and return its info (raises trio.TooSlowError after `timeout`)."""
        await self.wait_state(CONNECTED, timeout)
        assert self.info is not None
        return self.info

    def decode(self, cls: type[T], data: Any, what: str) -> T:
        """Decode a payload; an optional field of an unexpected type is logged once per `what` and
        field for the life of the session, then ignored (see protocol.codec)."""

        def ignored(field: str, problem: str) -> None:
            key = (what, field)
            if key in self._ignored_fields:
                return
            self._ignored_fields.add(key)
            if problem == codec.UNKNOWN_FIELD:
                log.info("viewer sent %s with field %s, which slfs does not know; kept, not used "
                         "(logged once)", what, field)
            else:
                log.warning("viewer sent %s with field %s of an unexpected type (%s); ignoring it "
                            "(logged once)", what, field, problem)

        return codec.from_json(cls, data, on_ignored=ignored)

    # --- state ----------------------------------------------------------------------------------

    def _set_state(self, state: str, detail: str) -> None:
        changed = (state, detail) != (self.state, self.state_detail)
        self.state = state
        self.state_detail = detail
        if state == DISCONNECTED:
            self.last_error = detail
        if changed:
            log.info("session %s: %s", state, detail)
            self._listen("on_state", state, detail)
        self._state_changed.set()
        self._state_changed = trio.Event()

    def _listen(self, name: str, *args: Any) -> None:
        """Call a listener method; its failures are logged, never propagated."""
        try:
            getattr(self.listener, name)(*args)
        except Exception:
            log.exception("listener %s raised", name)

    # --- one connection ---------------------------------------------------------------------------

    async def _connect_once(self) -> bool:
        """Run one connection to its end; True if the viewer accepted us (session.ok)."""
        # Who holds the port, before connecting: an impostor already there gets no connection at all.
        refusal = await peer.check_listener(self.host, self.port)
        if refusal is not None:
            return self._retry_later(refusal, warn=True)
        unseen = False

        async def check_peer(stream: trio.SocketStream) -> None:
            # Who holds the other end, once connected and before a byte is sent or read: whoever
            # took the port after the check above is caught here (issue 21).
            nonlocal unseen
            verdict = await peer.check_connection(stream.socket)
            if verdict.refusal:
                raise PeerRefused(verdict.refusal)
            unseen = not verdict.seen

        conn: _Connection | None = None
        # open_checked_websocket bounds the opening (connect, check, upgrade) by connect_timeout. This
        # deadline, a little later, is the backstop: trio-websocket 0.12.2's own open_websocket did not
        # end an opening whose peer accepted the TCP connection and never answered the upgrade (it
        # waited for its reader task, which waited on the silent peer). Lifted once the connection is open.
        opening = trio.CancelScope(deadline=trio.current_time() + self.connect_timeout + OPENING_GRACE)
        try:
            with opening:
                async with open_checked_websocket(
                    self.host,
                    self.port,
                    "/",
                    check=check_peer,
                    max_message_size=MAX_MESSAGE_SIZE,
                    receive_buffer_size=RECEIVE_BUFFER,
                    connect_timeout=self.connect_timeout,
                    disconnect_timeout=2.0,
                ) as ws:
                    opening.deadline = math.inf
                    log.info("connected to %s, waiting for the handshake", self.url)
                    try:
                        async with trio.open_nursery() as nursery:
                            conn = _Connection(self, ws, nursery)
                            if unseen:
                                wsl = self.paths.mapper.mode == "wsl"
                                conn.listener_note = WINDOWS_SIDE if wsl else PEER_UNSEEN
                            self._conn = conn
                            nursery.start_soon(self._handshake_watchdog, conn)
                            await conn.read_loop()
                            nursery.cancel_scope.cancel()
                    except BaseException as exc:
                        # run() is being cancelled: say goodbye, briefly and best-effort.
                        if _is_cancellation(exc) and conn is not None and not conn.close_reason:
                            with trio.CancelScope(shield=True), trio.move_on_after(1.0):
                                try:
                                    bye = SessionDisconnect(reason=DISCONNECT_EDITOR_CLOSED, message="Editor closed")
                                    await conn.notify("session.disconnect", bye)
                                except _CLOSED_ERRORS:
                                    pass
                        raise
                    finally:
                        self._conn = None
                        if conn is not None:
                            conn.fail_pending(conn.close_reason or "session stopped")
            if opening.cancelled_caught:
                return self._not_opened()
        except PeerRefused as exc:  # an impostor took the port: not a byte went to it
            return self._retry_later(str(exc), warn=True)
        except ConnectionTimeout:
            return self._not_opened()
        except HandshakeError as exc:
            if conn is not None:  # DisconnectionTimeout: closing took too long
                log.warning("closing the connection timed out")
                return self._connection_ended(conn)
            cause = exc.__cause__ or exc.__context__
            why = str(cause) if cause is not None else type(exc).__name__
            return self._retry_later(f"cannot reach the viewer at {self.url}: {why}")
        except (OSError, ConnectionClosed, trio.TooSlowError) as exc:
            if conn is None:
                return self._retry_later(f"connection to {self.url} failed: {exc!r}")
        except Exception as exc:  # a bug somewhere below us: log it, never die
            log.exception("session connection failed unexpectedly")
            if conn is None:
                return self._retry_later(f"unexpected error: {exc!r}")
            if not conn.close_reason:
                conn.close_reason = f"unexpected error: {exc!r}"
        assert conn is not None
        return self._connection_ended(conn)

    def _not_opened(self) -> bool:
        """The opening took longer than connect_timeout: something holds the port that does not
        speak WebSocket (or not yet)."""
        return self._retry_later(f"cannot reach the viewer at {self.url}: the WebSocket connection did not open "
                                 f"within {self.connect_timeout:g} s (something holds the port that does not "
                                 "answer the upgrade)", warn=True)

    def _retry_later(self, detail: str, *, warn: bool = False) -> bool:
        """No connection this time: the status says why (`warn`: and the log, once per reason)."""
        if warn and detail != self.last_error:
            log.warning("%s", detail)
        self.last_error = detail
        self._set_state(CONNECTING, f"{detail}; retrying")
        return False

    def _connection_ended(self, conn: _Connection) -> bool:
        reason = conn.close_reason or "connection closed"
        if conn.ready:
            self.info = None
            self._listen("on_disconnected", reason)
        self._set_state(DISCONNECTED, reason)
        return conn.session_ok

    async def _handshake_watchdog(self, conn: _Connection) -> None:
        await trio.sleep(self.handshake_timeout)
        if not conn.session_ok:
            log.warning("no session.ok within %g s", self.handshake_timeout)
            conn.abort(f"the viewer did not complete the handshake within {self.handshake_timeout:g} s")

    async def _after_session_ok(self, conn: _Connection, ok: SessionOk) -> None:
        hs = conn.handshake or SessionHandshake()
        info = SessionInfo(
            viewer_name=hs.viewer_name,
            viewer_version=hs.viewer_version,
            agent_id=ok.agent_id or hs.agent_id or "",
            agent_name=ok.agent_name or hs.agent_name or "",
            syntax_id=hs.syntax_id or "",
            features=dict(hs.features),
            endpoint=self.endpoint,
        )

        def on_list(resp: Response) -> Awaitable[None] | None:
            # Runs in the reader, so on_connected comes before any frame that followed the answer.
            if conn.closed:
                return None
            if resp.error is not None:
                if resp.error.code == METHOD_NOT_FOUND:
                    log.warning("viewer has no object.list (an older viewer): the objects it published are "
                                "known only as it publishes them")
                    objects = []
                    nonlocal info
                    info = attrs.evolve(info, lists_objects=False)
                else:
                    conn.abort(f"object.list failed: {resp.error}")
                    return None
            else:
                if _object_count(resp.result) >= BIG_LIST:
                    return load_list(resp)
                try:
                    objects = self.decode(ObjectListResponse, resp.result, "object.list result").objects
                except ProtocolError as exc:
                    conn.abort(f"malformed object.list result: {exc}")
                    return None
            ready(objects)
            return None

        async def load_list(resp: Response) -> None:
            # A large answer: decoded off the trio thread and handed to the listener's load_objects
            # in steps, so the mount goes on answering. The reader waits for it (arrival order);
            # the state says connected only once the whole list is applied.
            try:
                objects = (await trio.to_thread.run_sync(
                    self.decode, ObjectListResponse, resp.result, "object.list result")).objects
            except ProtocolError as exc:
                conn.abort(f"malformed object.list result: {exc}")
                return
            load = getattr(self.listener, "load_objects", None)
            if load is not None:
                with trio.CancelScope(shield=True):  # once begun, the apply completes
                    try:
                        await load(objects)
                    except Exception:
                        log.exception("listener load_objects raised")
            ready(objects)

        def ready(objects: list[Any]) -> None:
            conn.ready = True
            self.info = info
            who = f"{info.viewer_name} {info.viewer_version}".strip() or "the viewer"
            note = f"; {conn.listener_note}" if conn.listener_note else ""
            self._set_state(CONNECTED, f"connected to {who} at {self.endpoint}{note}")
            log.info("session ready: agent %s, %d published object(s)", info.agent_name, len(objects))
            self._listen("on_connected", info, objects)

        try:
            await conn.call("object.list", {}, None, on_response=on_list)
        except CallTimeout as exc:
            conn.abort(f"object.list failed: {exc.message}")
            return
        except RpcError:
            pass  # handled in on_list (or the connection is gone)
        if conn.ready:
            await self._ping_loop(conn)

    async def _ping_loop(self, conn: _Connection) -> None:
        failures = 0
        while True:
            await trio.sleep(self.ping_interval)
            try:
                timeout = min(self.ping_timeout, self.ping_interval * 2)
                await conn.call("system.ping", SystemPing(timestamp=now_ms()), timeout)
                failures = 0
            except NotConnected:
                return
            except RpcError as exc:
                failures += 1
                log.warning("ping %d failed: %s", failures, exc)
                if failures >= 2:
                    conn.abort("the viewer stopped answering pings")
                    return

    # --- notifications ----------------------------------------------------------------------------

    def _handle_notification(self, conn: _Connection, msg: Notification) -> None:
        method = msg.method
        try:
            if method == "session.ok" and (conn.refused or conn.handshake is None):
                # Only an answer to our accepted handshake is confirmed by the viewer.
                log.warning("ignoring session.ok on a connection whose handshake we %s",
                            "refused" if conn.refused else "have not answered")
                return
            if method == "session.ok":
                ok = self.decode(SessionOk, msg.params if isinstance(msg.params, dict) else None, method)
                if conn.session_ok:
                    log.warning("ignoring a second session.ok")
                    return
                conn.session_ok = True
                log.info("viewer accepted the session")
                conn.nursery.start_soon(self._after_session_ok, conn, ok)
            elif method == "session.disconnect":
                dis = self.decode(SessionDisconnect, msg.params, method)
                conn.disconnect_note = f"viewer disconnected us (reason {dis.reason}: {one_line(dis.message, 200)})"
                if dis.reason == DISCONNECT_EDITOR_CLOSED:
                    # G1 ends the whole connection when its last live-sync editor closes, explorer
                    # and all (viewer-source.md §2, unsubscribeEditor): not an end, a reconnect.
                    log.info("%s: its last live-sync editor closed; reconnecting", conn.disconnect_note)
                else:
                    log.warning("%s", conn.disconnect_note)
            elif method == "object.publish":
                self._listen("on_publish", self.decode(ObjectPublish, msg.params, method).object)
            elif method == "object.unpublish":
                self._listen("on_unpublish", self.decode(ObjectUnpublish, msg.params, method))
            elif method == "object.update":
                self._listen("on_update", self.decode(ObjectUpdate, msg.params, method))
            elif method == "runtime.debug":
                self._listen("on_runtime_debug", self.decode(RuntimeDebug, msg.params, method))
            elif method == "runtime.error":
                self._listen("on_runtime_error", self.decode(RuntimeError_, msg.params, method))
            elif method == "language.syntax.change":
                self._listen("on_syntax_change", self.decode(SyntaxChange, msg.params, method))
            elif method == "script.compiled":
                self._listen("on_compiled", self.decode(CompilationResult, msg.params, method))
            elif method == "script.unsubscribe":
                self._listen("on_unsubscribe", self.decode(ScriptUnsubscribe, msg.params, method))
            else:
                log.info("ignoring unknown notification %s", method)
        except ProtocolError as exc:
            log.warning("ignoring malformed %s notification: %s", method, exc)

    # --- the methods we serve ---------------------------------------------------------------------

    def _read_challenge(self, path: str) -> str:
        return _challenge.read_challenge(path, self.paths.to_local)

    async def _serve_handshake(self, conn: _Connection, params: Any) -> Any:
        try:
            hs = self.decode(SessionHandshake, params, "session.handshake")
        except ProtocolError as exc:
            log.warning("malformed handshake: %s", exc)
            raise RpcError.standard(INVALID_PARAMS, str(exc)) from None
        log.info(
            "handshake from %s %s (protocol %s)", hs.viewer_name, hs.viewer_version, hs.protocol_version
        )
        answer: str | None = None
        if hs.challenge is None and conn.listener_note:
            conn.listener_note = (conn.listener_note.removesuffix(RELYING)
                                  + " and its handshake has no challenge: nothing vouches for it")
            log.warning("%s", conn.listener_note)
        elif conn.listener_note:
            log.info("%s", conn.listener_note)
        if hs.challenge is not None:
            try:
                answer = self._read_challenge(hs.challenge)
            except _challenge.ChallengeError as exc:
                log.error("refusing the handshake: %s", exc)
                conn.refused = str(exc)
                raise RpcError(AUTH_REQUIRED, "Challenge file rejected") from None
        conn.handshake = hs
        result: dict[str, Any] = {
            "client_name": CLIENT_NAME,
            "client_version": CLIENT_VERSION,
            "protocol_version": PROTOCOL_VERSION,
            "languages": ["lsl", "luau"],
            "features": {
                "object_publish": True,
                "error_reporting": True,
                "unified_diagnostics": True,
                "commands": True,
                "debugging": False,
                "breakpoints": False,
                "live_sync": self.live_sync,
            },
        }
        if answer is not None:
            result["challenge_response"] = answer
        return result

    async def _serve_ping(self, conn: _Connection, params: Any) -> Any:
        timestamp = params.get("timestamp") if isinstance(params, dict) else None
        return {"pong": "pong", "timestamp": timestamp, "server_time": now_ms()}

    async def _serve_version(self, conn: _Connection, params: Any) -> Any:
        return {"client_name": CLIENT_NAME, "client_version": CLIENT_VERSION}

    async def _serve_status(self, conn: _Connection, params: Any) -> Any:
        return {"status": "OK"}

    async def _serve_list_methods(self, conn: _Connection, params: Any) -> Any:
        return sorted(self._methods)

    async def _serve_command_list(self, conn: _Connection, params: Any) -> Any:
        return command_list()

    async def _serve_command_execute(self, conn: _Connection, params: Any) -> Any:
        command, args = validate_command(params)
        log.info("viewer asks the editor to run %s", command)
        try:
            self.listener.on_editor_command(command, args)
        except RpcError:
            raise
        except Exception as exc:
            log.exception("listener on_editor_command raised")
            raise RpcError.standard(INTERNAL_ERROR, f"{command} failed: {exc}") from None
        return {"success": True}
