"""A compile verdict's rows, in whatever shape the viewer sent them.

Every generation of the viewer's C++ answers a failed compile differently
(`../shared/research/viewer-source.md` §3):
- G2-G4 answer `object.content.save` with `diagnostics`: objects {row, column, level, message,
  format?}, rows and columns 1-based;
- G1's explorer answers it with `errors`: the compiler's raw lines, which the viewer did not parse;
- live sync's `script.compiled` has `errors` (objects) in G1 and `diagnostics` in G2-G4, either
  possibly absent or empty.
The `unified_diagnostics` handshake flag is consulted by no viewer, so the shape is read from the
message itself. Raw lines are parsed as the viewer parses them (llscripteditorws.cpp,
LUAU_LOCATION_PATTERN and LSL_LOCATION_PATTERN, secondlife/viewer 020410f9):
- Luau `NAME:ROW: MESSAGE` (NAME without a colon, e.g. `[string "Main"]`): ROW is 1-based as is,
  column 0, level ERROR;
- LSL `(ROW, COL) : LEVEL : MESSAGE`, both 0-based: +1 each, the level as the compiler wrote it;
- a line matching neither is kept whole at row 0, column 0, level ERROR: never dropped.
Either pattern is tried on every line whatever the script's language (the two cannot match the same
line), so a viewer that reports an LSL target for a Luau script loses nothing.

Bounded for any input: at most MAX_ROWS rows, each message MAX_MESSAGE characters, cleaned of
terminal escapes, NULs and other control characters (slfs.protocol.text); a row number past 2^31
(an unplaced error seen as 4294967295) reads as 0. Nothing strips NULs from compiler lines in the
viewer (viewer-source.md §3) and one build answered with them: they are cleaned like any control
character, and a message that cleans down to nothing says so (UNPRINTABLE) rather than showing an
empty row. Anything of an unexpected type is reported in `problems` and skipped, never fatal: a
save is not failed for the shape, or the bytes, of its verdict.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

from .text import one_line
from .types import Diagnostic

MAX_ROWS = 1000
MAX_MESSAGE = 2000
MAX_LINE = 8 * MAX_MESSAGE  # a raw line is matched on at most this much of it
ROW_MAX = 2**31 - 1
UNPRINTABLE = "(the viewer's message held only control characters)"

_LUAU = re.compile(r"^([^:]*):([0-9]+):\s*(.*)$", re.DOTALL)
_LSL = re.compile(r"\((\d+), (\d+)\) : ([^:]+) : (.+)", re.DOTALL)


@attrs.frozen
class CompileRows:
    rows: tuple[Diagnostic, ...]
    problems: tuple[str, ...] = ()  # what was of an unexpected shape, for the log


def _number(value: Any, offset: int = 0) -> int:
    """A row or column as a non-negative int (a numeric string too); anything else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 12:
        value = int(value.strip())
    if not isinstance(value, int) or value < 0 or value + offset > ROW_MAX:
        return 0
    return value + offset


def _message(text: str) -> str:
    """A message for one row: cleaned and bounded; UNPRINTABLE when nothing printable is left."""
    return one_line(text, MAX_MESSAGE) or (UNPRINTABLE if text[:MAX_LINE].strip() else "")


def parse_line(line: str) -> Diagnostic:
    """One raw compiler line as the viewer would have made it a diagnostic."""
    head = line[:MAX_LINE]
    m = _LSL.search(head)
    if m is not None:
        return Diagnostic(row=_number(int(m[1][:12]), 1), column=_number(int(m[2][:12]), 1),
                          level=one_line(m[3], 40) or "ERROR", message=_message(m[4]), format="lsl")
    m = _LUAU.match(head)
    if m is not None:
        return Diagnostic(row=_number(int(m[2][:12])), column=0, level="ERROR",
                          message=one_line(m[3], MAX_MESSAGE) or _message(head))
    return Diagnostic(row=0, column=0, level="ERROR", message=_message(line))


def _record(value: dict[str, Any]) -> Diagnostic:
    """A structured row, every field optional: a bad row or column is 0, a missing level ERROR."""
    message = value.get("message")
    level = value.get("level")
    return Diagnostic(row=_number(value.get("row")), column=_number(value.get("column")),
                      level=one_line(level, 40) if isinstance(level, str) and level.strip() else "ERROR",
                      message=_message(message) if isinstance(message, str) else "",
                      format=value.get("format") if isinstance(value.get("format"), str) else None)


def compile_rows(diagnostics: Any, errors: Any) -> CompileRows:
    """The rows of a verdict from its `diagnostics` and `errors` fields (either, both or neither)."""
    rows: list[Diagnostic] = []
    problems: list[str] = []
    for field, value in (("diagnostics", diagnostics), ("errors", errors)):
        if value is None:
            continue
        if isinstance(value, (str, dict)):
            value = [value]  # one line or one record where a list was expected
        elif not isinstance(value, list):
            problems.append(f"{field}: a {type(value).__name__}, not a list; ignored")
            continue
        for element in value:
            if len(rows) >= MAX_ROWS:
                problems.append(f"{field}: more than {MAX_ROWS} rows; the rest not shown")
                break
            if isinstance(element, str):
                rows.extend(parse_line(part) for part in element.split("\n")[:MAX_ROWS - len(rows)] if part.strip())
            elif isinstance(element, dict):
                rows.append(_record(element))
            else:
                problems.append(f"{field}[]: a {type(element).__name__}, not a line or a record; ignored")
    return CompileRows(tuple(rows), tuple(dict.fromkeys(problems)))
