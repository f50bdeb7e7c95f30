"""JSON-RPC 2.0 framing: parse one text frame into a message, encode messages back.

Quirks of the viewer handled here: a response may lack `result` (newer viewers omit it when the
handler returned nothing), request ids may be integers or strings (`rpc_<n>` from the viewer),
and `"id": null` counts as a request.
"""

from __future__ import annotations

import json
from typing import Any, Union

import attrs

from .errors import ProtocolError, RpcError
from .gcpause import paused_gc

RequestId = Union[int, str, None]


@attrs.frozen
class Request:
    id: RequestId
    method: str
    params: Any = None


@attrs.frozen
class Notification:
    method: str
    params: Any = None


@attrs.frozen
class Response:
    id: RequestId
    result: Any = None
    error: RpcError | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


Message = Union[Request, Notification, Response]


def _parse_error(obj: Any) -> RpcError:
    if not isinstance(obj, dict):
        raise ProtocolError("must be an object", "error")
    code = obj.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        raise ProtocolError("must be an integer", "error.code")
    message = obj.get("message", "")
    if not isinstance(message, str):
        raise ProtocolError("must be a string", "error.message")
    return RpcError(code, message, obj.get("data"))


def _check_id(value: Any) -> RequestId:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise ProtocolError("must be an integer, a string or null", "id")


# Frames from this size on are parsed with the cycle collector paused (see gcpause).
_BIG_FRAME = 1 << 16


def parse_message(text: str | bytes) -> Message:
    """Parse one frame. Raises ProtocolError for anything that is not a single JSON-RPC message."""
    try:
        if len(text) >= _BIG_FRAME:
            with paused_gc():
                obj = json.loads(text)
        else:
            obj = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise ProtocolError(f"invalid JSON ({exc})") from None
    return parse_object(obj)


def parse_object(obj: Any) -> Message:
    if isinstance(obj, list):
        raise ProtocolError("batch requests are not supported")
    if not isinstance(obj, dict):
        raise ProtocolError("a message must be a JSON object")
    if obj.get("jsonrpc") != "2.0":
        raise ProtocolError("must be \"2.0\"", "jsonrpc")
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str) or not method:
            raise ProtocolError("must be a non-empty string", "method")
        params = obj.get("params")
        if "params" in obj and not isinstance(params, (dict, list)):
            raise ProtocolError("must be an object or an array", "params")
        if "id" in obj:
            return Request(_check_id(obj["id"]), method, params)
        return Notification(method, params)
    if "id" not in obj:
        raise ProtocolError("a response needs an id", "id")
    rid = _check_id(obj["id"])
    if "error" in obj and obj["error"] is not None:
        if "result" in obj:
            raise ProtocolError("a response carries result or error, not both", "result")
        return Response(rid, None, _parse_error(obj["error"]))
    return Response(rid, obj.get("result"))


def _dump(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def encode_request(rid: RequestId, method: str, params: Any = None) -> str:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        out["params"] = params
    return _dump(out)


def encode_notification(method: str, params: Any = None) -> str:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = params
    return _dump(out)


def encode_result(rid: RequestId, result: Any, *, omit_null: bool = False) -> str:
    """A success response; `omit_null` drops a null result the way newer viewers do."""
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": rid}
    if result is not None or not omit_null:
        out["result"] = result
    return _dump(out)


def encode_error(rid: RequestId, error: RpcError) -> str:
    return _dump({"jsonrpc": "2.0", "id": rid, "error": error.to_json()})


def encode(message: Message) -> str:
    if isinstance(message, Request):
        return encode_request(message.id, message.method, message.params)
    if isinstance(message, Notification):
        return encode_notification(message.method, message.params)
    if message.error is not None:
        return encode_error(message.id, message.error)
    return encode_result(message.id, message.result)
