"""One client connection of the simulated viewer, and what a method handler is given.

Frames go out through a queue and a writer task, so the sim can tell how much waits unsent to a
client that stops reading (the newer document's 32 MB limit, transport.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from slfs.protocol.jsonrpc import Response
from slfs.protocol.rpc_errors import ACCESS_DENIED, INVALID_PARAMS, RpcError

log = logging.getLogger(__name__)

# Newer protocol document, Usage Flow 1: "a close the viewer starts drops the connection if it has
# not completed within 5 seconds".
CLOSE_TIMEOUT = 5.0
SEND_WAIT = 0.1  # how long a send waits for its frame to be written (see Connection.send)


def invalid(detail: str) -> RpcError:
    return RpcError.standard(INVALID_PARAMS, detail)


def denied(message: str) -> RpcError:
    return RpcError(ACCESS_DENIED, message)


def id_param(params: dict[str, Any], key: str) -> str | None:
    """A UUID parameter, lower-cased; None when absent, empty or not a string."""
    value = params.get(key)
    return value.lower() if isinstance(value, str) and value else None


class Connection:
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

    async def send(self, text: str | bytes) -> None:
        """Queue a frame (frames go out in the order they were queued) and wait until it has been
        written, but no longer than SEND_WAIT: to a client that reads, a frame has gone out when
        this returns (what callers and tests count on); to one that stops reading, frames pile up
        in the queue until the unsent limit drops the connection. Bytes go out as a binary frame."""
        if self.closed:
            return
        size = len(text) if isinstance(text, bytes) else len(text.encode("utf-8"))
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


class CallContext:
    """Per-call context: the connection and actions to run once the response has gone out."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.after: list[Callable[[], Awaitable[None]]] = []


Handler = Callable[[dict[str, Any], CallContext], Awaitable[Any]]
