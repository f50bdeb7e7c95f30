"""What `slfs events` and `slfs status` print for people (issue 36, item 2): one line per event
(local time, mount-relative path, kind, message), a per-object summary of the scripts, colour on a
terminal, and error messages whose prefixes are said once. The `--json` forms are elsewhere
(verbs.py) and unchanged."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from .. import event_types as ev
from ..protocol.text import printable

RESET = "\x1b[0m"
COLOURS = {"red": "\x1b[31m", "green": "\x1b[32m", "yellow": "\x1b[33m", "blue": "\x1b[34m",
           "dim": "\x1b[2m", "bold": "\x1b[1m"}


def is_terminal(stream: TextIO) -> bool:
    raw = getattr(stream, "stream", stream)  # through cli/output.py's PrintableStream
    try:
        return bool(raw.isatty())
    except (AttributeError, ValueError):
        return False


def use_colour(stream: TextIO) -> bool:
    """Colour on a terminal only, and never with NO_COLOR set (no-color.org) or TERM=dumb."""
    return is_terminal(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, colour: str | None, on: bool) -> str:
    """`text` made printable (network text: no escape of its own reaches the terminal), then coloured."""
    text = printable(text)
    return f"{COLOURS[colour]}{text}{RESET}" if on and colour else text


def write_raw(stream: TextIO, text: str) -> None:
    """Write text already made printable, colour codes and all, past PrintableStream (which would
    turn the codes' ESC into U+FFFD)."""
    raw = getattr(stream, "stream", stream)
    raw.write(text)
    raw.flush()


# --- events ---------------------------------------------------------------------------------------

_CLASS_COLOUR: dict[type[ev.SlfsEvent], str] = {
    ev.RuntimeError_: "red", ev.Error: "red", ev.Refused: "red", ev.Recovery: "red", ev.Disconnected: "yellow",
    ev.Connected: "green", ev.RuntimeDebug: "blue", ev.Unpublish: "yellow", ev.Publish: "green"}
_SKIP = {"seq", "time", "type", "path", "item_id", "object_id", "prim_id", "script_id", "scope",
         "object_name", "item_name", "channel", "diagnostics", "stack", "includes", "digest"}

# An event as a caller holds it: typed (event_types), or its JSON (typed here).
AnEvent = ev.SlfsEvent | Mapping[str, Any]


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def event_message(event: AnEvent) -> str:
    """What an event says, in words, on one line."""
    e = ev.as_event(event)
    match e:
        case ev.Connected():
            viewer = " ".join(str(v) for v in (e.viewer, e.version) if v)
            return f"to {viewer}" if viewer else ""
        case ev.Disconnected() | ev.Unpublish():
            return _one_line(e.reason or "")
        case ev.Publish():
            return _one_line(e.name or "")
        case ev.RuntimeDebug():
            return _one_line(e.message)
        case ev.RuntimeError_():
            where = f" (line {e.line})" if e.line else ""
            parts = [p for p in (_one_line(e.message), _one_line(e.error)) if p]
            return ": ".join(parts) + where
        case ev.Compile():
            return _compile_message(e)
        case ev.ScriptStateRequested():
            return e.action
        case ev.ScriptState():
            return e.state + (f" (was {e.was})" if e.was else "")
        case ev.Refused():
            return " ".join([*(v for v in (e.errno,) if v), _one_line(e.message)]).strip()
        case ev.Error():
            return " ".join([*(v for v in (e.operation, e.errno) if v), _one_line(e.message)]).strip()
    rest = {k: v for k, v in e.to_json().items() if k not in _SKIP and v not in (None, "", [], {})}
    if "message" in rest:
        return _one_line(rest.pop("message")) + "".join(f" {k}={_one_line(v)}" for k, v in rest.items())
    return " ".join(f"{k}={_one_line(v)}" for k, v in rest.items())


def _compile_message(e: ev.Compile) -> str:
    diags = e.diagnostics
    errors = [d for d in diags if str(d.get("level", "")).lower() == "error"]
    if e.compiled:
        return "ok" + (f", {len(diags)} warning{'s' if len(diags) != 1 else ''}" if diags else "")
    first = errors[0] if errors else (diags[0] if diags else None)
    n = len(errors)
    head = f"failed, {n} error{'' if n == 1 else 's'}" if n else "failed"
    if first is not None:
        head += f": {first.get('row')}:{first.get('column')}: {_one_line(first.get('message', ''))}"
    elif e.note:
        head += f": {_one_line(e.note)}"
    return head


def event_where(event: AnEvent) -> str:
    """The mount-relative path the event is about (the names as the mount shows them), else the
    object's name, else nothing."""
    e = ev.as_event(event)
    path = ev.path_of(e)
    if path:
        return path.lstrip("/")
    match e:
        case ev.RuntimeDebug() | ev.RuntimeError_():
            return e.object_name
        case ev.LiveSave() | ev.LiveSubscribe() | ev.LiveUnsubscribe():
            return e.name
        case ev.UnknownEvent():  # a newer daemon's: what it names, if it says
            return str(e.extra.get("object_name") or e.extra.get("name") or "")
    return ""


STATE_COLOUR = {"running": "green", "stopped": "yellow", "faulted": "red"}


def event_colour(event: AnEvent) -> str | None:
    e = ev.as_event(event)
    match e:
        case ev.Compile():
            return "green" if e.compiled else "red"
        case ev.ScriptState():
            return STATE_COLOUR.get(e.state)
    return _CLASS_COLOUR.get(type(e))


def event_line(event: AnEvent, colour: bool = False) -> str:
    """`HH:MM:SS  PATH  KIND  MESSAGE` in local time (its date too when not today)."""
    e = ev.as_event(event)
    at = float(e.time or 0)
    fmt = "%H:%M:%S" if time.localtime(at)[:3] == time.localtime()[:3] else "%Y-%m-%d %H:%M:%S"
    stamp = paint(time.strftime(fmt, time.localtime(at)), "dim", colour)
    kind = paint(str(e.type or "?"), event_colour(e), colour)
    parts = [stamp]
    where = event_where(e)
    if where:
        parts.append(paint(where, "bold", colour))
    parts.append(kind)
    message = event_message(e)
    if message:
        parts.append(paint(message, None, colour))
    return "  ".join(parts)


# --- status ---------------------------------------------------------------------------------------


def object_summary(entries: Iterable[dict[str, Any]], mountpoint: str, colour: bool = False) -> list[str]:
    """One line per published object: its scripts running, stopped and faulted, and the scripts whose
    last compile failed (from the daemon's recursive listing)."""
    root = mountpoint.rstrip("/") + "/"
    objects: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for e in entries:
        rel = str(e.get("path", "")).removeprefix(root)
        top = rel.split("/", 1)[0]
        if e.get("kind") == "object" and "/" not in rel:
            objects.setdefault(top, {"running": 0, "stopped": 0, "faulted": 0, "failing": []})
            order.append(top)
            continue
        if "state" not in e:  # not a script
            continue
        o = objects.setdefault(top, {"running": 0, "stopped": 0, "faulted": 0, "failing": []})
        if top not in order:
            order.append(top)
        o[e["state"]] = o.get(e["state"], 0) + 1
        last = e.get("last_compile") or {}
        if last.get("compiled") is False:
            o["failing"].append((rel.split("/", 1)[1] if "/" in rel else rel, int(last.get("errors") or 0)))
    lines = []
    width = min(40, max((len(name) for name in order), default=0))
    for name in order:
        o = objects[name]
        total = o["running"] + o["stopped"] + o["faulted"]
        if total == 0:
            text = "no scripts"
        else:
            counts = [paint(f"{o['running']} running", "green" if o["running"] else None, colour),
                      paint(f"{o['stopped']} stopped", None, colour),
                      paint(f"{o['faulted']} faulted", "red" if o["faulted"] else None, colour)]
            text = f"{total} script{'' if total == 1 else 's'}: " + ", ".join(counts)
        if o["failing"]:
            names = ", ".join(f"{p} ({n} error{'' if n == 1 else 's'})" if n else p for p, n in o["failing"])
            text += "; " + paint(f"failing compile: {names}", "red", colour)
        lines.append(f"  {paint(name.ljust(width), 'bold', colour)}  {text}")
    return lines


# --- errors ---------------------------------------------------------------------------------------


def said_once(message: str) -> str:
    """`message` without a prefix said twice: "stop X: stop X: why" and "stop X: X: why" become
    "stop X: why", "slfs: slfs: ..." loses its inner "slfs: " (err() adds its own)."""
    message = message.removeprefix("slfs: ")
    parts = message.split(": ")
    out: list[str] = []
    for i, part in enumerate(parts):
        if out and i < len(parts) - 1 and part and (part == out[-1] or out[-1].endswith(" " + part)):
            continue
        out.append(part)
    return ": ".join(out)
