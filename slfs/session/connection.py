"""One WebSocket connection to the viewer: sending, the calls awaiting their answers, the reader.

Per connection there is one reader task that never awaits a handler: responses wake their callers,
notifications and requests go to the session's `Incoming` (incoming.py) in arrival order, requests to
be answered by tasks spawned in the connection's nursery. The one exception is a large object.list
answer: its on_response may return an awaitable, and the reader reads the next frame after it.
Frames are sent under one lock so they never interleave. When the link drops every pending call
fails with NotConnected.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from slfs.protocol import codec
from slfs.protocol.jsonrpc import (
    Message,
    Notification,
    Request,
    Response,
    encode_notification,
    encode_request,
    parse_message,
    parse_message_steps,
)
from slfs.protocol.rpc_errors import ProtocolError, RpcError
from slfs.protocol.types import SessionHandshake
from slfs.stats import Stats

from ..gcpause import paused_gc
from .call_errors import CallTimeout, MessageTooLarge, NotConnected
from .ids import IdAllocator

# The session's log lines keep the logger name they had before the session was split in modules.
log = logging.getLogger(__name__)

# Our timeouts sit above the viewer's own (content.save allows 60 s for a script upload).
DEFAULT_TIMEOUT = 30.0
ABANDONED_KEPT = 1024  # the calls given up on whose late answers are told apart (Connection.abandoned)
METHOD_TIMEOUTS: dict[str, float] = {
    "object.content.get": 40.0,
    "object.item.create": 40.0,
    "object.content.save": 70.0,
}

# What the viewer takes from us: 64 KB before authentication, 16 MB after; larger closes with 1009
# (newer protocol document, "Usage Flow"). We refuse such a message locally instead.
PREAUTH_SEND_LIMIT = 64 * 1024
SEND_LIMIT = 16 * 1024 * 1024
CLOSE_TOO_BIG = 1009
CLOSE_TRY_AGAIN = 1013
# Frames from this size on are parsed in steps (see Connection.handle_big_frame).
STEPPED_FRAME = 1 << 20

CLOSED_ERRORS = (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError)


def timeout_for(method: str) -> float:
    return METHOD_TIMEOUTS.get(method, DEFAULT_TIMEOUT)


class Incoming(Protocol):
    """Where a connection hands what the viewer sends unasked (incoming.Incoming)."""

    def hear(self, conn: Connection, msg: Notification) -> None: ...
    async def answer(self, conn: Connection, req: Request) -> None: ...


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


class Connection:
    """One WebSocket connection to the viewer and everything that lives and dies with it."""

    def __init__(self, ws: WebSocketConnection, nursery: trio.Nursery, ids: IdAllocator, incoming: Incoming,
                 stats: Stats, listener_note: str = "") -> None:
        self.ws = ws
        self.nursery = nursery
        self.ids = ids  # the session's: request ids are not reused across connections
        self.incoming = incoming
        self.stats = stats  # the mount's (`slfs stats`)
        self.pending: dict[int, _Pending] = {}
        # Calls given up on (timed out, or cancelled by their caller or a shutdown): their late
        # answers are expected, not a stranger's. Ids only grow (session/ids.py), so the newest
        # ABANDONED_KEPT are enough to tell them apart.
        self.abandoned: collections.OrderedDict[int, str] = collections.OrderedDict()
        self.send_lock = trio.Lock()
        self.closed = False
        self.close_reason = ""
        self.disconnect_note = ""  # what a session.disconnect notification said
        self.handshake: SessionHandshake | None = None
        self.session_ok = False  # session.ok received
        self.refused = ""  # why we refused the peer's handshake: the connection then ends
        self.last_sent_size = 0  # for the log when the viewer closes with 1009
        self.ready = False  # object.list answered and on_connected delivered
        self.listener_note = listener_note  # WINDOWS_SIDE or PEER_UNSEEN: the other end could not be checked

    # --- teardown -------------------------------------------------------------------------------

    def abort(self, reason: str) -> None:
        """Tear the connection down (sync; safe from anywhere)."""
        self.note_close_reason(reason)
        self.nursery.cancel_scope.cancel()

    def note_close_reason(self, reason: str) -> None:
        """Why the connection ended: the first reason given stays."""
        if not self.close_reason:
            self.close_reason = reason

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
        rid = self.ids.allocate(self.pending)
        waiter = _Pending(method, on_response=on_response)
        self.pending[rid] = waiter
        start = time.perf_counter_ns()
        try:
            with trio.move_on_after(timeout) as scope:
                try:
                    await self.send(encode_request(rid, method, codec.encode_params(params)), method)
                except CLOSED_ERRORS:
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
                if not waiter.arrived:
                    self._abandon(rid, method)
            # `slfs stats`: send to answer handled (on_response included), by method.
            self.stats.rpc_done(method, time.perf_counter_ns() - start,
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
                self.note_close_reason(reason)
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
            self.nursery.start_soon(self.incoming.answer, self, msg)
        else:
            self.incoming.hear(self, msg)
        return None

    def _abandon(self, rid: int, method: str) -> None:
        self.abandoned[rid] = method
        while len(self.abandoned) > ABANDONED_KEPT:
            self.abandoned.popitem(last=False)

    def handle_response(self, msg: Response) -> Awaitable[None] | None:
        waiter = self.pending.pop(msg.id, None) if isinstance(msg.id, int) else None
        if waiter is None and isinstance(msg.id, int) and msg.id in self.abandoned:
            log.debug("late answer to %s id=%s, a call given up on: ignored", self.abandoned.pop(msg.id), msg.id)
            return None
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
