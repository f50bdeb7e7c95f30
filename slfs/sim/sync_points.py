"""What the simulated viewer sends on its own, and the sync points that wait for the traffic.

`SyncPoints` is a mixin of `SimViewer` (server.py), under Transport (transport.py), which owns the
connections, framing and dispatch. Here: the sim's own requests to clients (`call_client`,
`execute_on_clients`, the pings of `sync()`), its notifications and `broadcast`, the deferred
actions counted busy until they have run, the operation log's `mark` / `calls_since`, and the
explicit sync points `sync()`, `idle()` and `quiesce()` (README.md, "Sync points", says exactly
what they guarantee).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from slfs.protocol.jsonrpc import Response
from slfs.protocol.rpc_errors import RpcError

from .connection import CallContext, Connection
from .world_control import dumps

SYNC_TIMEOUT = 10.0  # default bound of sync() and idle()


class SyncError(Exception):
    """A sync point could not be reached: too few clients, or no answer / no quiet within the timeout."""


class SyncPoints:
    """The outgoing half of SimViewer's transport; the attributes below are Transport's
    (`_init_transport`)."""

    calls: list[tuple[str, dict[str, Any]]]
    notifications_sent: list[tuple[str, dict[str, Any]]]
    _conns: list[Connection]
    _rpc_counter: int
    _nursery: trio.Nursery | None
    _busy: collections.Counter[str]
    _quiet: trio.Event
    # Transport's: whether a connection may not be sent notifications yet (annotation only)
    _gated: Callable[[Connection], bool]

    # ============================================================================================
    # deferred actions and the sync points
    # ============================================================================================

    def _busy_begin(self, label: str) -> None:
        if not self._busy:
            self._quiet = trio.Event()
        self._busy[label] += 1

    def _busy_end(self, label: str) -> None:
        self._busy[label] -= 1
        if self._busy[label] <= 0:
            del self._busy[label]
        if not self._busy:
            self._quiet.set()

    def _spawn_deferred(self, fn: Callable[[], Awaitable[None]], label: str) -> None:
        """Run `fn` in the sim's nursery (no-op when not serving), counted busy until it ends: what
        the sim does later on its own (apply_delay, publish_delay, properties_delay), so idle()
        waits for it."""
        if self._nursery is None:
            return

        async def run() -> None:
            try:
                await fn()
            finally:
                self._busy_end(label)

        self._nursery.start_soon(run)
        self._busy_begin(label)  # the task cannot run before this returns

    def _later(self, ctx: CallContext, delay: float, fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            await trio.sleep(delay)
            await fn()

        ctx.after.append(run)

    def mark(self) -> int:
        """A position in `calls`, for calls_since()."""
        return len(self.calls)

    def calls_since(self, mark: int, method: str | None = None) -> list[tuple[str, dict[str, Any]]]:
        """The calls recorded since `mark` (a mark() or a len(calls)), optionally of one method."""
        return [c for c in self.calls[mark:] if method is None or c[0] == method]

    async def sync(self, timeout: float = SYNC_TIMEOUT, *, min_clients: int = 1) -> int:
        """A barrier for what the clients have sent: sends a system.ping request to every
        authenticated connection and returns once each has answered (or closed). By then every
        frame a client wrote before its answer has been read and handled: its calls are in `calls`
        (their handlers have started, maybe not finished: see idle()). Returns how many clients
        answered. Raises SyncError if fewer than `min_clients` are authenticated, or if a
        connection neither answers nor closes within `timeout`. See README.md, "Sync points"."""
        conns = [c for c in self._conns if c.authenticated and not c.closed]
        if len(conns) < min_clients:
            raise SyncError(f"sync: {len(conns)} authenticated client(s), at least {min_clients} wanted")
        answered: list[int] = []
        silent: list[int] = []

        async def one(conn: Connection) -> None:
            stamp = int(time.time() * 1000)
            _rid, response = await self._request(conn, "system.ping", {"timestamp": stamp}, timeout)
            if response is not None:
                answered.append(conn.number)
            elif not conn.closed:
                silent.append(conn.number)

        async with trio.open_nursery() as nursery:
            for conn in conns:
                nursery.start_soon(one, conn)
        if silent:
            raise SyncError(f"sync: connection(s) {sorted(silent)} did not answer system.ping within {timeout:g} s")
        return len(answered)

    async def idle(self, timeout: float = SYNC_TIMEOUT) -> None:
        """Wait until the sim is quiet: every call it has received has been handled and answered,
        and every action it deferred (the apply_delay / publish_delay / properties_delay work and
        the notifications that go with it) has run. Raises SyncError after `timeout`."""
        with trio.move_on_after(timeout):
            while self._busy:
                await self._quiet.wait()
            return
        raise SyncError(f"idle: still busy after {timeout:g} s: {dict(self._busy)}")

    async def quiesce(self, timeout: float = SYNC_TIMEOUT, *, rounds: int = 2, min_clients: int = 1) -> None:
        """idle() then sync(), `rounds` times, then idle() once more. After one round the clients
        have handled everything the sim had to send (deferred work included) and what they had
        sent is in `calls`; the second round also covers what a client started in reaction while
        handling those frames (a refetch after an update, say), if it has written its frame by then.
        The final idle() means every call in `calls` has been handled. See README.md, "Sync points"."""
        for _ in range(rounds):
            await self.idle(timeout)
            await self.sync(timeout, min_clients=min_clients)
        await self.idle(timeout)

    # ============================================================================================
    # viewer -> client
    # ============================================================================================

    def _next_rpc_id(self) -> str:
        rid = f"rpc_{self._rpc_counter}"
        self._rpc_counter += 1
        return rid

    async def _request(
        self, conn: Connection, method: str, params: Any, timeout: float
    ) -> tuple[str, Response | None]:
        """Send a request to one client; its id and Response, None if none came (closed, timed out)."""
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
        return rid, (box[0] if box else None)

    async def call_client(self, conn: Connection, method: str, params: Any, timeout: float = 120.0) -> Response:
        """Send a request to one client; a Response (error -32001/-32000 on timeout/close)."""
        rid, response = await self._request(conn, method, params, timeout)
        if response is not None:
            return response
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

    async def _notify(self, conn: Connection, method: str, params: Any = None) -> None:
        out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            out["params"] = params
        await conn.send(dumps(out))

    async def broadcast(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification to every authenticated connection (G1/G2, which have no auth gate:
        to every open connection, authenticated or not; viewer-source.md §2 and §6)."""
        self.notifications_sent.append((method, params))
        for conn in list(self._conns):
            if not conn.closed and not self._gated(conn):
                await self._notify(conn, method, params)
