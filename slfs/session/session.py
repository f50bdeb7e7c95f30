"""The WebSocket session with the viewer: connect, reconnect, the state, the calls slfs makes.

One connection at a time (connection.py: sending, pending calls, the reader); what the viewer sends
unasked is handled through incoming.py's tables. After session.ok the session lists the objects: a
large object.list answer is decoded off the trio thread and applied through the listener's
`load_objects` in steps, and the reader reads the next frame after that. When the link drops every
pending call fails with NotConnected, the listener hears about it, and run() reconnects with
capped, jittered backoff.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import attrs
import trio
from trio_websocket import ConnectionClosed, ConnectionTimeout, HandshakeError

from slfs.backoff import Backoff
from slfs.protocol import codec
from slfs.protocol.jsonrpc import Response
from slfs.protocol.rpc_errors import INTERNAL_ERROR, METHOD_NOT_FOUND, ProtocolError, RpcError
from slfs.protocol.types import (
    DISCONNECT_EDITOR_CLOSED,
    SessionDisconnect,
    SessionHandshake,
    SessionOk,
    SystemPing,
)
from slfs.stats import Stats
from slfs.winpaths import PathTranslator

from . import challenge as _challenge
from . import peer
from .call_errors import CallTimeout, NotConnected
from .connection import CLOSED_ERRORS, Connection
from .ids import IdAllocator
from .incoming import PEER_UNSEEN, WINDOWS_SIDE, Incoming, now_ms
from .listener import ListedObject, SessionInfo, SessionListener
from .listing import decode_listing
from .opening import PeerRefused, open_checked_websocket

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

MAX_MESSAGE_SIZE = 64 * 1024 * 1024  # the viewer sends at most 16 MiB
# An object.list answer from this many objects on is decoded off the trio thread and applied in steps.
BIG_LIST = 50
# Bytes read from the socket at a time (trio_websocket's default is 4 KiB: a 20 MB object.list
# answer took 5,000 reads through wsproto).
RECEIVE_BUFFER = 256 * 1024
# How long after connect_timeout the session ends an opening trio-websocket did not end (see
# ViewerSession._connect_once).
OPENING_GRACE = 1.0

CONNECTING = "connecting"
CONNECTED = "connected"
DISCONNECTED = "disconnected"


def _is_cancellation(exc: BaseException) -> bool:
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_cancellation(e) for e in exc.exceptions)
    return isinstance(exc, trio.Cancelled)


def _object_count(result: Any) -> int:
    """How many objects an object.list result holds, before decoding (0 when it is not the shape)."""
    objects = result.get("objects") if isinstance(result, dict) else None
    return len(objects) if isinstance(objects, list) else 0




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
        self._conn: Connection | None = None
        self._state_changed = trio.Event()
        self._incoming = Incoming(self)

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
                self.tell(self.listener.on_disconnected, "session stopped")
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

    def decode(self, cls: type[T], data: Any, what: str, path: str = "") -> T:
        """Decode a payload (`path`: where it sits in the message, for the fields logged); an
        optional field of an unexpected type is logged once per `what` and field for the life of
        the session, then ignored (see protocol.codec)."""

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

        return codec.from_json(cls, data, path, on_ignored=ignored)

    # --- state ----------------------------------------------------------------------------------

    def _set_state(self, state: str, detail: str) -> None:
        changed = (state, detail) != (self.state, self.state_detail)
        self.state = state
        self.state_detail = detail
        if state == DISCONNECTED:
            self.last_error = detail
        if changed:
            log.info("session %s: %s", state, detail)
            self.tell(self.listener.on_state, state, detail)
        self._state_changed.set()
        self._state_changed = trio.Event()

    def tell(self, method: Callable[P, None], *args: P.args, **kwargs: P.kwargs) -> None:
        """Call one of the listener's methods; its failures are logged, never propagated."""
        try:
            method(*args, **kwargs)
        except Exception:
            log.exception("listener %s raised", getattr(method, "__name__", method))

    # --- for incoming.Incoming ----------------------------------------------------------------------

    def read_challenge(self, path: str) -> str:
        """Blocking (it looks at the file): incoming.py runs it in a worker thread, under a bound."""
        return _challenge.read_challenge(path, self.paths.to_local, mountpoint=self.paths.mountpoint)

    def accepted(self, conn: Connection, ok: SessionOk) -> None:
        """session.ok came: list the objects, then ping."""
        conn.nursery.start_soon(self._after_session_ok, conn, ok)

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

        conn: Connection | None = None
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
                            note = ""
                            if unseen:
                                wsl = self.paths.mapper.mode == "wsl"
                                note = WINDOWS_SIDE if wsl else PEER_UNSEEN
                            conn = Connection(ws, nursery, self._ids, self._incoming, self.stats, listener_note=note)
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
                                except CLOSED_ERRORS:
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
            conn.note_close_reason(f"unexpected error: {exc!r}")
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

    def _connection_ended(self, conn: Connection) -> bool:
        reason = conn.close_reason or "connection closed"
        if conn.ready:
            self.info = None
            self.tell(self.listener.on_disconnected, reason)
        self._set_state(DISCONNECTED, reason)
        return conn.session_ok

    async def _handshake_watchdog(self, conn: Connection) -> None:
        await trio.sleep(self.handshake_timeout)
        if not conn.session_ok:
            log.warning("no session.ok within %g s", self.handshake_timeout)
            conn.abort(f"the viewer did not complete the handshake within {self.handshake_timeout:g} s")

    async def _after_session_ok(self, conn: Connection, ok: SessionOk) -> None:
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
                    objects = decode_listing(self.decode, resp.result)
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
                objects = await trio.to_thread.run_sync(decode_listing, self.decode, resp.result)
            except ProtocolError as exc:
                conn.abort(f"malformed object.list result: {exc}")
                return
            with trio.CancelScope(shield=True):  # once begun, the apply completes
                try:
                    await self.listener.load_objects(objects)
                except Exception:
                    log.exception("listener load_objects raised")
            ready(objects)

        def ready(objects: list[ListedObject]) -> None:
            conn.ready = True
            self.info = info
            who = f"{info.viewer_name} {info.viewer_version}".strip() or "the viewer"
            note = f"; {conn.listener_note}" if conn.listener_note else ""
            self._set_state(CONNECTED, f"connected to {who} at {self.endpoint}{note}")
            log.info("session ready: agent %s, %d published object(s)", info.agent_name, len(objects))
            self.tell(self.listener.on_connected, info, objects)

        try:
            await conn.call("object.list", {}, None, on_response=on_list)
        except CallTimeout as exc:
            conn.abort(f"object.list failed: {exc.message}")
            return
        except RpcError:
            pass  # handled in on_list (or the connection is gone)
        if conn.ready:
            await self._ping_loop(conn)

    async def _ping_loop(self, conn: Connection) -> None:
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
