"""A small blocking connection to a mount's control socket (protocol: slfs/control/server.py).

    with ControlClient(entry["socket"]) as c:
        c.request("status")                       # -> the response's data
        for event in c.subscribe(since=0): ...   # blocks; ends when the mount shuts down
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from .. import jsontext
from ..event_types import SlfsEvent, event_from_json
from .client_error import ClientError, ShutDown

PROTOCOL_VERSION = 1
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 60.0

_ids = itertools.count(1)


class ControlClient:
    def __init__(self, socket_path: str | os.PathLike[str], *, connect_timeout: float = CONNECT_TIMEOUT) -> None:
        self.socket_path = os.fspath(socket_path)
        self._buf = b""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.settimeout(connect_timeout)
            try:
                self._sock.connect(self.socket_path)
            except OSError as exc:
                raise ClientError(f"cannot connect to the control socket {self.socket_path}: "
                                  f"{exc.strerror or exc}", "ECONNREFUSED") from None
            frame = self._read_frame(time.monotonic() + connect_timeout)
            if frame.get("type") != "ready":
                raise ClientError(f"control socket {self.socket_path}: expected a ready frame, got {frame!r}",
                                  "EPROTO")
            versions = frame.get("supportedProtocolVersions") or [frame.get("protocolVersion")]
            if PROTOCOL_VERSION not in versions:
                raise ClientError(f"control socket {self.socket_path}: protocol version(s) {versions} "
                                  f"not supported (this client speaks {PROTOCOL_VERSION})", "EPROTO")
            self.ready: dict[str, Any] = frame
        except BaseException:
            self._sock.close()
            raise

    # --- framing -------------------------------------------------------------------------------

    def _read_frame(self, deadline: float | None) -> dict[str, Any]:
        """The next JSON object from the daemon; ShutDown on EOF or a shutdown frame."""
        while True:
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    frame = jsontext.loads(line)
                except ValueError:
                    continue  # not ours to judge; the daemon never sends one
                if not isinstance(frame, dict):
                    continue
                if frame.get("type") == "shutdown":
                    raise ShutDown("the mount is shutting down", "ESHUTDOWN")
                return frame
            if deadline is None:
                self._sock.settimeout(None)
            else:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ClientError("timed out waiting for the daemon", "ETIMEDOUT")
                self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                raise ClientError("timed out waiting for the daemon", "ETIMEDOUT") from None
            except OSError as exc:
                raise ShutDown(f"control connection lost: {exc.strerror or exc}", "ECONNRESET") from None
            if not chunk:
                raise ShutDown("the daemon closed the control connection", "ECONNRESET")
            self._buf += chunk

    def send(self, frame: dict[str, Any]) -> None:
        """Send one raw frame (for tools and tests)."""
        self.send_raw(json.dumps(frame).encode() + b"\n")

    def send_raw(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise ShutDown(f"control connection lost: {exc.strerror or exc}", "ECONNRESET") from None

    def read_frame(self, timeout: float | None = REQUEST_TIMEOUT) -> dict[str, Any]:
        """The next frame of any type (for tools and tests)."""
        return self._read_frame(None if timeout is None else time.monotonic() + timeout)

    # --- commands ------------------------------------------------------------------------------

    def request(self, kind: str, /, _timeout: float | None = REQUEST_TIMEOUT, **params: Any) -> Any:
        """Run one command; its `data`, or ClientError(error, code) when it failed.
        Frames that are not the answer (events, other answers) are skipped."""
        rid = f"c{os.getpid()}-{next(_ids)}"
        self.send({**params, "id": rid, "type": kind})
        deadline = None if _timeout is None else time.monotonic() + _timeout
        while True:
            try:
                frame = self._read_frame(deadline)
            except ClientError as exc:
                if exc.code == "ETIMEDOUT":
                    raise ClientError(f"{kind}: no answer from the daemon within {_timeout:g} s",
                                      "ETIMEDOUT") from None
                raise
            if frame.get("type") != "response" or frame.get("id") != rid:
                continue
            if frame.get("success"):
                return frame.get("data")
            raise ClientError(str(frame.get("error") or f"{kind} failed"), frame.get("code"))

    def subscribe(self, since: int | None = None) -> Iterator[dict[str, Any]]:
        """Events from `since` (a cursor: events after that seq) or from now on; runs until the
        mount shuts down (then it just ends) or the caller stops iterating."""
        params: dict[str, Any] = {} if since is None else {"since": int(since)}
        self.request("subscribe", **params)
        while True:
            try:
                frame = self._read_frame(None)
            except ShutDown:
                return
            if frame.get("type") == "event" and isinstance(frame.get("event"), dict):
                yield frame["event"]
            elif frame.get("type") == "subscription_ended":
                raise ClientError(f"the event stream ended: {frame.get('reason', 'no reason given')}", "EAGAIN")

    def events(self, since: int | None = None) -> Iterator[SlfsEvent]:
        """subscribe(), each event typed (event_types.event_from_json)."""
        for event in self.subscribe(since):
            yield event_from_json(event)

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

