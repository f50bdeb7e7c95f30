"""Errors raised by the session layer to callers of ViewerSession.call()."""

from __future__ import annotations

from slfs.protocol.errors import CONNECTION_CLOSED, REQUEST_TIMEOUT, RpcError


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
