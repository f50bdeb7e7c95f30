"""The typed events (slfs/event_types.py): one class per event type, `to_json` giving the JSON the
events always had, `event_from_json` reading it back and never raising, and slfs(5) naming every
type and field."""

from __future__ import annotations

import inspect
import json
import logging
import re
import shlex
import typing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from slfs import event_types as ev
from slfs.cli import human
from slfs.cli.top.model import TopModel
from slfs.event_types import EVENT_CLASSES, Event, SlfsEvent, UnknownEvent, event_from_json
from slfs.local.events import EventLog
from slfs.model import runtime
from slfs.model.compiles import CompileReport, compile_event
from slfs.model.services import Broadcast
from slfs.protocol.types import Diagnostic, RuntimeDebug, RuntimeError_
from slfs.world.places import Place
from slfs.world.tree import Tree

MAN5 = Path(__file__).resolve().parents[2] / "man" / "slfs.5"
COMMON = {"seq", "time", "extra", "dropped"}


def _classes() -> list[type[SlfsEvent]]:
    return [c for _, c in inspect.getmembers(ev, inspect.isclass)
            if issubclass(c, SlfsEvent) and c not in (SlfsEvent, UnknownEvent)]


def _wire_fields(cls: type[SlfsEvent]) -> list[attrs.Attribute]:  # type: ignore[type-arg]
    return [f for f in attrs.fields(attrs.resolve_types(cls)) if f.name not in COMMON]


def test_each_event_type_has_exactly_one_class() -> None:
    tags = [c.TYPE for c in _classes()]
    assert sorted(tags) == sorted(Event) and len(set(tags)) == len(tags)
    assert all(EVENT_CLASSES[c.TYPE] is c for c in _classes())


def _sample(tp: Any, name: str) -> Any:
    base, args = typing.get_origin(tp) or tp, typing.get_args(tp)
    if type(None) in args:
        return _sample(next(a for a in args if a is not type(None)), name)
    samples = {str: f"{name} ✓", int: 7, float: 2.5, bool: True,
               list: [{"row": 3, "column": 1, "level": "ERROR", "message": "m", "path": "Box/inc.lsl"}]
               if args and args[0] is not str else ["a", "b"], dict: {"k": ["v", 1], "n": None}}
    return samples[base]


def _samples(cls: type[SlfsEvent]) -> list[SlfsEvent]:
    """Each field set; and the fields that may be left out left out, the nullable ones null."""
    full = cls(**{f.name: _sample(f.type, f.name) for f in _wire_fields(cls)})  # type: ignore[arg-type]
    bare = {f.name: None if type(None) in typing.get_args(f.type) else _sample(f.type, f.name)
            for f in _wire_fields(cls)}
    return [attrs.evolve(full, seq=12, time=1733380000.25), cls(**bare)]  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.TYPE)
def test_each_class_goes_to_json_and_back(cls: type[SlfsEvent]) -> None:
    for event in _samples(cls):
        out = event.to_json()
        head = [k for k in ("seq", "time", "type") if k in out]
        assert list(out)[:len(head)] == head
        assert out["type"] == cls.TYPE
        wire = json.loads(json.dumps(out))
        back = event_from_json(wire)
        assert type(back) is cls and back == event and back.to_json() == wire
        assert json.dumps(back.to_json()) == json.dumps(out)  # the same keys in the same order


def test_fields_with_a_none_default_are_left_out_others_are_null() -> None:
    assert ev.Resend(path="/m/A", item_id="i", recovery=None, outcome="in-world").to_json() == {
        "type": "resend", "path": "/m/A", "item_id": "i", "recovery": None, "outcome": "in-world"}
    assert ev.ViewerOpenFile(path="/x", line=3, opened="/m/x").to_json() == {
        "type": "viewer.open_file", "path": "/x", "line": 3, "opened": "/m/x"}
    assert ev.ScriptState(path="A/b", item_id="i", state="running", was=None).to_json()["was"] is None


def test_compile_event_is_the_json_compiles_always_had() -> None:
    report = CompileReport(compiled=False, diagnostics=(Diagnostic(row=9, column=2, level="ERROR", message="bad"),
                                                        Diagnostic(row=1, column=1, level="WARN", message="w")),
                           at=0.0, note="n", places=(Place("Box/inc.lsl", 4), None), preprocessed=True,
                           includes=("inc.lsl",))
    assert list(compile_event(report, path="Box/a.lsl", item_id="i").to_json().items()) == [
        ("type", "compile"), ("path", "Box/a.lsl"), ("item_id", "i"), ("compiled", False), ("note", "n"),
        ("source", "slfs"),
        ("diagnostics", [{"row": 4, "column": 2, "level": "ERROR", "message": "bad", "path": "Box/inc.lsl"},
                         {"row": 1, "column": 1, "level": "WARN", "message": "w"}]),
        ("preprocessed", True), ("includes", ["inc.lsl"])]
    plain = CompileReport(compiled=True, diagnostics=(), at=0.0, source="live")
    assert list(compile_event(plain, path=".slfs/live/x", script_id="s", item_id=None).to_json()) == [
        "type", "path", "script_id", "item_id", "compiled", "note", "source", "diagnostics", "preprocessed"]


def test_runtime_fields_make_the_same_json_through_the_classes() -> None:
    """model/runtime.py builds the runtime events from its fields: the JSON is those fields'."""
    live = SimpleNamespace(by_id={})
    debug = runtime.debug_fields(Tree(), live, RuntimeDebug(object_id="o", message="hi", script_id="S"))  # type: ignore[arg-type]
    error = runtime.error_fields(Tree(), live, RuntimeError_(message="m", error="e", line=3, stack=["a"]))  # type: ignore[arg-type]
    for kind, fields in ((Event.RUNTIME_DEBUG, debug), (Event.RUNTIME_ERROR, error)):
        event = EVENT_CLASSES[kind](**fields)
        assert list(event.to_json().items()) == [("type", kind), *fields.items()]


def test_an_unknown_type_and_unknown_fields_survive() -> None:
    newer = {"seq": 4, "time": 1.5, "type": "object.moved", "object_id": "o", "to": [1, 2, 3]}
    event = event_from_json(newer)
    assert isinstance(event, UnknownEvent) and event.type == "object.moved" and event.seq == 4
    assert event.to_json() == newer
    more = {"seq": 5, "time": 2.0, "type": "delete", "path": "A/b", "item_id": "i", "by": "someone"}
    event = event_from_json(more)
    assert isinstance(event, ev.Delete) and event.extra == {"by": "someone"} and event.to_json() == more


def test_a_wrong_field_is_logged_and_kept_raw_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    odd = {"seq": 6, "time": 3.0, "type": "compile", "path": "A/b.lsl", "item_id": "i", "compiled": "yes",
           "note": "", "source": "slfs", "diagnostics": "none", "preprocessed": False, "includes": 3}
    with caplog.at_level(logging.WARNING, logger="slfs.event_types"):
        event = event_from_json(odd)
    assert isinstance(event, ev.Compile) and event.compiled is False and event.diagnostics == []
    assert event.path == "A/b.lsl" and event.includes is None
    assert {"compiled", "diagnostics", "includes"} <= event.dropped
    assert event.to_json() == odd  # what it could not read, it gives back as it came
    assert "compiled must be a boolean" in caplog.text and "diagnostics must be an array" in caplog.text
    assert event_from_json({"type": "script.state", "seq": True, "state": 1}).seq is None  # a bool is no seq
    for junk in (None, [1], "x", {"type": 3}, {}):
        assert isinstance(event_from_json(junk), UnknownEvent)


def test_a_partial_event_is_read_with_empty_fields() -> None:
    event = event_from_json({"type": "script.state", "path": "A/b.lsl", "state": "running"})
    assert isinstance(event, ev.ScriptState) and event.item_id == "" and event.was is None
    assert event.to_json() == {"type": "script.state", "path": "A/b.lsl", "state": "running"}


def test_the_broadcast_hands_services_the_typed_event_and_the_log_its_json() -> None:
    got: list[SlfsEvent] = []
    log = EventLog(None)
    fanout = Broadcast()
    fanout.connect([SimpleNamespace(on_event=got.append, status=dict), log], [])  # type: ignore[list-item]
    event = ev.Delete(path="A/b", item_id="i", time=5.0)
    fanout.event(event)
    assert got == [event]
    assert log.since(0) == [{"seq": 1, "time": 5.0, "type": "delete", "path": "A/b", "item_id": "i"}]


@pytest.mark.parametrize("cls", _classes(), ids=lambda c: c.TYPE)
def test_readers_say_the_same_of_an_event_and_of_its_json(cls: type[SlfsEvent]) -> None:
    for event in _samples(cls):
        wire = json.loads(json.dumps(event.to_json()))
        assert human.event_line(event) == human.event_line(wire)
        assert human.event_colour(event) == human.event_colour(wire)
        typed, raw = TopModel("/m"), TopModel("/m")
        assert typed.apply(event) == raw.apply(wire)


# --- slfs(5) ------------------------------------------------------------------------------------------


def _bold_words(line: str) -> list[str]:
    """The bold words of one roff line (.B, .BR, .RB, .BI, .IB)."""
    if not line.startswith("."):
        return []
    macro, _, rest = line.partition(" ")
    try:
        args = shlex.split(rest)
    except ValueError:
        return []
    if macro == ".B":
        return args
    first_bold = {".BR": 0, ".BI": 0, ".RB": 1, ".IB": 1}.get(macro)
    return [] if first_bold is None else args[first_bold::2]


def _man_events() -> dict[str, set[str]]:
    """slfs(5), EVENTS: each event type (a .TP entry's tag) -> the bold words of its paragraph."""
    text = MAN5.read_text()
    section = text.split("\n.SH EVENTS\n", 1)[1].split("\n.SH ", 1)[0]
    out: dict[str, set[str]] = {}
    for entry in section.split("\n.TP\n")[1:]:
        tag, *body = entry.split("\n")
        if tag.startswith(".PP"):
            continue
        words = set()
        for line in body:
            if line.startswith(".PP"):
                break
            words.update(w.strip(",.;:() ") for w in _bold_words(line))
        out[re.sub(r"^\.B\s+", "", tag).strip()] = words
    return out


def test_the_man_page_names_every_event_and_its_fields() -> None:
    documented = _man_events()
    assert sorted(documented) == sorted(Event)
    for cls in _classes():
        missing = [f.name for f in _wire_fields(cls) if f.name not in documented[cls.TYPE]]
        assert missing == [], f"slfs(5) EVENTS, {cls.TYPE}: {missing}"
