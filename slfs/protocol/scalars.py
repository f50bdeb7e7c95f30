"""Strict structuring hooks for the protocol's scalars: a JSON value of the wrong type is refused in
the protocol's words ("must be a string"), never coerced (cattrs' defaults would call str() or
int() on it). The codec (codec.py) decides what a refusal means: a required field fails its
payload, an optional one is ignored and reported.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from attrs import NOTHING


class Invalid(ValueError):
    """A value of the wrong JSON type (or not among a Literal's values), in the protocol's words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason



REQUIRED: Any = NOTHING  # `default` of a hook for a required field: None is an error, not a default
Hook = Callable[[Any, Any], Any]


def _str_hook(default: Any = REQUIRED) -> Hook:
    def structure_str(v: Any, _t: Any) -> Any:
        if isinstance(v, str):
            return v
        if v is None and default is not REQUIRED:
            return default
        raise Invalid("must be a string")

    return structure_str


def _int_hook(default: Any = REQUIRED) -> Hook:
    def structure_int(v: Any, _t: Any) -> Any:
        if v.__class__ is int:
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if v is None and default is not REQUIRED:
            return default
        raise Invalid("must be an integer")

    return structure_int


def _float_hook(default: Any = REQUIRED) -> Hook:
    def structure_float(v: Any, _t: Any) -> Any:
        if isinstance(v, (float, int)) and not isinstance(v, bool):
            return v
        if v is None and default is not REQUIRED:
            return default
        raise Invalid("must be a number")

    return structure_float


def _bool_hook(default: Any = REQUIRED) -> Hook:
    def structure_bool(v: Any, _t: Any) -> Any:
        if v is True or v is False:
            return v
        if v is None and default is not REQUIRED:
            return default
        raise Invalid("must be a boolean")

    return structure_bool


def literal_hook(tp: Any, default: Any = REQUIRED) -> Hook:
    values = typing.get_args(tp)
    reason = "must be one of " + ", ".join(repr(a) for a in values)

    def structure_literal(v: Any, _t: Any) -> Any:
        if v in values:
            return v
        if v is None and default is not REQUIRED:
            return default
        raise Invalid(reason)

    return structure_literal


SCALARS: dict[Any, Callable[[Any], Hook]] = {str: _str_hook, int: _int_hook, float: _float_hook, bool: _bool_hook}


def scalar_hook(tp: Any, default: Any) -> Hook | None:
    if typing.get_origin(tp) is typing.Literal:
        return literal_hook(tp, default)
    make = SCALARS.get(tp)
    return make(default) if make is not None else None


def passthrough(v: Any, _t: Any) -> Any:
    return v
