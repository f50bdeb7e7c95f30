"""Protocol layer: JSON-RPC 2.0 framing, error codes and payload types. No I/O here."""

from . import errors, types
from .codec import from_json, to_json
from .errors import ProtocolError, RpcError
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

__all__ = [
    "errors", "types", "from_json", "to_json", "ProtocolError", "RpcError", "Message",
    "Notification", "Request", "RequestId", "Response", "encode", "encode_error",
    "encode_notification", "encode_request", "encode_result", "parse_message",
]
