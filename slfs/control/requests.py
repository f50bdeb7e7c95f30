"""The control socket's requests, structured by cattrs before a command sees them.

A request frame is {"id": .., "type": COMMAND, ...parameters}; each command declares the record of
its parameters here, and `structure` turns the frame into it or refuses it with EINVAL naming the
field (`"timeout": "soon"` is a client's mistake, not an internal error). Scalars are strict: a
number where a string is wanted is refused, not turned into one (cattrs' default would call str()),
and a bool is not a number. Keys a command does not know are ignored, as the protocol says of frames.
"""

from __future__ import annotations

import errno
import math
from functools import cache
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.v import format_exception

from ..world.fs_errors import FsError

# How long run/stop/open wait for the viewer to confirm, unless the request says.
CONFIRM_TIMEOUT = 15.0
# How deep a free-form parameter (viewer_command's `params`) may nest: it is sent on to the viewer,
# and encoding a value nested near the interpreter's recursion limit fails deep in the call.
MAX_DEPTH = 32

R = TypeVar("R")


def _seconds(_inst: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a number of seconds, not {value!r}")


@attrs.frozen(kw_only=True)
class NoParams:
    """status, stats, commands, live_list, script_list."""


@attrs.frozen(kw_only=True)
class PathParams:
    """resolve, close, build: a path in the mount (absolute, or relative to it)."""

    path: str | None = None


@attrs.frozen(kw_only=True)
class ResendParams:
    """resend: an item's path, and whether to send over an in-world change since its text was based on it."""

    path: str | None = None
    force: bool = False


@attrs.frozen(kw_only=True)
class ListParams:
    """list (slfs mcp's slfs_list): a folder (default the root), and whether to go down into it."""

    path: str | None = None
    recursive: bool = False


@attrs.frozen(kw_only=True)
class DiagParams:
    path: str | None = None
    wait: float | None = attrs.field(default=None, validator=_seconds)  # seconds, at most 70 (server.py)


@attrs.frozen(kw_only=True)
class StateParams:
    """run, stop, reset."""

    path: str | None = None
    timeout: float = attrs.field(default=CONFIRM_TIMEOUT, validator=_seconds)


@attrs.frozen(kw_only=True)
class EventsParams:
    since: int | None = None
    seconds: float | None = attrs.field(default=None, validator=_seconds)


@attrs.frozen(kw_only=True)
class OpenParams:
    object_id: str = ""
    timeout: float = attrs.field(default=CONFIRM_TIMEOUT, validator=_seconds)


@attrs.frozen(kw_only=True)
class ViewerCommandParams:
    command: str = ""
    params: dict[str, Any] = attrs.field(factory=dict)
    path: str | None = None


@attrs.frozen(kw_only=True)
class FindParams:
    uuid: str = ""


@attrs.frozen(kw_only=True)
class LiveSubscribeParams:
    temp_path: str = ""


def _strict(kind: type, what: str) -> Any:
    def hook(value: Any, _type: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, kind):
            raise TypeError(f"expected {what}, got {type(value).__name__}")
        return value
    return hook


def _flag(value: Any, _type: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def _number(value: Any, _type: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    return float(value)


def depth(value: Any) -> int:
    """How deep objects and arrays nest in a decoded JSON value (a scalar is 0); a walk, not a recursion."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        node, level = todo.pop()
        if isinstance(node, (dict, list)):
            level += 1
            deepest = max(deepest, level)
            todo.extend((child, level) for child in (node.values() if isinstance(node, dict) else node))
    return deepest


def _object(value: Any, _type: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    if depth(value) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return value


def _reason(exc: BaseException, type_: Any) -> str:
    """A field's error in words: ours (the hooks' and validators') as they are, cattrs' otherwise."""
    if isinstance(exc, (TypeError, ValueError)) and str(exc):
        return str(exc)
    return format_exception(exc, type_)


@cache
def _converter() -> cattrs.Converter:
    conv = cattrs.Converter()
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(int, _strict(int, "an integer"))
    conv.register_structure_hook(bool, _flag)  # after int's: a bool is an int to the dispatch
    conv.register_structure_hook(float, _number)
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], _object)
    return conv


def structure(frame: dict[str, Any], params: type[R], command: str) -> R:
    """The frame's parameters as `params`, or FsError(EINVAL) naming what is wrong."""
    names = {f.name for f in attrs.fields(params)}  # type: ignore[arg-type]
    given = {k: v for k, v in frame.items() if k in names}
    try:
        return _converter().structure(given, params)
    except cattrs.BaseValidationError as exc:
        reasons = "; ".join(cattrs.transform_error(exc, path=command, format_exception=_reason))
        raise FsError(errno.EINVAL, f"bad {command} request: {reasons}") from None
