"""Opening the WebSocket connection with a look at the TCP connection in between.

trio-websocket's open_websocket opens the TCP stream and sends the HTTP upgrade at once, with no
hook between the two. This does the same in two steps: trio.open_tcp_stream, then `check` on the
connected stream (who holds its other end: peer.check_connection), and only then
trio_websocket.wrap_client_stream, which sends the upgrade. A refusing check raises PeerRefused
after closing the stream: not a byte was sent or read.

Errors come out as open_websocket's do (ConnectionTimeout, HandshakeError with the OSError as its
cause, DisconnectionTimeout on a slow close, the body's own exception unwrapped from the nursery's
group), so the session handles both alike.
"""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import trio
from trio_websocket import (
    ConnectionTimeout,
    DisconnectionTimeout,
    HandshakeError,
    WebSocketConnection,
    wrap_client_stream,
)


class PeerRefused(Exception):
    """The connection's other end is not ours; the message says why."""


def host_header(host: str, port: int) -> str:
    """The Host header trio-websocket's connect_websocket sends, with an IPv6 literal bracketed."""
    try:
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    except ValueError:
        pass
    return host if port in (80, 443) else f"{host}:{port}"


def _unwrap(group: BaseExceptionGroup) -> BaseException:
    """The one exception a nursery's group stands for: its only member, else its only one that is not
    a Cancelled, else its first Cancelled; a group of several real failures stays a group."""
    if len(group.exceptions) == 1:
        return group.exceptions[0]
    real = [exc for exc in group.exceptions if not isinstance(exc, trio.Cancelled)]
    if not real:
        return group.exceptions[0]
    return real[0] if len(real) == 1 else group


def _reraise(exc: BaseException, group: BaseExceptionGroup) -> None:
    """Raise `exc` for the group it came in, its context as it was (not the group)."""
    if exc is group:
        raise group
    context = exc.__context__
    try:
        raise exc
    finally:
        exc.__context__ = context


@asynccontextmanager
async def open_checked_websocket(
    host: str,
    port: int,
    resource: str,
    *,
    check: Callable[[trio.SocketStream], Awaitable[None]],
    max_message_size: int,
    receive_buffer_size: int,
    connect_timeout: float,
    disconnect_timeout: float,
) -> AsyncIterator[WebSocketConnection]:
    deadline = trio.current_time() + connect_timeout
    try:
        with trio.fail_at(deadline):
            stream = await trio.open_tcp_stream(host, port)
    except trio.TooSlowError:
        raise ConnectionTimeout from None
    except OSError as exc:
        raise HandshakeError from exc
    try:
        await check(stream)
    except BaseException:
        await trio.aclose_forcefully(stream)
        raise
    connection: WebSocketConnection | None = None
    try:
        async with trio.open_nursery() as nursery:
            try:
                with trio.fail_at(deadline):
                    connection = await wrap_client_stream(
                        nursery, stream, host_header(host, port), resource,
                        max_message_size=max_message_size, receive_buffer_size=receive_buffer_size,
                    )
            except trio.TooSlowError:
                raise ConnectionTimeout from None
            try:
                yield connection
            finally:
                try:
                    with trio.fail_after(disconnect_timeout):
                        await connection.aclose()
                except trio.TooSlowError:
                    raise DisconnectionTimeout from None
    except BaseExceptionGroup as group:
        _reraise(_unwrap(group), group)
    finally:
        if connection is None:
            await trio.aclose_forcefully(stream)
