"""What the viewer last said about compiling each script: the answer to a save made through slfs,
or a `script.compiled` for a save made in the viewer itself (newer viewers broadcast it with the
script's object, prim and item ids). `.slfs/F.diag`, the root `diagnostics` and `slfs diag` read it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import attrs

from ..event_types import Compile
from ..protocol.compile_output import compile_rows
from ..protocol.text import one_line
from ..protocol.types import CompilationResult, Diagnostic
from ..world.nodes import Item
from ..world.places import Place

log = logging.getLogger(__name__)


@attrs.frozen
class CompileReport:
    """The answer of the last compile of a script in this session."""

    compiled: bool
    diagnostics: tuple[Diagnostic, ...]
    at: float
    note: str = ""  # what a failed compile means in-world
    source: str = "slfs"  # who saved: "slfs" (through the mount) or "viewer" (its own editor)
    # A built source: where each diagnostic's row came from (same order; None: the script's own
    # in-world row), and the include files the build used.
    places: tuple[Place | None, ...] = ()
    preprocessed: bool = False
    includes: tuple[str, ...] = ()
    # False: the save this answers never reached the item (a source that could not be built, a
    # save the viewer failed): it describes that attempt, not the in-world text, and goes when a
    # save finds the file holding the in-world text again (CompileReports.forget_failed_attempt).
    landed: bool = True

    def place_of(self, index: int) -> Place | None:
        return self.places[index] if index < len(self.places) else None


class CompileReports(dict[str, CompileReport]):
    """Item id (or a live file's key) -> the report of its last compile this session: the one writer
    of that state. `.slfs/F.diag`, `F.state`, the root `diagnostics` and `slfs diag` read it."""

    def __init__(self, emit: Callable[[Compile], None]) -> None:
        super().__init__()
        self._emit = emit
        # key -> the report of the in-world text (None: none) while this holds a failed attempt's,
        # which never reached the item (CompileReport.landed).
        self._inworld: dict[str, CompileReport | None] = {}

    def record(self, item: Item, report: CompileReport, path: str) -> None:
        """The viewer's answer to a compile of `item`: F.diag, F.state, root diagnostics, an event."""
        self.note(item.uuid, report)
        self._emit(compile_event(report, path=path, item_id=item.uuid))

    def note(self, key: str, report: CompileReport) -> None:
        """The compile report of an item or a live file (`key`); a failed attempt's, which never
        reached it (CompileReport.landed), keeps the in-world text's aside for forget_failed_attempt."""
        before = self.get(key)
        if report.landed:
            self._inworld.pop(key, None)
        elif before is None or before.landed:
            self._inworld[key] = before  # still what describes the in-world text
        self[key] = report

    def forget_failed_attempt(self, key: str, path: str) -> None:
        """A save that found the file holding the in-world text (nothing to send): diagnostics
        describe the in-world text, so those of an earlier attempt that never reached the item (an
        include not found, a save the viewer failed) go, and the in-world text's come back."""
        report = self.get(key)
        if report is None or report.landed:
            return
        inworld = self._inworld.pop(key, None)
        if inworld is None:
            del self[key]
        else:
            self[key] = inworld
        log.info("%s: holds the in-world text again; the failed attempt's diagnostics are cleared", path)


def failure_report(message: str, note: str = "") -> CompileReport:
    """A save the viewer failed without diagnostics (`Internal error: stoi` and the item does not hold it):
    one line with its message at row 1, column 1, so `F.diag` and `vim -q` show why."""
    text = one_line(message, 2000) or "the viewer answered the save with an unreadable message"
    return CompileReport(compiled=False, diagnostics=(Diagnostic(row=1, column=1, level="ERROR", message=text),),
                         at=time.time(), note=note, landed=False)


def compile_event(report: CompileReport, *, path: str, item_id: str | None, script_id: str | None = None) -> Compile:
    """The `compile` event of `report`: an item's at `path`, or a live file's (`script_id`)."""
    diagnostics: list[dict[str, Any]] = [{"row": d.row, "column": d.column, "level": d.level, "message": d.message}
                                         for d in report.diagnostics]
    if report.preprocessed:
        diagnostics = [{**d, "path": p.path, "row": p.row} if p is not None else d
                       for d, p in zip(diagnostics, (report.place_of(i) for i in range(len(report.diagnostics))),
                                       strict=True)]
    return Compile(path=path, script_id=script_id, item_id=item_id, compiled=report.compiled, note=report.note,
                   source=report.source, diagnostics=diagnostics, preprocessed=report.preprocessed,
                   includes=list(report.includes) if report.preprocessed else None)


def diagnostic_rows(report: CompileReport, own_path: str) -> list[dict[str, object]]:
    """The report's diagnostics as `F.diag` rows: a built source's name the source or include
    line that produced them, others `own_path` at the viewer's row."""
    out: list[dict[str, object]] = []
    for i, d in enumerate(report.diagnostics):
        place = report.place_of(i)
        path, row = (place.path, place.row) if place is not None else (own_path, d.row)
        out.append({"path": path, "row": row, "column": d.column, "level": d.level.lower(),
                    "message": " ".join(d.message.split())})
    return out


_told: set[str] = set()


def log_problems(problems: tuple[str, ...], where: str) -> None:
    """What was of an unexpected shape in a verdict, logged once per kind of problem (a viewer that
    sends one odd field sends it with every compile)."""
    for problem in problems:
        if problem not in _told and len(_told) < 256:
            _told.add(problem)
            log.warning("%s: the viewer's compile answer: %s (logged once)", where, problem)


def compiled_report(msg: CompilationResult, source: str,
                    places: tuple[Place | None, ...] | None = None) -> CompileReport:
    """A `script.compiled` as a report: its rows in whatever shape the viewer sent them
    (`diagnostics` or G1's `errors`; protocol/compile_output.py), what a failed compile means
    in-world, and, for a build of ours (`places`: the source place of every in-world row), where
    each diagnostic's row came from."""
    verdict = compile_rows(msg.diagnostics, msg.errors)
    log_problems(verdict.problems, f"script.compiled for {msg.script_id}")
    diagnostics = verdict.rows
    note = "" if msg.success else ("the previously compiled version keeps running" if msg.running
                                   else "the script is not running")
    if places is None:
        return CompileReport(compiled=msg.success, diagnostics=diagnostics, at=time.time(), note=note, source=source)
    return CompileReport(compiled=msg.success, diagnostics=diagnostics, at=time.time(), note=note, source=source,
                         preprocessed=True,
                         places=tuple(places[d.row - 1] if 0 < d.row <= len(places) else None for d in diagnostics))
