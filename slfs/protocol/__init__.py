"""Protocol layer: JSON-RPC 2.0 framing, error codes and payload types. No I/O here.

The names below are loaded on first use (PEP 562): a CLI verb that needs only `text` or `ids`
does not pay for cattrs and the payload types at every start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import rpc_errors, types
    from .codec import from_json, to_json
    from .jsonrpc import (
        Message,
        Notification,
        Request,
        RequestId,
        Response,
        encode,
        encode_error,
        encode_notification,
        encode_request,
        encode_result,
        parse_message,
    )
    from .rpc_errors import ProtocolError, RpcError

_FROM = {
    "from_json": "codec", "to_json": "codec", "ProtocolError": "rpc_errors", "RpcError": "rpc_errors",
    **{name: "jsonrpc" for name in ("Message", "Notification", "Request", "RequestId", "Response", "encode",
                                    "encode_error", "encode_notification", "encode_request", "encode_result",
                                    "parse_message")},
}

__all__ = [
    "rpc_errors", "types", "from_json", "to_json", "ProtocolError", "RpcError", "Message",
    "Notification", "Request", "RequestId", "Response", "encode", "encode_error",
    "encode_notification", "encode_request", "encode_result", "parse_message",
]


def __getattr__(name: str) -> Any:
    if name in ("rpc_errors", "types"):
        return importlib.import_module(f".{name}", __name__)
    if name in _FROM:
        value = getattr(importlib.import_module(f".{_FROM[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
