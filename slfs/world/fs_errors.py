"""Every failure a file operation can meet, mapped to an errno in one place."""

from __future__ import annotations

import errno

from ..protocol import rpc_errors as codes
from ..protocol.rpc_errors import RpcError


class FsError(Exception):
    """A failure with the errno the system call should return and a line for the log/status."""

    # Whether the fs layer reports the reason beyond the errno (status, log, event): see NameRefused.
    explain = False

    def __init__(self, err: int, message: str, rpc_code: int | None = None) -> None:
        super().__init__(message)
        self.errno = err
        self.message = message
        self.rpc_code = rpc_code  # the viewer's error code, when the viewer refused
        self.rpc_message = ""  # and its message as the viewer wrote it


class NameRefused(FsError):
    """A name slfs cannot store in-world. The program gets only the errno (mv then guesses "cannot
    move ... to a subdirectory of itself"), so the fs layer also puts the reason in the status, the
    log and an event (fs/guarded.py, Operations.explain)."""

    explain = True


class Refused(FsError):
    """A refusal whose errno says too little (mv prints only "Operation not permitted"): the fs
    layer puts the reason in the status, the log and an event, as for NameRefused."""

    explain = True


class CallCut(FsError):
    """The link to the viewer dropped with the call sent or about to be: whether the viewer acted
    on it is unknown (EIO unless the caller finds out: Saver._resend_cut_save)."""


def from_rpc(exc: RpcError, what: str) -> FsError:
    """Map a viewer error to an errno (see _map); the error keeps the viewer's code."""
    err = _map(exc, what)
    err.rpc_code = exc.code
    err.rpc_message = exc.message
    return err


def _map(exc: RpcError, what: str) -> FsError:
    """Map a viewer error to an errno. Branch on codes, and on detail text only where codes overlap."""
    detail = exc.detail
    if exc.code == codes.ACCESS_DENIED:
        if detail == "Object is not published":
            return FsError(errno.ENOENT, f"{what}: object is no longer published")
        return FsError(errno.EACCES, f"{what}: {detail}")
    if exc.code == codes.INVALID_PARAMS and ("not found" in detail or "not published" in detail):
        return FsError(errno.ENOENT, f"{what}: {detail}")
    if exc.code == codes.SERVICE_UNAVAILABLE:
        # Newer viewers: "The object's region is not connected" (a region restart, a teleport, a
        # crossing). Transient: callers retry first; what persists is "try again later".
        return FsError(errno.EAGAIN, f"{what}: {detail or 'viewer temporarily unavailable'}; try again later")
    if exc.code == codes.REQUEST_TIMEOUT:
        return FsError(errno.ETIMEDOUT, f"{what}: viewer timed out ({detail})")
    if exc.code in (codes.CONNECTION_CLOSED, codes.AUTH_REQUIRED, codes.SESSION_EXPIRED):
        return FsError(errno.EIO, f"{what}: not connected to the viewer ({detail})")
    if exc.code == codes.TOO_MANY_REQUESTS:
        return FsError(errno.EAGAIN, f"{what}: viewer is busy ({detail})")
    if exc.code == codes.MESSAGE_TOO_LARGE:
        return FsError(errno.EFBIG, f"{what}: {detail}")
    if exc.code == codes.INVALID_PARAMS:
        return FsError(errno.EINVAL, f"{what}: {detail}")
    if exc.code == codes.METHOD_NOT_FOUND:
        # G1 has no command.list, object.list, set_running or reset (viewer-source.md §2).
        return FsError(errno.EOPNOTSUPP, f"{what}: this viewer cannot do that (it has no such method: "
                       "an older viewer)")
    return FsError(errno.EIO, f"{what}: viewer error {exc.code}: {exc.message}")


def region_down(exc: RpcError) -> bool:
    """-32005: the prim's region is not connected (or the viewer is briefly unavailable)."""
    return exc.code == codes.SERVICE_UNAVAILABLE


def item_briefly_missing(exc: RpcError) -> bool:
    """Right after a save some viewers report an existing item as not found for a moment."""
    return exc.code == codes.INVALID_PARAMS and "Item not found in prim inventory" in exc.message


def transient_read_error(exc: RpcError) -> bool:
    return region_down(exc)


def transient_save_error(exc: RpcError) -> bool:
    return region_down(exc) or item_briefly_missing(exc)


def not_connected(what: str, why: str) -> FsError:
    return FsError(errno.EIO, f"{what}: not connected to the viewer ({why})")
