"""What Firestorm's steps (firestorm.py, firestorm_switch.py) share: the tokens of a text, the
brackets that close, the way from offsets back to lines, and the work budget of one step, which
runs in the expansion's worker thread where nothing can stop it from outside."""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable

import attrs

from slfs.sources import LimitExceeded, Line, Origin, PreprocessError

WORK_LIMIT = 20_000_000  # tokens scanned by one step; a 64 KiB script takes some 100,000


class OverBudget(Exception):
    pass


# The tokens scanned so far by the step running in this thread (saves expand in parallel threads).
_scanned = threading.local()


def spend(steps: int) -> None:
    _scanned.steps = getattr(_scanned, "steps", 0) + steps
    if _scanned.steps > WORK_LIMIT:
        raise OverBudget


def bounded(step: str, lines: list[Line], run: Callable[[list[Line]], list[Line]]) -> list[Line]:
    """`run(lines)` with a fresh count; over the limit, a LimitExceeded at the text's first line."""
    _scanned.steps = 0
    try:
        return run(lines)
    except OverBudget:
        origin = lines[0].origin
        raise LimitExceeded(origin.path, origin.row, 1, f"Firestorm's {step} step stopped after {WORK_LIMIT} "
                            "tokens scanned (its work limit)", "work") from None
    except RecursionError:
        origin = lines[0].origin
        raise LimitExceeded(origin.path, origin.row, 1, f"Firestorm's {step} step: nested too deeply "
                            "(its nesting limit)", "nesting") from None

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*[\s\S]*?(?:\*/|\Z))
  | (?P<string>"(?:[^"\\\n]|\\.)*"?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>0[xX][0-9A-Fa-f]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
  | (?P<op>==|!=|<=|>=|&&|\|\||<<|>>|\+=|-=|\*=|/=|%=|\+\+|--|.)
    """,
    re.VERBOSE,
)

INDENT = "    "


@attrs.frozen
class Tok:
    kind: str  # ident, number, string, op
    text: str
    start: int
    end: int


def tokens(text: str) -> list[Tok]:
    """The tokens of `text`, blanks and comments left out (their text stays between tokens)."""
    spend(len(text) // 4)
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "op"
        if kind not in ("space", "comment"):
            out.append(Tok(kind, m.group(), m.start(), m.end()))
    return out


def closing(toks: list[Tok], i: int, end: int) -> int | None:
    """The index of the bracket that closes `toks[i]` (one of `( [ {`), None when it is not closed
    before `end`. Only brackets of that one kind are counted; strings are single tokens."""
    left = toks[i].text
    right = {"(": ")", "[": "]", "{": "}"}[left]
    depth = 0
    for k in range(i, end):
        t = toks[k]
        if t.kind != "op":
            continue
        if t.text == left:
            depth += 1
        elif t.text == right:
            depth -= 1
            if depth == 0:
                spend(k - i)
                return k
    spend(end - i)
    return None


class Text:
    """The input lines joined, with the way from offsets back to lines and columns."""

    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.text = "\n".join(line.text for line in lines)
        self.starts = [0]
        for line in lines[:-1]:
            self.starts.append(self.starts[-1] + len(line.text) + 1)

    def row(self, offset: int) -> int:
        """The 0-based index of the line that holds `offset`."""
        return bisect.bisect_right(self.starts, offset) - 1

    def origin(self, offset: int) -> Origin:
        return self.lines[self.row(offset)].origin

    def indent(self, offset: int) -> str:
        line = self.lines[self.row(offset)].text
        return line[: len(line) - len(line.lstrip(" \t"))]

    def error(self, offset: int, message: str) -> PreprocessError:
        row = self.row(offset)
        origin = self.lines[row].origin
        return PreprocessError(origin.path, origin.row, offset - self.starts[row] + 1, message)
