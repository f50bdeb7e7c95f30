"""What the viewer sends us unasked: its notifications and its requests, each dispatched through a
table from method name to handler.

Notifications are handled in the reader, in arrival order: session.ok and session.disconnect change
the connection, the rest are decoded and handed to the listener. Requests are answered by a task of
the connection's nursery each; the handshake's answer is the one that authenticates us.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, Protocol, TypeVar

import trio

from slfs.protocol import codec
from slfs.protocol.jsonrpc import Notification, Request, encode_error, encode_result
from slfs.protocol.rpc_errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ProtocolError,
    RpcError,
)
from slfs.protocol.text import one_line
from slfs.protocol.types import (
    DISCONNECT_EDITOR_CLOSED,
    CompilationResult,
    ObjectPublish,
    ObjectUnpublish,
    ObjectUpdate,
    RuntimeDebug,
    RuntimeError_,
    ScriptUnsubscribe,
    SessionDisconnect,
    SessionHandshake,
    SessionHandshakeResponse,
    SessionOk,
    SyntaxChange,
    SystemStatusResponse,
    SystemVersionResponse,
)

from . import challenge as _challenge
from .call_errors import MessageTooLarge
from .commands import command_list, validate_command
from .connection import CLOSED_ERRORS, Connection
from .listener import SessionListener

# The session's log lines keep the logger name they had before the session was split in modules.
log = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M")
P = ParamSpec("P")

CLIENT_NAME = "slfs"
CLIENT_VERSION = "1.0"
PROTOCOL_VERSION = "1.0"
# The other end of the connection is not in /proc/net/tcp (peer.check_connection): in WSL2
# (-o windows_paths=wsl) the viewer listens on the Windows side; otherwise another host.
RELYING = "; relying on the challenge"
WINDOWS_SIDE = "the viewer's listener is on the Windows side" + RELYING
PEER_UNSEEN = "the viewer's end of the connection is not in /proc/net/tcp" + RELYING
# How long reading the challenge file may take: it is read in a worker thread (its path could lead
# through a stuck file system, or a symlink into the mount this loop serves), abandoned after this.
CHALLENGE_TIMEOUT = 5.0


def now_ms() -> int:
    return int(time.time() * 1000)


async def _read_challenge(host: Host, path: str) -> str:
    """host.read_challenge off the event loop's thread, at most CHALLENGE_TIMEOUT seconds."""
    with trio.move_on_after(CHALLENGE_TIMEOUT):
        return await trio.to_thread.run_sync(host.read_challenge, path, abandon_on_cancel=True)
    raise _challenge.ChallengeError(f"challenge file {path!r} was not read within {CHALLENGE_TIMEOUT:g} s")


Heard = Callable[[Connection, Notification], None]
Answer = Callable[[Connection, Any], Awaitable[Any]]


class Host(Protocol):
    """What serving needs of the session (session.ViewerSession)."""

    @property
    def listener(self) -> SessionListener: ...
    @property
    def live_sync(self) -> bool: ...
    def decode(self, cls: type[T], data: Any, what: str) -> T: ...
    def tell(self, method: Callable[P, None], *args: P.args, **kwargs: P.kwargs) -> None: ...
    def read_challenge(self, path: str) -> str: ...
    def accepted(self, conn: Connection, ok: SessionOk) -> None: ...


class Incoming:
    """What the viewer sends unasked (its notifications and its requests), by method name."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.notifications: dict[str, Heard] = {
            "session.ok": self._session_ok,
            "session.disconnect": self._session_disconnect,
            "object.publish": self._object_publish,
            "object.unpublish": self._told(ObjectUnpublish, lambda to: to.on_unpublish),
            "object.update": self._told(ObjectUpdate, lambda to: to.on_update),
            "runtime.debug": self._told(RuntimeDebug, lambda to: to.runtime.on_runtime_debug),
            "runtime.error": self._told(RuntimeError_, lambda to: to.runtime.on_runtime_error),
            "language.syntax.change": self._told(SyntaxChange, lambda to: to.on_syntax_change),
            "script.compiled": self._told(CompilationResult, lambda to: to.on_compiled),
            "script.unsubscribe": self._told(ScriptUnsubscribe, lambda to: to.on_unsubscribe),
        }
        self.requests: dict[str, Answer] = {
            "session.handshake": self._handshake,
            "system.ping": self._ping,
            "system.getVersion": self._version,
            "system.status": self._status,
            "system.listMethods": self._list_methods,
            "command.list": self._command_list,
            "command.execute": self._command_execute,
        }

    # --- notifications ----------------------------------------------------------------------------

    def hear(self, conn: Connection, msg: Notification) -> None:
        handler = self.notifications.get(msg.method)
        if handler is None:
            log.info("ignoring unknown notification %s", msg.method)
            return
        try:
            handler(conn, msg)
        except ProtocolError as exc:
            log.warning("ignoring malformed %s notification: %s", msg.method, exc)

    def _told(self, kind: type[M], method: Callable[[SessionListener], Callable[[M], None]]) -> Heard:
        """A notification decoded as `kind` and handed to the listener's `method`."""

        def tell(_conn: Connection, msg: Notification) -> None:
            payload = self.host.decode(kind, msg.params, msg.method)
            self.host.tell(method(self.host.listener), payload)

        return tell

    def _object_publish(self, _conn: Connection, msg: Notification) -> None:
        self.host.tell(self.host.listener.on_publish, self.host.decode(ObjectPublish, msg.params, msg.method).object)

    def _session_ok(self, conn: Connection, msg: Notification) -> None:
        if conn.refused or conn.handshake is None:
            # Only an answer to our accepted handshake is confirmed by the viewer.
            log.warning("ignoring session.ok on a connection whose handshake we %s",
                        "refused" if conn.refused else "have not answered")
            return
        ok = self.host.decode(SessionOk, msg.params if isinstance(msg.params, dict) else None, msg.method)
        if conn.session_ok:
            log.warning("ignoring a second session.ok")
            return
        conn.session_ok = True
        log.info("viewer accepted the session")
        self.host.accepted(conn, ok)

    def _session_disconnect(self, conn: Connection, msg: Notification) -> None:
        dis = self.host.decode(SessionDisconnect, msg.params, msg.method)
        conn.disconnect_note = f"viewer disconnected us (reason {dis.reason}: {one_line(dis.message, 200)})"
        if dis.reason == DISCONNECT_EDITOR_CLOSED:
            # G1 ends the whole connection when its last live-sync editor closes, explorer
            # and all (viewer-source.md §2, unsubscribeEditor): not an end, a reconnect.
            log.info("%s: its last live-sync editor closed; reconnecting", conn.disconnect_note)
        else:
            log.warning("%s", conn.disconnect_note)

    # --- requests ---------------------------------------------------------------------------------

    async def answer(self, conn: Connection, req: Request) -> None:
        handler = self.requests.get(req.method)
        try:
            if handler is None:
                raise RpcError.standard(METHOD_NOT_FOUND, req.method)
            result = await handler(conn, req.params)
            reply = encode_result(req.id, result)
        except RpcError as err:
            log.info("answering %s id=%r with error %s", req.method, req.id, err)
            reply = encode_error(req.id, err)
        except Exception as exc:
            log.exception("handler for %s failed", req.method)
            reply = encode_error(req.id, RpcError.standard(INTERNAL_ERROR, str(exc) or type(exc).__name__))
        try:
            try:
                await conn.send(reply, f"the answer to {req.method}")
            except MessageTooLarge as exc:
                log.error("%s", exc.message)
                await conn.send(encode_error(req.id, RpcError.standard(INTERNAL_ERROR, exc.message)))
        except CLOSED_ERRORS:
            log.info("could not answer %s id=%r: connection closed", req.method, req.id)
        if conn.refused:
            # Whatever the peer says next (even session.ok), this connection is over; run() backs off.
            conn.abort(f"refused the viewer's handshake: {conn.refused}")

    async def _handshake(self, conn: Connection, params: Any) -> Any:
        try:
            hs = self.host.decode(SessionHandshake, params, "session.handshake")
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
                answer = await _read_challenge(self.host, hs.challenge)
            except _challenge.ChallengeError as exc:
                log.error("refusing the handshake: %s", exc)
                conn.refused = str(exc)
                raise RpcError(AUTH_REQUIRED, "Challenge file rejected") from None
        conn.handshake = hs
        return codec.to_json(SessionHandshakeResponse(
            client_name=CLIENT_NAME,
            client_version=CLIENT_VERSION,
            protocol_version=PROTOCOL_VERSION,
            languages=["lsl", "luau"],
            features={
                "object_publish": True,
                "error_reporting": True,
                "unified_diagnostics": True,
                "commands": True,
                "debugging": False,
                "breakpoints": False,
                "live_sync": self.host.live_sync,
            },
            challenge_response=answer,  # left out when None
        ))

    async def _ping(self, conn: Connection, params: Any) -> Any:
        # Not SystemPingResponse: the timestamp goes back as it came, null included.
        timestamp = params.get("timestamp") if isinstance(params, dict) else None
        return {"pong": "pong", "timestamp": timestamp, "server_time": now_ms()}

    async def _version(self, conn: Connection, params: Any) -> Any:
        return codec.to_json(SystemVersionResponse(client_name=CLIENT_NAME, client_version=CLIENT_VERSION))

    async def _status(self, conn: Connection, params: Any) -> Any:
        return codec.to_json(SystemStatusResponse())

    async def _list_methods(self, conn: Connection, params: Any) -> Any:
        return sorted(self.requests)

    async def _command_list(self, conn: Connection, params: Any) -> Any:
        return command_list()

    async def _command_execute(self, conn: Connection, params: Any) -> Any:
        command, args = validate_command(params)
        log.info("viewer asks the editor to run %s", command)
        try:
            self.host.listener.on_editor_command(command, args)
        except RpcError:
            raise
        except Exception as exc:
            log.exception("listener on_editor_command raised")
            raise RpcError.standard(INTERNAL_ERROR, f"{command} failed: {exc}") from None
        return {"success": True}
