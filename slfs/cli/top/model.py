"""What `slfs top` shows, kept apart from how (no Textual here): a row per published object, prim
and script from the daemon's recursive listing, each script's confirmed run state, last compile and
last runtime line, kept current by the mount's events; the events pane's lines; the header.

`load` takes a whole listing and says whether the rows' set changed (then the view rebuilds);
`apply` takes one event and says which rows it changed (then the view updates those cells only),
or that the listing must be asked again (something published, created or deleted)."""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ... import event_types as ev
from ..human import AnEvent, event_line, event_message

EVENTS_KEPT = 500  # lines of the events pane
# Events after which the rows' set may differ: the listing is asked again.
RESYNC_EVENTS = (ev.Publish, ev.Unpublish, ev.Connected, ev.Create, ev.Delete)


@attrs.define
class Row:
    """One line of the tree: an object, a prim or a script (`key`: its mount-relative path)."""

    key: str
    kind: str  # "object", "prim" or "script"
    name: str
    depth: int
    state: str = ""  # scripts: running, stopped or faulted
    compile: str = ""  # "ok", "N errors: ROW:COL: MESSAGE", "failed: NOTE", or "" (none this session)
    compiled: bool | None = None
    output: str = ""  # the last runtime line said by it (for an object: by a script not told apart)
    output_at: float | None = None
    output_error: bool = False

    def as_json(self) -> dict[str, Any]:
        return {"path": self.key, "kind": self.kind, "state": self.state or None, "compile": self.compile or None,
                "compiled": self.compiled, "output": self.output or None, "output_at": self.output_at}

    def cells(self) -> tuple[str, str, str, str, str]:
        """NAME (indented), STATE, COMPILE, AT, LAST OUTPUT, as plain text."""
        return ("  " * self.depth + self.name, self.state, self.compile, clock(self.output_at), self.output)


def clock(at: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) if at else ""


def one_line(text: Any) -> str:
    return " ".join(str(text).split())


def compile_text(compiled: bool | None, errors: int, first: dict[str, Any] | None, note: str = "") -> str:
    """A last compile in one cell: ok, or how many errors and the first one (else the note)."""
    if compiled is None:
        return ""
    if compiled:
        return "ok"
    head = f"{errors} error{'' if errors == 1 else 's'}" if errors else "failed"
    if first is not None:
        where = ":".join(str(first[k]) for k in ("row", "column") if first.get(k) not in (None, ""))
        message = one_line(first.get("message", ""))
        return f"{head}: {where}: {message}" if where else f"{head}: {message}"
    return f"{head}: {one_line(note)}" if note else head


def listing_compile(last: dict[str, Any] | None) -> tuple[bool | None, str]:
    """A listing entry's `last_compile` -> (compiled, cell text)."""
    if not last:
        return None, ""
    compiled = bool(last.get("compiled"))
    return compiled, compile_text(compiled, int(last.get("errors") or 0), last.get("first"),
                                  str(last.get("note") or ""))


def event_compile(event: ev.Compile | Mapping[str, Any]) -> tuple[bool, str]:
    """A `compile` event (or its fields) -> (compiled, cell text)."""
    e = event if isinstance(event, ev.Compile) else ev.structure_as(ev.Compile, event)
    diags = e.diagnostics
    errors = [d for d in diags if str(d.get("level", "")).lower() == "error"]
    first = (errors or diags)[0] if diags else None
    return e.compiled, compile_text(e.compiled, len(errors), first, e.note)


@attrs.frozen
class Change:
    """What one event changed: the rows to redraw, whether the listing must be asked again, and
    whether the header's counts or connection changed."""

    rows: frozenset[str] = frozenset()
    resync: bool = False
    status: bool = False
    fresh: bool = True  # False: an event seen already (not shown again)


def _ancestors(rel: str) -> list[str]:
    """The folders above a mount-relative path: "A/B/c" -> ["A", "A/B"]."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _sort_key(row: Row) -> tuple[Any, ...]:
    """Objects by name; in each, its own scripts first, then its prims (each followed by theirs)."""
    parts = row.key.split("/")
    key: list[Any] = [parts[0].casefold(), parts[0]]
    for i, part in enumerate(parts[1:], start=2):
        leaf_script = i == len(parts) and row.kind == "script"
        key.append((0 if leaf_script else 1, part.casefold(), part))
    return tuple(key)


class TopModel:
    def __init__(self, mountpoint: str) -> None:
        self.root = mountpoint.rstrip("/") + "/"
        self.rows: dict[str, Row] = {}
        self.order: list[str] = []
        self.events: collections.deque[ev.SlfsEvent] = collections.deque(maxlen=EVENTS_KEPT)
        self.cursor = 0  # the last event's seq
        self.status: dict[str, Any] = {}
        self.changed: set[str] = set()  # the rows the last load() changed

    # --- the listing -----------------------------------------------------------------------

    def rel(self, path: str) -> str:
        return path.removeprefix(self.root).strip("/") if path.startswith(self.root) else path.strip("/")

    def load(self, entries: Iterable[dict[str, Any]]) -> bool:
        """The rows of a recursive listing (runtime lines kept from before): True when the set or
        order of rows changed, so the view must be rebuilt rather than updated (`changed` then
        names the rows whose cells differ)."""
        rows: dict[str, Row] = {}
        for e in entries:
            kind = e.get("kind")
            rel = self.rel(str(e.get("path", "")))
            if not rel:
                continue
            if kind in ("object", "prim"):
                rows[rel] = Row(rel, str(kind), rel.rsplit("/", 1)[-1], rel.count("/"))
            elif "state" in e:  # a script
                compiled, text = listing_compile(e.get("last_compile"))
                rows[rel] = Row(rel, "script", rel.rsplit("/", 1)[-1], rel.count("/"),
                                state=str(e.get("state", "")), compile=text, compiled=compiled)
        changed: set[str] = set()
        for rel, row in rows.items():
            old = self.rows.get(rel)
            if old is not None:
                row.output, row.output_at, row.output_error = old.output, old.output_at, old.output_error
            if old != row:
                changed.add(rel)
        order = sorted(rows, key=lambda rel: _sort_key(rows[rel]))
        rebuild = order != self.order
        self.rows, self.order, self.changed = rows, order, changed
        return rebuild

    # --- what the view and the feed tell it (its fields and its rows' are written here only)

    def set_status(self, status: dict[str, Any]) -> None:
        self.status = status

    def caught_up(self, cursor: int) -> None:
        """The backlog read goes up to event `cursor`."""
        self.cursor = max(self.cursor, cursor)

    def restarted(self) -> None:
        """A new daemon's events count from 1 again."""
        self.cursor = 0

    def set_state(self, row: Row, state: str) -> None:
        """A run, stop or reset answered with the script's state."""
        row.state = state

    # --- events ----------------------------------------------------------------------------

    def apply(self, event: AnEvent, *, past: bool = False) -> Change:
        """One event; `past` for the backlog read after the listing, whose run states and
        compiles are older than the listing's (only its runtime lines are taken)."""
        e = ev.as_event(event)
        if e.seq is not None:
            if e.seq <= self.cursor:
                return Change(fresh=False)  # seen already (a backlog that overlaps what came live)
            self.cursor = e.seq
        self.events.append(e)
        path = ev.path_of(e).strip("/")
        row = self.rows.get(path) if path else None
        if past and not isinstance(e, ev.RUNTIME_EVENTS):
            return Change()
        if isinstance(e, RESYNC_EVENTS):
            return Change(resync=True, status=isinstance(e, ev.Connected))
        match e:
            case ev.Disconnected():
                return Change(status=True)
            case ev.ScriptState():
                if row is None:
                    return Change(resync=True)
                row.state = e.state
                return Change(rows=frozenset({path}), status=True)
            case ev.Compile():
                if row is None:
                    return Change()  # a live file's, or a script not listed yet (its create resyncs)
                row.compiled, row.compile = event_compile(e)
                return Change(rows=frozenset({path}))
            case ev.RuntimeDebug() | ev.RuntimeError_() if row is not None:
                row.output = event_message(e)
                row.output_at = float(e.time or time.time())
                row.output_error = isinstance(e, ev.RuntimeError_)
                return Change(rows=frozenset({path}))
        return Change()

    # --- what is shown ---------------------------------------------------------------------

    def visible(self, needle: str = "") -> list[str]:
        """The rows shown under a filter: those whose path holds `needle` (any case), with the
        object and prims above them; an object or prim that matches shows what it holds."""
        if not needle:
            return list(self.order)
        low = needle.casefold()
        hits = {rel for rel in self.order if low in rel.casefold()}
        shown: set[str] = set()
        for rel in hits:
            shown.update(_ancestors(rel))
            shown.add(rel)
        folders = {rel for rel in hits if self.rows[rel].kind != "script"}
        return [rel for rel in self.order if rel in shown or not folders.isdisjoint(_ancestors(rel))]

    def counts(self) -> dict[str, int]:
        out = {"objects": 0, "scripts": 0, "running": 0, "stopped": 0, "faulted": 0, "failing": 0}
        for row in self.rows.values():
            if row.kind == "object":
                out["objects"] += 1
            elif row.kind == "script":
                out["scripts"] += 1
                if row.state in out:
                    out[row.state] += 1
                if row.compiled is False:
                    out["failing"] += 1
        return out

    def header(self) -> list[str]:
        """Two lines: the mount, its connection and viewer; the counts."""
        s = self.status
        state = str(s.get("state") or "unknown")
        line = f"slfs top  {self.root.rstrip('/')}  {state}"
        if s.get("state_detail") and state != "connected":
            line += f" ({one_line(s['state_detail'])})"
        viewer = " ".join(str(s[k]) for k in ("viewer", "viewer_version") if s.get(k))
        if viewer:
            line += f"  viewer: {viewer}"
            if s.get("viewer_generation"):  # "G2-G4 (why)": the generation, not why
                line += f" ({str(s['viewer_generation']).split(' ', 1)[0]})"
        if s.get("agent"):
            line += f"  as {s['agent']}"
        c = self.counts()
        counts = (f"{c['objects']} object{'' if c['objects'] == 1 else 's'}, {c['scripts']} "
                  f"script{'' if c['scripts'] == 1 else 's'}: {c['running']} running, {c['stopped']} stopped, "
                  f"{c['faulted']} faulted, {c['failing']} failing compile")
        return [line, counts]

    def event_lines(self, n: int | None = None, colour: bool = False) -> list[str]:
        events = list(self.events)[-n:] if n else list(self.events)
        return [event_line(e, colour) for e in events]
