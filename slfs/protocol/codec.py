"""JSON <-> attrs conversion for protocol payloads, built on cattrs.

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
- A payload class that declares `dropped` (the records the model merges on update) gets the names
  of its optional fields ignored that way, so the model can tell "sent, but unusable" (keep what it
  knew) from "not sent" (what absence means). A null is no such field: it stands for the default.
- Unknown fields are kept in `extra` so nothing the viewer sends is lost, and reported to
  `on_ignored` too.
- `on_ignored(key, problem)` gets index-free keys (`object.inventory[].vm`), each at most once per
  call. Types are checked, never coerced: an integer accepts an integral float, not a boolean.

How that maps onto cattrs. Each payload class, at each place it sits in a payload (its index-free
key, marked on the type as `Annotated[cls, At(key)]`), gets one structure hook from a hook factory,
built from two functions cattrs generates for it (`make_dict_structure_fn`):
- the fast one, from a converter without detailed validation, with strict hooks for the scalars,
  lists and dicts: it decodes a well-formed object in one pass of generated code;
- the lenient one, generated on first need with detailed validation, whose optional fields are
  wrapped: a field that fails its strict hook is reported, kept raw in `extra` and takes its
  default; a required field that fails raises cattrs' `ClassValidationError`, a bad element of a
  list (or mapping) of payloads its `IterableValidationError`, both noted with the place.
The hook tries the fast function and falls back to the lenient one for that object only, so one odd
item costs one item's slow decode, not the payload's. Unknown fields are split off into `extra`
before either runs. A payload that fails becomes a ProtocolError whose field path is read from the
notes cattrs attaches to its exception groups (attribute names, list indices, mapping keys), and
what was reported past that first failure is taken back, so `on_ignored` hears exactly what a
field-by-field decode that stops there would have said. Encoding is cattrs' generated
unstructuring, with None optionals left out and `extra` merged.
"""

from __future__ import annotations

import gc
import re
import typing
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Annotated, Any, TypeAlias, TypeVar

import attrs
import cattrs
from attrs import NOTHING, AttrsInstance
from cattrs.cols import list_structure_factory
from cattrs.errors import AttributeValidationNote, IterableValidationError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, mapping_structure_factory, override

from .payload_types import DICT_KEY, At, default_of, has_payloads, is_marked, mark, strip_none, structural
from .rpc_errors import ProtocolError
from .scalars import REQUIRED, SCALARS, Hook, Invalid, literal_hook, passthrough, scalar_hook

T = TypeVar("T")

# Called with (field path without list indices, what was wrong) for each optional field ignored.
OnIgnored = Callable[[str, str], None]
# What a request's params may be: a payload object (encoded with to_json), a dict, or nothing.
RequestParams: TypeAlias = "AttrsInstance | Mapping[str, Any] | None"

UNKNOWN_FIELD = "unknown field"  # the `problem` on_ignored gets for a field no payload class declares
_INDEX = re.compile(r"\[\d+\]")


def field_key(path: str) -> str:
    """`object.inventory[3].vm` -> `object.inventory[].vm`: one key for every element."""
    return _INDEX.sub("[]", path)


# --- per-call state -------------------------------------------------------------------------------


@attrs.define
class _Call:
    """One from_json call: what is reported, what is set aside, where the decodes under way are."""

    on_ignored: OnIgnored | None
    # (key, problem) in the order a field-by-field decode meets them; a decode that fails takes back
    # what it reported past its first failure, as a decode that stops there would not have said it.
    reports: list[tuple[str, str]] = attrs.Factory(list)
    # (field name, raw value) of optional fields ignored by the lenient decodes under way, innermost
    # last: each decode takes its own entries into its object's `extra`.
    stash: list[tuple[str, Any]] = attrs.Factory(list)
    # For each lenient decode under way: where in `reports` each of its fields' reports begin.
    starts: list[dict[str, int]] = attrs.Factory(list)
    mapping_keys: list[Any] = attrs.Factory(list)  # keys of the mappings of payloads being decoded
    # Objects of classes that share their values (see _shared), by (class, fields, their types).
    shared: dict[Any, Any] = attrs.Factory(dict)

    def fill(self, key: str) -> str:
        """A static key with the keys of the enclosing mappings put in."""
        if DICT_KEY not in key:
            return key
        parts = key.split(DICT_KEY)
        return "".join(p + str(k) for p, k in zip(parts, self.mapping_keys, strict=False)) + parts[-1]

    def report(self, key: str, problem: str) -> None:
        if self.on_ignored is not None:
            self.reports.append((key, problem))

    def flush(self) -> None:
        """Tell on_ignored each key once, under its index-free form."""
        if self.on_ignored is None:
            return
        raw: set[str] = set()
        told: set[str] = set()
        for key, problem in self.reports:
            if key in raw:
                continue
            raw.add(key)
            shown = field_key(key)
            if shown not in told:
                told.add(shown)
                self.on_ignored(shown, problem)


_CALL: ContextVar[_Call] = ContextVar("slfs_codec_call")


# --- the converters -----------------------------------------------------------------------------------


def _converter(lenient: bool) -> cattrs.Converter:
    """The strict hooks for everything but payload classes, and the factory for those.

    The fast converter (`lenient` False) leaves everything to cattrs' generated code, no detailed
    validation. The lenient one validates in detail (each failure noted with its place) and stops a
    list or mapping of payloads at its first bad element, as a field-by-field decode would."""
    conv = cattrs.Converter(detailed_validation=lenient)
    for tp, make in SCALARS.items():
        conv.register_structure_hook(tp, make(REQUIRED))
    conv.register_structure_hook_factory(lambda t: typing.get_origin(t) is typing.Literal, literal_hook)

    def is_list(t: Any) -> bool:
        return t is list or typing.get_origin(t) is list

    @conv.register_structure_hook_factory(is_list)
    def strict_list(tp: Any, conv: cattrs.Converter) -> Hook:
        args = typing.get_args(tp)
        if lenient and args and is_marked(args[0]):
            return _payload_list_hook(args[0], conv)
        elements = list_structure_factory(tp, conv)

        def structure_list(v: Any, t: Any) -> Any:
            if isinstance(v, list):
                return elements(v, t)
            raise Invalid("must be an array")

        return structure_list

    def is_dict(t: Any) -> bool:
        return t is dict or typing.get_origin(t) is dict

    @conv.register_structure_hook_factory(is_dict)
    def strict_dict(tp: Any, conv: cattrs.Converter) -> Hook:
        args = typing.get_args(tp)
        if len(args) == 2 and is_marked(args[1]):
            return _payload_mapping_hook(args[1], conv)
        values = mapping_structure_factory(tp, conv, key_type=Any)  # keys are taken as they are

        def structure_dict(v: Any, t: Any) -> Any:
            if isinstance(v, dict):
                return values(v, t)
            raise Invalid("must be an object")

        return structure_dict

    conv.register_structure_hook_factory(is_marked, lambda t: _payload_hook(t.__origin__, t.__metadata__[0]))
    return conv


def _payload_list_hook(element_type: Any, conv: cattrs.Converter) -> Hook:
    """Lenient side: a list of payload objects, failing at its first bad element, noted by index."""
    hook = conv.get_structure_hook(element_type)

    def structure_payload_list(v: Any, t: Any) -> Any:
        if not isinstance(v, list):
            raise Invalid("must be an array")
        out = []
        for i, element in enumerate(v):
            try:
                out.append(hook(element, element_type))
            except Exception as exc:
                exc.__notes__ = [*getattr(exc, "__notes__", []),
                                 IterableValidationNote(f"Structuring {t} @ index {i}", i, element_type)]
                raise IterableValidationError(f"While structuring {t!r}", [exc], list) from None
        return out

    return structure_payload_list


def _payload_mapping_hook(value_type: Any, conv: cattrs.Converter) -> Hook:
    """A mapping of payload objects: each value decoded with its key known (for the keys reported);
    on the lenient side a bad value fails it, noted by key."""
    hook = conv.get_structure_hook(value_type)
    detailed = conv.detailed_validation

    def structure_payload_mapping(v: Any, _t: Any) -> Any:
        if not isinstance(v, dict):
            raise Invalid("must be an object")
        keys = _CALL.get().mapping_keys
        out: dict[Any, Any] = {}
        for k, value in v.items():
            keys.append(k)
            try:
                out[k] = hook(value, value_type)
            except Exception as exc:
                if not detailed:
                    raise
                exc.__notes__ = [*getattr(exc, "__notes__", []),
                                 IterableValidationNote(f"Structuring mapping value @ key {k!r}", k, value_type)]
                raise IterableValidationError("While structuring a mapping", [exc], dict) from None
            finally:
                keys.pop()
        return out

    return structure_payload_mapping


_FAST = _converter(lenient=False)
_LENIENT = _converter(lenient=True)
_HOOKS: dict[tuple[type, At], Hook] = {}


def _payload_hook(cls: type, at: At) -> Hook:
    hook = _HOOKS.get((cls, at))
    if hook is None:
        hook = _HOOKS[(cls, at)] = _make_payload_hook(cls, at)
    return hook


def _field_hooks(cls: type, prefix: str, conv: cattrs.Converter, lenient: bool) -> dict[str, Any]:
    """cattrs overrides: the struct hook of every field of `cls`, strict or (lenient) forgiving."""
    out: dict[str, Any] = {"extra": override(struct_hook=passthrough)}
    if _declares_dropped(cls):
        out["dropped"] = override(struct_hook=passthrough)
    for field in attrs.fields(cls):
        if field.name in _BOOKKEEPING:
            continue
        tp, nullable = strip_none(field.type)
        if tp is Any or tp is object:
            continue  # taken as it is
        optional = field.default is not NOTHING
        factory = isinstance(field.default, attrs.Factory)  # type: ignore[arg-type]
        key = prefix + field.name
        if optional and not factory:
            hook = scalar_hook(tp, field.default)  # null is the default, in the same call
        else:
            hook = scalar_hook(tp, None if nullable else REQUIRED)
            if hook is not None and factory:
                hook = _or_default(hook, default_of(field))
        marked = mark(tp, key)
        if hook is None:
            if attrs.has(tp):
                null_default = nullable or (optional and field.default is None)
                hook = conv.get_structure_hook(Annotated[tp, At(key, null_default)])
                if optional and field.default is not None:
                    hook = _or_default(hook, default_of(field))
            else:
                hook = conv.get_structure_hook(marked)
                if optional:
                    hook = _or_default(hook, default_of(field))
                elif nullable:
                    hook = _or_default(hook, lambda: None)
        if lenient and (optional or has_payloads(marked)):
            hook = _tracked(field.name, hook, key, optional, structural(tp), default_of(field))
        out[field.name] = override(struct_hook=hook)
    return out


_BOOKKEEPING = ("extra", "dropped")  # fields of a payload class that are not wire fields


def _declares_dropped(cls: type) -> bool:
    return "dropped" in attrs.fields_dict(cls)  # type: ignore[arg-type]


def _or_default(hook: Hook, default: Callable[[], Any]) -> Hook:
    def structure_or_default(v: Any, t: Any) -> Any:
        return default() if v is None else hook(v, t)

    return structure_or_default


def _tracked(name: str, hook: Hook, key: str, optional: bool, structural: bool,
             default: Callable[[], Any]) -> Hook:
    """A field's hook in a lenient decode: it notes where the field's reports begin and, for an
    optional field that fails its strict hook, reports it, sets its raw value aside for `extra` and
    gives the default. A malformed element of a structural list still fails."""

    def structure_leniently(v: Any, t: Any) -> Any:
        call = _CALL.get()
        call.starts[-1][name] = len(call.reports)
        if not optional:
            return hook(v, t)
        try:
            return hook(v, t)
        except Exception as exc:
            if structural and isinstance(v, list):
                raise
            where, reason = _locate(exc, call.fill(key))
            _forget(exc)
        call.report(where, reason)
        call.stash.append((name, v))
        return default()

    return structure_leniently


def _make_payload_hook(cls: type, at: At) -> Hook:
    attrs.resolve_types(cls)
    fields = [f for f in attrs.fields(cls) if f.name not in _BOOKKEEPING]
    if "extra" not in attrs.fields_dict(cls):
        raise TypeError(f"payload class {cls.__name__} has no `extra` field")
    records_dropped = _declares_dropped(cls)
    known = frozenset(f.name for f in fields)
    order = {f.name: i for i, f in enumerate(fields)}
    all_optional = all(f.default is not NOTHING for f in fields)
    prefix = f"{at.key}." if at.key else ""
    # cattrs' fast code takes optional fields before required ones; no payload class has both a
    # required field holding payloads and optional ones, so reports keep the fields' order.
    fast: Hook = make_dict_structure_fn(cls, _FAST, _cattrs_detailed_validation=False,
                                  **_field_hooks(cls, prefix, _FAST, lenient=False))
    slow: list[Hook] = []

    def lenient(data: dict[str, Any], call: _Call) -> Any:
        if not slow:
            slow.append(make_dict_structure_fn(cls, _LENIENT, _cattrs_detailed_validation=True,
                                               **_field_hooks(cls, prefix, _LENIENT, lenient=True)))
        stash = call.stash
        mark = len(stash)
        starts: dict[str, int] = {}
        call.starts.append(starts)
        try:
            obj = slow[0](data, cls)
            ignored = stash[mark:]
            data["extra"].update(ignored)  # the very dict the object holds as `extra`
            if ignored and records_dropped:
                obj = attrs.evolve(obj, dropped=frozenset(name for name, _raw in ignored))
            return obj
        except cattrs.ClassValidationError as exc:
            # A field-by-field decode stops at the first failure: take back the later fields' reports.
            with_notes, _without = exc.group_exceptions()
            if with_notes:
                first = order.get(with_notes[0][1].name, -1)
                later = [at for name, at in starts.items() if order[name] > first]
                if later:
                    del call.reports[min(later):]
            raise
        finally:
            call.starts.pop()
            del stash[mark:]

    def as_dict(o: Any) -> dict[str, Any]:
        if o is None and all_optional:
            return {}  # "params" absent on a method whose parameters are all optional
        if not isinstance(o, dict):
            raise Invalid("must be an object")
        return o

    def with_unknown_fields(o: dict[str, Any], call: _Call, mark: int) -> Any:
        extra = {k: v for k, v in o.items() if k not in known}
        unknown = list(extra)
        data = {**o, "extra": extra}
        if records_dropped:
            data["dropped"] = frozenset()  # a wire field of that name is an unknown one, in extra
        try:
            obj = fast(data, cls)
        except Exception as exc:
            _forget(exc)
            obj = None
        if obj is None:
            del call.reports[mark:]
            obj = lenient(data, call)
        if call.on_ignored is not None:
            where = call.fill(prefix)
            for k in unknown:
                call.report(where + k, UNKNOWN_FIELD)
        return obj

    def structure_payload(o: Any, _t: Any) -> Any:
        if o.__class__ is not dict:
            if o is None and at.nullable:
                return None
            o = as_dict(o)
        call = _CALL.get()
        mark = len(call.reports)
        if o.keys() <= known:
            try:
                return fast(o, cls)
            except Exception as exc:
                _forget(exc)
            del call.reports[mark:]  # the lenient decode says it again, or takes it back
            return lenient({**o, "extra": {}}, call)
        return with_unknown_fields(o, call, mark)

    def structure_leaf_payload(o: Any, _t: Any) -> Any:
        # No payload inside: a fast decode that fails has reported nothing, nothing to take back.
        if o.__class__ is not dict:
            if o is None and at.nullable:
                return None
            o = as_dict(o)
        if o.keys() <= known:
            try:
                return fast(o, cls)
            except Exception as exc:
                _forget(exc)
            return lenient({**o, "extra": {}}, _CALL.get())
        call = _CALL.get()
        return with_unknown_fields(o, call, len(call.reports))

    if not any(has_payloads(mark(strip_none(f.type)[0], "")) for f in fields):
        return _shared(cls, structure_leaf_payload) if getattr(cls, "SHARED_VALUES", False) else structure_leaf_payload
    return structure_payload


# How many distinct objects of sharing classes one call keeps (a peer may send each one different).
_SHARED_MAX = 4096


def _shared(cls: type, hook: Hook) -> Hook:
    """A leaf payload class that declares SHARED_VALUES: within one call, equal wire objects decode
    to one object (it is frozen). The 100,000 items of a large object.list carry a handful of
    distinct permissions; each was decoded, and kept, 100,000 times. Only an object whose decode
    reported nothing, set nothing aside and dropped nothing is shared, so every other decode goes
    as before; the key holds each value's type, as 1, 1.0 and True are equal keys."""

    def structure_shared(o: Any, t: Any) -> Any:
        if o.__class__ is not dict:
            return hook(o, t)
        values = o.values()
        try:
            key = (cls, tuple(o.items()), tuple(map(type, values)))
            hit = _CALL.get().shared.get(key)
        except TypeError:  # an unhashable value (a list, an object): decoded alone
            return hook(o, t)
        if hit is not None:
            return hit
        call = _CALL.get()
        mark = len(call.reports)
        obj = hook(o, t)
        if len(call.reports) == mark and not obj.extra and not obj.dropped and len(call.shared) < _SHARED_MAX:
            call.shared[key] = obj
        return obj

    return structure_shared


def _forget(exc: BaseException | None) -> None:
    """Drop the tracebacks of a failure that is handled: cattrs' detailed code keeps the failures of
    a class in a list local to the frame they point to, a cycle only the collector would free."""
    while exc is not None:
        exc.__traceback__ = None
        for sub in getattr(exc, "exceptions", ()):
            _forget(sub)
        exc = exc.__context__


def _locate(exc: BaseException, path: str) -> tuple[str, str]:
    """The first failure in cattrs' exception groups: (its field path under `path`, the reason)."""
    while isinstance(exc, (cattrs.ClassValidationError, IterableValidationError)):
        with_notes, without = exc.group_exceptions()
        if not with_notes:
            exc = without[0]
            continue
        exc, note = with_notes[0]
        if isinstance(note, AttributeValidationNote):
            path = f"{path}.{note.name}" if path else note.name
        elif isinstance(note.index, int):
            path = f"{path}[{note.index}]"
        else:
            path = f"{path}.{note.index}" if path else str(note.index)
    if isinstance(exc, Invalid):
        return path, exc.reason
    if isinstance(exc, KeyError):
        return path, "is required"
    return path, f"cannot be decoded ({exc!r})"


# --- public -------------------------------------------------------------------------------------------


def from_json(cls: type[T], data: Any, path: str = "", *, on_ignored: OnIgnored | None = None) -> T:
    """Build `cls` from a decoded JSON value: strict on required fields, lenient on optional ones.

    The cycle collector is paused while it runs: a decode makes only acyclic objects, and on a
    100,000-item object.list the collector's passes over them cost as much as the decode itself."""
    hook = _payload_hook(cls, At(field_key(path)))
    call = _Call(on_ignored)
    token = _CALL.set(call)
    failure: tuple[str, str] | None = None  # (reason, where)
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        obj = hook(data, cls)
    except Exception as exc:
        where, reason = _locate(exc, path)
        _forget(exc)
        failure = (reason, where or cls.__name__)
    finally:
        if collecting:
            gc.enable()
        _CALL.reset(token)
    call.flush()
    if failure is not None:
        raise ProtocolError(*failure)  # not held by a local: no cycle through this frame
    return obj  # type: ignore[no-any-return]


_ENCODER = cattrs.Converter()


@_ENCODER.register_unstructure_hook_factory(attrs.has)
def _encode_hook(cls: type) -> Callable[[Any], dict[str, Any]]:
    attrs.resolve_types(cls)
    overrides: dict[str, Any] = {f.name: override(omit_if_default=True) for f in attrs.fields(cls)
                                 if f.default is None}
    overrides["extra"] = override(omit=True)
    if _declares_dropped(cls):
        overrides["dropped"] = override(omit=True)
    fields: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cls, _ENCODER, **overrides)

    def unstructure_payload(obj: Any) -> dict[str, Any]:
        out = fields(obj)
        for key, value in obj.extra.items():
            out.setdefault(key, value)
        return out

    return unstructure_payload


def to_json(obj: Any) -> dict[str, Any]:
    """Encode a payload object; optional fields that are None are left out, `extra` is merged."""
    return _ENCODER.unstructure(obj)  # type: ignore[no-any-return]


def encode_params(params: RequestParams) -> Any:
    """A request's params as sent: a payload object through to_json, a dict or None as it is."""
    if params is None or isinstance(params, Mapping):
        return params
    return to_json(params)
