"""JSON-RPC error codes of the viewer protocol and the errors the protocol layer raises."""

from __future__ import annotations

from typing import Any

# Standard JSON-RPC 2.0 codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

# Server-specific codes defined by the viewer's transport.
CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
AUTH_REQUIRED = -32002
ACCESS_DENIED = -32003
TOO_MANY_REQUESTS = -32004
SERVICE_UNAVAILABLE = -32005
MESSAGE_TOO_LARGE = -32006
SESSION_EXPIRED = -32007

# The fixed label a standard error's message starts with ("Invalid params: <detail>").
STANDARD_LABELS: dict[int, str] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}


class ProtocolError(ValueError):
    """A frame or payload that does not match the protocol; `field` names where."""

    def __init__(self, message: str, field: str = "") -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}" if field else message)


class RpcError(Exception):
    """A JSON-RPC error, received from the peer or to be sent to it."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.data = data

    @classmethod
    def standard(cls, code: int, detail: str) -> RpcError:
        """An error whose message carries the code's fixed label, as the viewer formats it."""
        label = STANDARD_LABELS.get(code)
        return cls(code, f"{label}: {detail}" if label else detail)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out

    @property
    def detail(self) -> str:
        """The message without a standard label."""
        label = STANDARD_LABELS.get(self.code)
        if label and self.message.startswith(label + ": "):
            return self.message[len(label) + 2 :]
        return self.message
