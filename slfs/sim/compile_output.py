"""Compile output as the viewer's C++ handles it (research viewer-source.md §3).

The simulator answers an upload with raw compiler lines (strings); the viewer either passes them on
as is (G1's object explorer: `errors`) or converts each into a diagnostic by one of two patterns,
chosen by target (Luau for luau, else LSL). The sim's compiler (compiler.py) gives diagnostics;
`raw_lines` prints them the way the compilers do, `parse_line` is the viewer's conversion.
"""

from __future__ import annotations

import re
from typing import Any

# viewer-source.md §3: Luau `name:row: message` ("G2+ allow any spaces after the colon; G1 needed
# exactly one"); LSL `(row, col) : LEVEL : message`, both 0-based.
_LUAU_ANY = re.compile(r"^(.+?):(\d+): *(.*)$", re.DOTALL)
_LUAU_ONE = re.compile(r"^(.+?):(\d+): (.*)$", re.DOTALL)
_LSL = re.compile(r"^\((\d+),\s*(\d+)\)\s*:\s*([A-Za-z]+)\s*:\s*(.*)$", re.DOTALL)
_INT_MAX = 2**31 - 1


def raw_lines(diagnostics: list[dict[str, Any]], name: str, language: str) -> list[str]:
    """The compiler's own lines for `diagnostics`: LSL `(row, col) : LEVEL : message` with 0-based
    row and column; Luau `[string "<script name>"]:<row>: message` (1-based row, no column), as in
    viewer-source.md's example `[string "Main"]:2: Expected identifier, got 'BREAK'`."""
    out = []
    for d in diagnostics:
        if language == "luau":
            out.append(f'[string "{name}"]:{d["row"]}: {d["message"]}')
        else:
            row, col = max(0, d["row"] - 1), max(0, d["column"] - 1)
            out.append(f"({row}, {col}) : {d.get('level', 'ERROR')} : {d['message']}")
    return out


def parse_line(line: str, *, luau: bool, live: bool, strict_luau: bool = False) -> dict[str, Any]:
    """The viewer's conversion of one compiler line (viewer-source.md §3). Luau: row as is, column
    0, level "ERROR", no format. LSL: row and column +1, the compiler's level, `format:"lsl"`. A line
    neither pattern takes: row 0, column 0, the whole line as message, level "ERROR", and
    `format:"lsl"` only on the live-sync path for LSL. Numbers past 2^31 fall back to row 0 /
    column 0 (the checked conversion of later copies). `strict_luau`: G1's pattern (one space)."""
    if luau:
        m = (_LUAU_ONE if strict_luau else _LUAU_ANY).match(line)
        if m and int(m.group(2)) <= _INT_MAX:
            return {"row": int(m.group(2)), "column": 0, "level": "ERROR", "message": m.group(3)}
    else:
        m = _LSL.match(line)
        if m:
            row, col = int(m.group(1)), int(m.group(2))
            if row >= _INT_MAX or col >= _INT_MAX:
                row = col = -1
            return {
                "row": row + 1,
                "column": col + 1,
                "level": m.group(3),
                "message": m.group(4),
                "format": "lsl",
            }
    out: dict[str, Any] = {"row": 0, "column": 0, "level": "ERROR", "message": line}
    if live and not luau:
        out["format"] = "lsl"
    return out
