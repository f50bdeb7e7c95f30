"""The payload classes' types as the codec (codec.py) reads them: each payload class marked with
the index-free key of the place it sits in a payload (`Annotated[cls, At(key)]`), and the questions
the codec asks of a field's type (optional? a list of payloads? its default?)."""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

import attrs

DICT_KEY = "\0"  # in a static key: where the key of an enclosing mapping goes


@attrs.frozen
class At:
    """Annotated metadata of a payload class: its index-free key in the payload, and whether null
    stands for its (None) default there."""

    key: str
    nullable: bool = False


def is_marked(tp: Any) -> bool:
    return typing.get_origin(tp) is Annotated and isinstance(tp.__metadata__[0], At)


def strip_none(tp: Any) -> tuple[Any, bool]:
    """(the type without None, whether None was in it)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported payload type {tp!r}")  # a bug in a payload class, not input
        return args[0], True
    return tp, False


def mark(tp: Any, key: str) -> Any:
    """`tp` with each payload class in it annotated with its key (list elements `key[]`)."""
    if attrs.has(tp):
        return Annotated[tp, At(key)]
    origin = typing.get_origin(tp)
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return types.GenericAlias(list, (mark(item, f"{key}[]"),))
    if origin is dict:
        k, v = typing.get_args(tp) or (Any, Any)
        return types.GenericAlias(dict, (k, mark(v, f"{key}.{DICT_KEY}")))
    if tp in (Any, object, str, int, float, bool, list, dict) or origin is typing.Literal:
        return tp
    raise TypeError(f"unsupported payload type {tp!r}")  # a bug in a payload class, not input


def has_payloads(tp: Any) -> bool:
    return is_marked(tp) or any(has_payloads(a) for a in typing.get_args(tp))


def structural(tp: Any) -> bool:
    """A list of payload objects: its elements' failures fail the payload (see the module doc)."""
    return typing.get_origin(tp) is list and bool(typing.get_args(tp)) and attrs.has(typing.get_args(tp)[0])


def default_of(field: attrs.Attribute) -> Callable[[], Any]:  # type: ignore[type-arg]
    default: Any = field.default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        factory: Callable[[], Any] = default.factory
        return factory
    return lambda: default
