"""Every failure a file operation can meet, mapped to an errno in one place."""

from __future__ import annotations

import errno

from ..protocol import errors as codes
from ..protocol.errors import RpcError


class FsError(Exception):
    """A failure with the errno the system call should return and a line for the log/status."""

    def __init__(self, err: int, message: str) -> None:
        super().__init__(message)
        self.errno = err
        self.message = message


def from_rpc(exc: RpcError, what: str) -> FsError:
    """Map a viewer error to an errno. Branch on codes, and on detail text only where codes overlap."""
    detail = exc.detail
    if exc.code == codes.ACCESS_DENIED:
        if detail == "Object is not published":
            return FsError(errno.ENOENT, f"{what}: object is no longer published")
        return FsError(errno.EACCES, f"{what}: {detail}")
    if exc.code == codes.INVALID_PARAMS and ("not found" in detail or "not published" in detail):
        return FsError(errno.ENOENT, f"{what}: {detail}")
    if exc.code == codes.REQUEST_TIMEOUT:
        return FsError(errno.ETIMEDOUT, f"{what}: viewer timed out ({detail})")
    if exc.code in (codes.CONNECTION_CLOSED, codes.SERVICE_UNAVAILABLE, codes.AUTH_REQUIRED, codes.SESSION_EXPIRED):
        return FsError(errno.EIO, f"{what}: not connected to the viewer ({detail})")
    if exc.code == codes.TOO_MANY_REQUESTS:
        return FsError(errno.EAGAIN, f"{what}: viewer is busy ({detail})")
    if exc.code == codes.MESSAGE_TOO_LARGE:
        return FsError(errno.EFBIG, f"{what}: {detail}")
    if exc.code == codes.INVALID_PARAMS:
        return FsError(errno.EINVAL, f"{what}: {detail}")
    return FsError(errno.EIO, f"{what}: viewer error {exc.code}: {exc.message}")


def not_connected(what: str, why: str) -> FsError:
    return FsError(errno.EIO, f"{what}: not connected to the viewer ({why})")
