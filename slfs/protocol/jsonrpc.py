"""JSON-RPC 2.0 framing: parse one text frame into a message, encode messages back.

Quirks of the viewer handled here: a response may lack `result` (newer viewers omit it when the
handler returned nothing), request ids may be integers or strings (`rpc_<n>` from the viewer),
and `"id": null` counts as a request.
"""

from __future__ import annotations

import json
import json.decoder
import re
from collections.abc import Callable, Generator
from typing import Any, Union

import attrs

from ..gcpause import paused_gc
from .rpc_errors import ProtocolError, RpcError

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
    except (ValueError, UnicodeDecodeError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"invalid JSON ({_why(exc)})") from None
    return parse_object(obj)


def parse_message_steps(text: str, step_chars: int = 1 << 18) -> Generator[None, None, Message]:
    """parse_message in steps: a generator that yields after about every `step_chars` characters
    parsed (the caller lets other work run there) and returns the message. The same message, or the
    same ProtocolError, as parse_message (see loads_steps). The caller pauses the collector."""
    try:
        obj = yield from loads_steps(text, step_chars)
    except (ValueError, RecursionError, MemoryError) as exc:
        raise ProtocolError(f"invalid JSON ({_why(exc)})") from None
    return parse_object(obj)


def _why(exc: BaseException) -> str:
    """What was wrong with the text: the decoder's words, or its depth or size."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, MemoryError):
        return "too large to decode"
    return str(exc)


# --- json.loads in steps ------------------------------------------------------------------------
#
# A 20 MB object.list answer takes json.loads a third of a second, holding the GIL throughout. Its
# envelope ({"jsonrpc", "id", "result": {"objects": [...]}}) is walked here: the punctuation of the
# outer objects and arrays (down to _WALK_DEPTH), their keys with the stdlib's scanstring and every
# other value, each element of `objects` among them, with the stdlib decoder's raw_decode. Anything
# unexpected (a syntax error included) makes it give the text to json.loads as a whole, which then
# raises exactly what it raises (or returns what it returns).
# Not ijson, the library made for incremental parsing: measured here on a 21 MB object.list, its C
# backend (yajl2_c) took 1.05 s where json.loads takes 0.29 s, turned the escape of a lone surrogate
# into "?" (names must come through as sent, issue of newer viewers), and overflows on integers
# json.loads reads. Every value is decoded by the stdlib's own decoder; only the envelope is walked.

_DECODER = json.JSONDecoder()
# What the stdlib decoder itself uses (typeshed does not declare them): JSON's whitespace, and its
# string scanner (the C one), called with the index after the opening quote.
_WHITESPACE: re.Pattern[str] = json.decoder.WHITESPACE  # type: ignore[attr-defined]
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_WALK_DEPTH = 3  # objects and arrays nested deeper than this are decoded whole


class _Unexpected(Exception):
    """The walk met something it leaves to json.loads."""


def loads_steps(text: str, step_chars: int = 1 << 18) -> Generator[None, None, Any]:
    """json.loads(text) in steps (see above): yields between values, returns what json.loads
    returns, raises what it raises."""
    try:
        idx = _ws(text, 0)
        if text[idx:idx + 1] not in ("{", "["):
            raise _Unexpected
        walk = _Walk(text, step_chars)
        obj, end = yield from walk.value(idx, 0)
        if _ws(text, end) != len(text):
            raise _Unexpected  # extra data
    except (_Unexpected, ValueError, RecursionError):
        return json.loads(text)  # raises what it raises: a RecursionError again for text nested too deeply
    return obj


def _ws(text: str, idx: int) -> int:
    """The index of the first character from `idx` on that is not JSON whitespace."""
    match = _WHITESPACE.match(text, idx)
    return match.end() if match is not None else idx


class _Walk:
    def __init__(self, text: str, step_chars: int) -> None:
        self.text = text
        self.step_chars = step_chars
        self.mark = 0  # where the last step ended

    def ws(self, idx: int) -> int:
        return _ws(self.text, idx)

    def value(self, idx: int, depth: int) -> Generator[None, None, tuple[Any, int]]:
        """The value at idx (no whitespace before it) and the index after it."""
        text = self.text
        c = text[idx:idx + 1]
        if depth < _WALK_DEPTH and c == "{":
            return (yield from self.members(idx + 1, depth))
        if depth < _WALK_DEPTH and c == "[":
            return (yield from self.elements(idx + 1, depth))
        obj, end = _DECODER.raw_decode(text, idx)
        if end - self.mark >= self.step_chars:
            self.mark = end
            yield None
        return obj, end

    def members(self, idx: int, depth: int) -> Generator[None, None, tuple[Any, int]]:
        text = self.text
        obj: dict[str, Any] = {}
        idx = self.ws(idx)
        if text[idx:idx + 1] == "}":
            return obj, idx + 1
        while True:
            if text[idx:idx + 1] != '"':
                raise _Unexpected
            key, idx = _scanstring(text, idx + 1)
            idx = self.ws(idx)
            if text[idx:idx + 1] != ":":
                raise _Unexpected
            value, idx = yield from self.value(self.ws(idx + 1), depth + 1)
            obj[key] = value
            idx = self.ws(idx)
            c = text[idx:idx + 1]
            if c == "}":
                return obj, idx + 1
            if c != ",":
                raise _Unexpected
            idx = self.ws(idx + 1)

    def elements(self, idx: int, depth: int) -> Generator[None, None, tuple[Any, int]]:
        text = self.text
        out: list[Any] = []
        idx = self.ws(idx)
        if text[idx:idx + 1] == "]":
            return out, idx + 1
        while True:
            value, idx = yield from self.value(idx, depth + 1)
            out.append(value)
            idx = self.ws(idx)
            c = text[idx:idx + 1]
            if c == "]":
                return out, idx + 1
            if c != ",":
                raise _Unexpected
            idx = self.ws(idx + 1)


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
