"""Generic JSON <-> attrs conversion for protocol payloads.

Every payload class is a frozen attrs class whose fields are named as on the wire. A field with no
default is required; a field with a default is optional and left out when encoding when it is None.

Decoding bends where it may and holds where it must:
- A required field (ids, names, item type, content: what slfs acts on) that is missing or of the
  wrong type makes the payload fail with ProtocolError naming the field
  ("object.inventory[2].name: must be a string").
- An optional field of an unexpected type is kept raw in `extra`, reported to `on_ignored` (the
  session logs it once per method and field) and otherwise ignored: the field takes its default.
  Newer viewers changed the type of an optional field once already (`embedded_items`, a list in our
  guess, a count in fact): such a change must never make an item, a prim or a call fail.
- A list of payload objects (an inventory, linked prims) is structural: an element whose required
  fields are malformed fails the payload, because dropping it would read as a deletion.
- Unknown fields are kept in `extra` so nothing the viewer sends is lost, and reported to
  `on_ignored` too.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, Union

import attrs

from .errors import ProtocolError

T = TypeVar("T")

# Called with (field path without list indices, what was wrong) for each optional field ignored.
OnIgnored = Callable[[str, str], None]

UNKNOWN_FIELD = "unknown field"  # the `problem` on_ignored gets for a field no payload class declares
_INDEX = re.compile(r"\[\d+\]")


def field_key(path: str) -> str:
    """`object.inventory[3].vm` -> `object.inventory[].vm`: one key for every element."""
    return _INDEX.sub("[]", path)

_resolved: set[type] = set()


def _describe(tp: Any) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", dict: "an object",
             list: "an array"}
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def _convert(tp: Any, value: Any, path: str, on_ignored: OnIgnored | None = None) -> Any:
    if tp is Any or tp is object:
        return value
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors: list[ProtocolError] = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, path, on_ignored)
            except ProtocolError as exc:
                errors.append(exc)
        raise errors[0] if len(errors) == 1 else ProtocolError("has the wrong type", path)
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            allowed = ", ".join(repr(a) for a in typing.get_args(tp))
            raise ProtocolError(f"must be one of {allowed}", path)
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ProtocolError("must be an array", path)
        (item_tp,) = typing.get_args(tp) or (Any,)
        return [_convert(item_tp, v, f"{path}[{i}]", on_ignored) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ProtocolError("must be an object", path)
        args = typing.get_args(tp)
        val_tp = args[1] if len(args) == 2 else Any
        return {k: _convert(val_tp, v, f"{path}.{k}", on_ignored) for k, v in value.items()}
    if attrs.has(tp):
        return from_json(tp, value, path, on_ignored=on_ignored)
    if tp is bool:
        if not isinstance(value, bool):
            raise ProtocolError("must be a boolean", path)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProtocolError("must be an integer", path)
        if isinstance(value, float):
            if not value.is_integer():
                raise ProtocolError("must be an integer", path)
            return int(value)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProtocolError("must be a number", path)
        return value
    if tp in (str, dict, list):
        if not isinstance(value, tp):
            raise ProtocolError(f"must be {_describe(tp)}", path)
        return value
    raise TypeError(f"unsupported payload type {tp!r}")  # a bug in a payload class, not input


def _fields(cls: type) -> tuple[attrs.Attribute, ...]:  # type: ignore[type-arg]
    if cls not in _resolved:
        attrs.resolve_types(cls, globalns=vars(__import__(cls.__module__, fromlist=["_"])))
        _resolved.add(cls)
    return attrs.fields(cls)


def _structural(tp: Any) -> bool:
    """A list of payload objects: its elements' failures fail the payload (see the module doc)."""
    args = [a for a in typing.get_args(tp) if a is not type(None)] if typing.get_origin(tp) in (
        Union, types.UnionType) else [tp]
    for arg in args:
        if typing.get_origin(arg) is list:
            (item_tp,) = typing.get_args(arg) or (Any,)
            if attrs.has(item_tp):
                return True
    return False


def from_json(cls: type[T], data: Any, path: str = "", *, on_ignored: OnIgnored | None = None) -> T:
    """Build `cls` from a decoded JSON value: strict on required fields, lenient on optional ones."""
    if data is None and all(f.default is not attrs.NOTHING for f in _fields(cls)):
        data = {}  # "params" absent on a method whose parameters are all optional
    if not isinstance(data, dict):
        raise ProtocolError("must be an object", path or cls.__name__)
    kwargs: dict[str, Any] = {}
    known: set[str] = set()
    ignored: dict[str, Any] = {}
    for field in _fields(cls):
        if field.name == "extra":
            continue
        known.add(field.name)
        where = f"{path}.{field.name}" if path else field.name
        if field.name not in data or (data[field.name] is None and field.default is not attrs.NOTHING):
            if field.default is attrs.NOTHING:
                raise ProtocolError("is required", where)
            continue
        value = data[field.name]
        if field.default is attrs.NOTHING:
            kwargs[field.name] = _convert(field.type, value, where, on_ignored)
            continue
        try:
            kwargs[field.name] = _convert(field.type, value, where, on_ignored)
        except ProtocolError as exc:
            if _structural(field.type) and isinstance(value, list):
                raise
            ignored[field.name] = value
            if on_ignored is not None:
                on_ignored(field_key(exc.field or where), exc.reason)
    extra = {k: v for k, v in data.items() if k not in known}
    if on_ignored is not None:
        for key in extra:
            on_ignored(field_key(f"{path}.{key}" if path else key), UNKNOWN_FIELD)
    extra.update(ignored)
    if extra and any(f.name == "extra" for f in _fields(cls)):
        kwargs["extra"] = extra
    return cls(**kwargs)


def _encode(value: Any) -> Any:
    if attrs.has(type(value)):
        return to_json(value)
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def to_json(obj: Any) -> dict[str, Any]:
    """Encode a payload object; optional fields that are None are left out, `extra` is merged."""
    out: dict[str, Any] = {}
    for field in _fields(type(obj)):
        value = getattr(obj, field.name)
        if field.name == "extra":
            continue
        if value is None and field.default is None:
            continue
        out[field.name] = _encode(value)
    for key, value in getattr(obj, "extra", {}).items():
        out.setdefault(key, value)
    return out
