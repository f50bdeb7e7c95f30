"""Errors raised by the session layer to callers of ViewerSession.call()."""

from __future__ import annotations

from slfs.protocol.rpc_errors import CONNECTION_CLOSED, MESSAGE_TOO_LARGE, REQUEST_TIMEOUT, RpcError


class NotConnected(RpcError):
    """No authenticated connection to the viewer, or it dropped while the call was pending."""

    def __init__(self, message: str = "Not connected to the viewer") -> None:
        super().__init__(CONNECTION_CLOSED, message)


class CallTimeout(RpcError):
    """The viewer did not answer a call within its timeout."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(REQUEST_TIMEOUT, f"Request timed out: {method} after {timeout:g} s")
        self.method = method
        self.timeout = timeout


class MessageTooLarge(RpcError):
    """A message we would send is over the viewer's limit: refused here, before it closes the
    connection with 1009 (64 KB before session.ok, 16 MB after: the newer protocol document)."""

    def __init__(self, what: str, size: int, limit: int) -> None:
        super().__init__(MESSAGE_TOO_LARGE, f"{what} would be {size} bytes, over the viewer's limit of "
                         f"{limit} bytes; not sent")
        self.size = size
        self.limit = limit
