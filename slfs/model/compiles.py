"""What the viewer last said about compiling each script: the answer to a save made through slfs,
or a `script.compiled` for a save made in the viewer itself (newer viewers broadcast it with the
script's object, prim and item ids). `.slfs/F.diag`, the root `diagnostics` and `slfs diag` read it.
"""

from __future__ import annotations

import time
from typing import Any

import attrs

from ..protocol.types import Diagnostic


@attrs.frozen
class Place:
    """A file and row a diagnostic belongs to: a mount path, or a local include's path."""

    path: str
    row: int


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

    def place_of(self, index: int) -> Place | None:
        return self.places[index] if index < len(self.places) else None


def failure_report(message: str, note: str = "") -> CompileReport:
    """A save the viewer failed without diagnostics (`Internal error: stoi`, an answer of NUL bytes):
    one line with its message at row 1, column 1, so `F.diag` and `vim -q` show why."""
    text = " ".join(message.replace("\0", " ").split()) or "the viewer answered the save with an unreadable message"
    return CompileReport(compiled=False, diagnostics=(Diagnostic(row=1, column=1, level="ERROR", message=text),),
                         at=time.time(), note=note)


def has_nul(diagnostics: Any) -> bool:
    """A compile answer holding NUL bytes is garbled (seen from one viewer build), not a verdict."""
    return any("\0" in d.message or "\0" in d.level for d in diagnostics or ())


def event_fields(report: CompileReport) -> dict[str, Any]:
    out: dict[str, Any] = {
        "compiled": report.compiled, "note": report.note, "source": report.source,
        "diagnostics": [{"row": d.row, "column": d.column, "level": d.level, "message": d.message}
                        for d in report.diagnostics],
        "preprocessed": report.preprocessed,
    }
    if report.preprocessed:
        out["includes"] = list(report.includes)
        out["diagnostics"] = [{**d, "path": p.path, "row": p.row} if p is not None else d
                              for d, p in zip(out["diagnostics"], (report.place_of(i) for i in
                                                                    range(len(report.diagnostics))), strict=True)]
    return out
