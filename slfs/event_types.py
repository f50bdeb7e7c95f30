"""The events a mount reports (`.slfs/events`, `slfs events`, the control socket's event stream,
MCP), one attrs class each, spelled once: the model builds them, `to_json` gives the JSON they
travel as, and every reader on the far side of the socket gets them back with `event_from_json`
and tells them apart by class. slfs(5), EVENTS, says what each carries.

On the wire an event is {"seq", "time", "type", its fields...}: `seq` is set by the event log
(local/events.py), `time` when the workspace emits it, "type" is the class's `TYPE`. A field whose
default is None is left out while it is None (as the events always left it out); any other field is
always there, null or not.

Reading is liberal, as a client of a newer or older daemon must be: an unknown type is kept whole
(UnknownEvent), unknown fields are kept (`extra`) and a field of the wrong type or missing is
logged, kept raw in `extra` and left out of `to_json` (`dropped`): nothing read ever raises, and
`to_json` gives back what was read."""

from __future__ import annotations

import enum
import logging
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import attrs

log = logging.getLogger(__name__)


class Event(enum.StrEnum):
    CONNECTED = "connected"
    DISCONNECTED = "disconnected"
    PUBLISH = "publish"
    UNPUBLISH = "unpublish"
    CREATE = "create"
    DELETE = "delete"
    COMPILE = "compile"
    SCRIPT_COMPILED = "script.compiled"
    SCRIPT_STATE = "script.state"
    SCRIPT_STATE_REQUESTED = "script.state_requested"
    RUNTIME_DEBUG = "runtime.debug"
    RUNTIME_ERROR = "runtime.error"
    SYNTAX_CHANGE = "syntax.change"
    REFUSED = "refused"
    ERROR = "error"
    RECOVERY = "recovery"
    RESEND = "resend"
    VERSION = "version"
    LIVE_SAVE = "live.save"
    LIVE_SUBSCRIBE = "live.subscribe"
    LIVE_UNSUBSCRIBE = "live.unsubscribe"
    VIEWER_OPEN_FILE = "viewer.open_file"
    VIEWER_MESSAGE = "viewer.message"
    VIEWER_COMMAND = "viewer.command"


# A script's runtime output, as the viewer reports it (the JSON's "type": the event log's readers).
RUNTIME = (Event.RUNTIME_DEBUG, Event.RUNTIME_ERROR)


def _extra() -> Any:
    return attrs.field(factory=dict, repr=False, eq=False)


@attrs.frozen(kw_only=True)
class SlfsEvent:
    """What every event has: where it is in the log (`seq`), when it was emitted (`time`), and what
    a reader kept of the wire that no field holds (`extra`: unknown or unusable fields, raw;
    `dropped`: the fields missing or unusable, which `to_json` leaves out). Bookkeeping, not
    behaviour: each event type is a class of its own below."""

    TYPE: ClassVar[str] = ""

    seq: int | None = None
    time: float | None = None
    extra: dict[str, Any] = _extra()
    dropped: frozenset[str] = attrs.field(default=frozenset(), repr=False, eq=False)

    @property
    def type(self) -> str:
        return self.TYPE

    def to_json(self) -> dict[str, Any]:
        """The event as it is written and sent: seq, time, type, the fields in their order, then
        what was read and not understood."""
        out: dict[str, Any] = {}
        for name in ("seq", "time"):
            value = getattr(self, name)
            if value is not None and name not in self.dropped:
                out[name] = value
        out["type"] = self.type
        for name, omit_none in _wire_fields(type(self)):
            value = getattr(self, name)
            if (value is None and omit_none) or name in self.dropped:
                continue
            out[name] = value
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out


_WIRE_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _wire_fields(cls: type[SlfsEvent]) -> tuple[tuple[str, bool], ...]:
    """(name, left out when None) of each field of `cls` after the common ones."""
    fields = _WIRE_FIELDS.get(cls)
    if fields is None:
        fields = _WIRE_FIELDS[cls] = tuple((f.name, f.default is None) for f in attrs.fields(cls)
                                           if f.name not in ("seq", "time", "extra", "dropped")
                                           and f.metadata.get("wire", True))
    return fields


@attrs.frozen(kw_only=True)
class UnknownEvent(SlfsEvent):
    """An event of a type this slfs does not know (a newer daemon's): kept whole, in `extra`."""

    kind: str = attrs.field(default="", metadata={"wire": False})  # the JSON's "type"

    @property
    def type(self) -> str:
        return self.kind


@attrs.frozen(kw_only=True)
class Connected(SlfsEvent):
    TYPE = Event.CONNECTED
    viewer: str
    version: str
    agent: str
    objects: int


@attrs.frozen(kw_only=True)
class Disconnected(SlfsEvent):
    TYPE = Event.DISCONNECTED
    reason: str


@attrs.frozen(kw_only=True)
class Publish(SlfsEvent):
    TYPE = Event.PUBLISH
    object_id: str
    name: str


@attrs.frozen(kw_only=True)
class Unpublish(SlfsEvent):
    TYPE = Event.UNPUBLISH
    object_id: str
    reason: str | None


@attrs.frozen(kw_only=True)
class Create(SlfsEvent):
    TYPE = Event.CREATE
    path: str
    item_id: str


@attrs.frozen(kw_only=True)
class Delete(SlfsEvent):
    TYPE = Event.DELETE
    path: str
    item_id: str


@attrs.frozen(kw_only=True)
class Compile(SlfsEvent):
    """A compile's answer: an item's (`item_id`) or a live file's (`script_id`, and its item's id
    when it has one). Each diagnostic is {row, column, level, message}, and for a built source the
    `path` and `row` of the source or include line it came from."""

    TYPE = Event.COMPILE
    path: str
    script_id: str | None = None
    item_id: str | None
    compiled: bool
    note: str
    source: str
    diagnostics: list[dict[str, Any]]
    preprocessed: bool
    includes: list[str] | None = None


@attrs.frozen(kw_only=True)
class ScriptCompiled(SlfsEvent):
    TYPE = Event.SCRIPT_COMPILED
    script_id: str
    success: bool


@attrs.frozen(kw_only=True)
class ScriptState(SlfsEvent):
    TYPE = Event.SCRIPT_STATE
    path: str
    item_id: str
    state: str
    was: str | None


@attrs.frozen(kw_only=True)
class ScriptStateRequested(SlfsEvent):
    TYPE = Event.SCRIPT_STATE_REQUESTED
    path: str
    item_id: str
    action: str


@attrs.frozen(kw_only=True)
class RuntimeDebug(SlfsEvent):
    """A script's chat line (model/runtime.py's debug_fields): who spoke, as far as it resolves
    (`scope`: item, object or mount), and what."""

    TYPE = Event.RUNTIME_DEBUG
    scope: str
    object_id: str
    prim_id: str
    item_id: str
    object_name: str
    script_id: str | None = None
    path: str | None = None
    item_name: str | None = None
    channel: str
    message: str


@attrs.frozen(kw_only=True)
class RuntimeError_(SlfsEvent):  # the builtin's name is taken (protocol/types.py names it so too)
    """A script's runtime error (model/runtime.py's error_fields): the speaker as for RuntimeDebug."""

    TYPE = Event.RUNTIME_ERROR
    scope: str
    object_id: str
    prim_id: str
    item_id: str
    object_name: str
    script_id: str | None = None
    path: str | None = None
    item_name: str | None = None
    channel: str
    message: str
    error: str
    line: int
    column: int
    stack: list[str]


@attrs.frozen(kw_only=True)
class SyntaxChange(SlfsEvent):
    TYPE = Event.SYNTAX_CHANGE
    id: str


@attrs.frozen(kw_only=True)
class Refused(SlfsEvent):
    TYPE = Event.REFUSED
    path: str
    errno: str
    message: str


@attrs.frozen(kw_only=True)
class Error(SlfsEvent):
    TYPE = Event.ERROR
    operation: str
    errno: str
    message: str


@attrs.frozen(kw_only=True)
class Recovery(SlfsEvent):
    TYPE = Event.RECOVERY
    path: str
    item_id: str | None
    recovery: str | None
    reason: str
    code: str
    made: bool
    state: str


@attrs.frozen(kw_only=True)
class Resend(SlfsEvent):
    TYPE = Event.RESEND
    path: str
    item_id: str
    recovery: str | None
    outcome: str
    error: str | None = None
    code: str | None = None
    force: bool | None = None


@attrs.frozen(kw_only=True)
class Version(SlfsEvent):
    TYPE = Event.VERSION
    path: str
    origin: str
    digest: str
    item_id: str
    version: int
    size: int


@attrs.frozen(kw_only=True)
class LiveSave(SlfsEvent):
    TYPE = Event.LIVE_SAVE
    name: str
    script_id: str
    bytes: int
    preprocessed: bool


@attrs.frozen(kw_only=True)
class LiveSubscribe(SlfsEvent):
    TYPE = Event.LIVE_SUBSCRIBE
    name: str
    script_id: str
    temp_path: str
    item_id: str | None


@attrs.frozen(kw_only=True)
class LiveUnsubscribe(SlfsEvent):
    TYPE = Event.LIVE_UNSUBSCRIBE
    name: str
    script_id: str
    why: str


@attrs.frozen(kw_only=True)
class ViewerOpenFile(SlfsEvent):
    """The viewer asked to open a file: `opened` (the local path) or `error` (why not)."""

    TYPE = Event.VIEWER_OPEN_FILE
    path: str
    line: int
    error: str | None = None
    opened: str | None = None


@attrs.frozen(kw_only=True)
class ViewerMessage(SlfsEvent):
    TYPE = Event.VIEWER_MESSAGE
    level: str
    message: str


@attrs.frozen(kw_only=True)
class ViewerCommand(SlfsEvent):
    TYPE = Event.VIEWER_COMMAND
    command: str
    params: dict[str, Any]


EVENT_CLASSES: dict[str, type[SlfsEvent]] = {cls.TYPE: cls for cls in (
    Connected, Disconnected, Publish, Unpublish, Create, Delete, Compile, ScriptCompiled, ScriptState,
    ScriptStateRequested, RuntimeDebug, RuntimeError_, SyntaxChange, Refused, Error, Recovery, Resend, Version,
    LiveSave, LiveSubscribe, LiveUnsubscribe, ViewerOpenFile, ViewerMessage, ViewerCommand)}

RUNTIME_EVENTS = (RuntimeDebug, RuntimeError_)


def as_event(event: SlfsEvent | Mapping[str, Any]) -> SlfsEvent:
    """An event, typed: for a reader's helpers that take an event as a caller holds it (its JSON too)."""
    return event if isinstance(event, SlfsEvent) else event_from_json(event)


def path_of(event: SlfsEvent) -> str:
    """The path an event names ("" if none): mount-relative, but a viewer.open_file's is the
    viewer's."""
    path = getattr(event, "path", None)
    return path if isinstance(path, str) else ""


# --- reading -----------------------------------------------------------------------------------------

_told: set[tuple[str, str]] = set()  # (type, field) logged already: once each per process


def event_from_json(obj: Any) -> SlfsEvent:
    """The typed event of a decoded JSON event; never raises (see the module's doc)."""
    if not isinstance(obj, Mapping):
        _tell("?", "event", f"is not an object but {type(obj).__name__}")
        return UnknownEvent(kind="", extra={"event": obj})
    kind = obj.get("type")
    cls = EVENT_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        log.debug("an event of an unknown type %r, kept as it is", kind)
        unknown = structure_as(UnknownEvent, {k: v for k, v in obj.items() if k != "type"})
        return attrs.evolve(unknown, kind=kind if isinstance(kind, str) else "") if kind else unknown
    return structure_as(cls, {k: v for k, v in obj.items() if k != "type"})


E = TypeVar("E", bound=SlfsEvent)


def structure_as(cls: type[E], fields: Mapping[str, Any]) -> E:
    """`fields` (no "type") as an event of `cls`, structured by cattrs with strict hooks (a value of
    the wrong JSON type is refused, never coerced): a field missing or refused takes its default (a
    required one an empty value of its type) and is `dropped`, a refused one's raw value kept in
    `extra` and logged, once per type and field; keys no field names go in `extra` too."""
    conv = _converter()
    spec = _fields_of(cls)
    if fields.keys() == spec.required | (fields.keys() & spec.names):
        try:
            return conv.structure(fields, cls)
        except Exception:  # the field-by-field pass below says what was wrong
            pass
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    dropped: set[str] = set()
    for name, value in fields.items():
        tp = spec.types.get(name)
        if tp is None:
            extra[name] = value  # a newer daemon's field
            continue
        try:
            values[name] = conv.structure(value, tp)
        except Exception as exc:
            _tell(str(cls.TYPE), name, _reason(exc))
            extra[name] = value
            dropped.add(name)
    for name in spec.required - values.keys():
        log.debug("a %s event without %s: read as empty", cls.TYPE, name)
        values[name] = _empty(spec.types[name])
        dropped.add(name)
    return cls(**values, extra=extra, dropped=frozenset(dropped))


@attrs.frozen
class _Fields:
    types: dict[str, Any]  # each wire field's type, resolved
    names: frozenset[str]
    required: frozenset[str]


_FIELDS: dict[type, _Fields] = {}


def _fields_of(cls: type[SlfsEvent]) -> _Fields:
    spec = _FIELDS.get(cls)
    if spec is None:
        fields = [f for f in attrs.fields(attrs.resolve_types(cls))
                  if f.name not in ("extra", "dropped") and f.metadata.get("wire", True)]
        spec = _FIELDS[cls] = _Fields({f.name: f.type for f in fields}, frozenset(f.name for f in fields),
                                      frozenset(f.name for f in fields if f.default is attrs.NOTHING))
    return spec


def _empty(tp: Any) -> Any:
    """The value a required field of type `tp` takes when the event did not carry a usable one."""
    if type(None) in typing.get_args(tp):
        return None
    make = typing.get_origin(tp) or tp  # str, int, float, bool, list or dict: "", 0, 0.0, False, [], {}
    return make() if make in (str, int, float, bool, list, dict) else None


class _Refused(ValueError):
    pass


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) if isinstance(exc, _Refused) else f"cannot be read ({exc!r})"


_CONVERTER: list[Any] = []


def _converter() -> Any:
    """cattrs with strict hooks, made at first use (the CLI's other verbs need no cattrs)."""
    if _CONVERTER:
        return _CONVERTER[0]
    import cattrs

    conv = cattrs.Converter(detailed_validation=False)

    def strict(tp: type, what: str) -> Callable[[Any, Any], Any]:
        def structure(v: Any, _t: Any) -> Any:
            # bool is an int to Python, not to JSON; an integer is a number.
            fits = isinstance(v, (int, float) if tp is float else tp)
            if fits and (tp is bool or not isinstance(v, bool)):
                return v
            raise _Refused(f"must be {what}")
        return structure

    for tp, what in ((str, "a string"), (int, "an integer"), (float, "a number"), (bool, "a boolean")):
        conv.register_structure_hook(tp, strict(tp, what))

    def strict_list(tp: Any) -> Callable[[Any, Any], Any]:
        (item,) = typing.get_args(tp) or (Any,)

        def structure(v: Any, _t: Any) -> Any:
            if not isinstance(v, list):
                raise _Refused("must be an array")
            return [conv.structure(x, item) for x in v]
        return structure

    def strict_dict(tp: Any) -> Callable[[Any, Any], Any]:
        def structure(v: Any, _t: Any) -> Any:
            if not isinstance(v, dict):
                raise _Refused("must be an object")
            return v  # dict[str, Any]: the values as they are
        return structure

    conv.register_structure_hook_factory(lambda t: (typing.get_origin(t) or t) is list, strict_list)
    conv.register_structure_hook_factory(lambda t: (typing.get_origin(t) or t) is dict, strict_dict)
    _CONVERTER.append(conv)
    return conv


def _tell(kind: str, key: str, problem: str) -> None:
    if (kind, key) not in _told:
        _told.add((kind, key))
        log.warning("a %s event's %s %s: ignored", kind, key, problem)
