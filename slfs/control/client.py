"""A small blocking client of the control socket (protocol: slfs/control/server.py), and how a
command finds its mount in the registry of running mounts.

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

from ..registry import read_registry

PROTOCOL_VERSION = 1
CONNECT_TIMEOUT = 5.0
REQUEST_TIMEOUT = 60.0

_ids = itertools.count(1)


class ControlError(Exception):
    """A failed command (the daemon's `error` and errno name `code`), or a broken connection."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return self.message


class ShutDown(ControlError):
    """The daemon said {"type":"shutdown"} or closed the connection."""


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
                raise ControlError(f"cannot connect to the control socket {self.socket_path}: "
                                   f"{exc.strerror or exc}", "ECONNREFUSED") from None
            frame = self._read_frame(time.monotonic() + connect_timeout)
            if frame.get("type") != "ready":
                raise ControlError(f"control socket {self.socket_path}: expected a ready frame, got {frame!r}",
                                   "EPROTO")
            versions = frame.get("supportedProtocolVersions") or [frame.get("protocolVersion")]
            if PROTOCOL_VERSION not in versions:
                raise ControlError(f"control socket {self.socket_path}: protocol version(s) {versions} "
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
                    frame = json.loads(line)
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
                    raise ControlError("timed out waiting for the daemon", "ETIMEDOUT")
                self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                raise ControlError("timed out waiting for the daemon", "ETIMEDOUT") from None
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
        """Run one command; its `data`, or ControlError(error, code) when it failed.
        Frames that are not the answer (events, other answers) are skipped."""
        rid = f"c{os.getpid()}-{next(_ids)}"
        self.send({**params, "id": rid, "type": kind})
        deadline = None if _timeout is None else time.monotonic() + _timeout
        while True:
            try:
                frame = self._read_frame(deadline)
            except ControlError as exc:
                if exc.code == "ETIMEDOUT":
                    raise ControlError(f"{kind}: no answer from the daemon within {_timeout:g} s",
                                       "ETIMEDOUT") from None
                raise
            if frame.get("type") != "response" or frame.get("id") != rid:
                continue
            if frame.get("success"):
                return frame.get("data")
            raise ControlError(str(frame.get("error") or f"{kind} failed"), frame.get("code"))

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
                raise ControlError(f"the event stream ended: {frame.get('reason', 'no reason given')}", "EAGAIN")

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


# --- which mount ---------------------------------------------------------------------------------


class NoMount(ControlError):
    pass


def _inside(path: str, mountpoint: str) -> bool:
    mountpoint = mountpoint.rstrip("/") or "/"
    return path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/")


def _containing(path: str, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    hits = [e for e in entries if _inside(path, str(e.get("mountpoint", "")))]
    return max(hits, key=lambda e: len(str(e["mountpoint"]))) if hits else None


def _lookup(path: str, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The mount holding `path`: by its absolute path first (no lookups in the mount), then by the
    real path (a symlink to a mount, such as ~/sl -> /mnt/sl)."""
    hit = _containing(os.path.abspath(path), entries)
    if hit is None:
        try:
            hit = _containing(os.path.realpath(path), entries)
        except OSError:
            hit = None
    return hit


def find_mount(mount: str | None = None, path: str | None = None,
               entries: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The registry entry a command acts on: `--mount MOUNT`, else the mount holding PATH, else the
    mount holding the current directory, else the only running mount."""
    entries = read_registry() if entries is None else entries
    if mount is not None:
        hit = _lookup(mount, entries)
        if hit is None:
            raise NoMount(f"{mount}: not an slfs mount (running: "
                          f"{', '.join(str(e['mountpoint']) for e in entries) or 'none'})", "ENOENT")
        return hit
    if path is not None:
        hit = _lookup(path, entries)
        if hit is not None:
            return hit
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    if cwd is not None:
        hit = _containing(cwd, entries)
        if hit is not None:
            return hit
    if not entries:
        raise NoMount("no slfs mount is running", "ENOENT")
    if len(entries) > 1:
        raise NoMount(f"several mounts are running: {', '.join(str(e['mountpoint']) for e in entries)}; "
                      "use --mount", "EINVAL")
    return entries[0]


def mount_path(entry: dict[str, Any], arg: str) -> str:
    """How to name `arg` to the daemon: its absolute path when it is inside the mount, else the
    argument as given (a relative one is then taken relative to the mount's root)."""
    mountpoint = str(entry["mountpoint"])
    absolute = os.path.abspath(arg)
    if _inside(absolute, mountpoint):
        return absolute
    try:
        real = os.path.realpath(arg)
    except OSError:
        real = ""
    if real and _inside(real, mountpoint):
        return real
    return arg


def connect(entry: dict[str, Any], *, connect_timeout: float = CONNECT_TIMEOUT) -> ControlClient:
    sock = entry.get("socket")
    if not sock:
        raise ControlError(f"{entry.get('mountpoint')}: the daemon has no control socket (an older slfs?)")
    return ControlClient(str(sock), connect_timeout=connect_timeout)
