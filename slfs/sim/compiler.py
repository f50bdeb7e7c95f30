"""A small, deterministic stand-in for the LSL and Luau compilers, and for what a running script says.

It is not a parser: it catches what a test or a person is likely to type wrong, and reports it the
way the viewer does, with at most one diagnostic (the real compilers stop at the first error).

LSL (diagnostics with 1-based row and column, level "ERROR", format "lsl"):
  * a line containing the words `syntax error` (any case, outside strings and comments),
  * a character that is no LSL token (`@`, `$`, `` ` ``, `\\`, `#`, `?`) outside strings/comments,
  * unbalanced or mismatched `{}`, `()`, `[]`, an unterminated string or block comment,
  * no `default` state.
Luau (row 1-based, column always 0, level "ERROR", no format):
  * a line containing `syntax error`,
  * unbalanced `()`/`{}`/`[]`, unterminated strings / long strings / long comments,
  * blocks: `function`/`if`/`do`/`while`/`for` need `end`, `repeat` needs `until`, an `if` or
    `elseif` needs `then`, a `while`/`for` needs `do`; a stray `end`/`until`/`then`/`do`.

Runtime behaviour of a running script (see `runtime_events`): every `llOwnerSay("...")` (LSL) or
`ll.OwnerSay("...")` (Luau) with a plain string literal says that string on the "owner_say"
channel, in source order; a line containing `SIM_RUNTIME_ERROR` raises a runtime error at that
line (`SIM_RUNTIME_ERROR("text")` picks the error text, default "Math Error" / "attempt to
perform arithmetic on a nil value").
"""

from __future__ import annotations

import re
from typing import Any

import attrs

_BAD_LSL_CHARS = set("@$`\\#?")
# `@name;` declares a jump label (LSL's `jump name;` goes there); any other `@` is an error.
_LABEL = re.compile(r"[A-Za-z_]\w*\s*;")
_PAIRS = {")": "(", "]": "[", "}": "{"}


def compile_source(text: str, language: str) -> list[dict[str, Any]]:
    """Diagnostics for `text`; an empty list means it compiles."""
    return _compile_luau(text) if language == "luau" else _compile_lsl(text)


# --- LSL -----------------------------------------------------------------------------------------


def _lsl_diag(row: int, col: int, message: str) -> list[dict[str, Any]]:
    return [{"row": row, "column": col, "level": "ERROR", "message": message, "format": "lsl"}]


def _lsl_code_mask(text: str) -> tuple[list[str], str | None, tuple[int, int]]:
    """Lines with strings and comments blanked out; an error for unterminated ones."""
    out: list[str] = []
    in_block = False
    block_start = (0, 0)
    for r, line in enumerate(text.split("\n"), start=1):
        buf = []
        i = 0
        while i < len(line):
            ch = line[i]
            if in_block:
                if line.startswith("*/", i):
                    in_block = False
                    buf.append("  ")
                    i += 2
                    continue
                buf.append(" ")
                i += 1
                continue
            if line.startswith("//", i):
                buf.append(" " * (len(line) - i))
                break
            if line.startswith("/*", i):
                in_block = True
                block_start = (r, i + 1)
                buf.append("  ")
                i += 2
                continue
            if ch == '"':
                j = i + 1
                while j < len(line) and line[j] != '"':
                    j += 2 if line[j] == "\\" else 1
                if j >= len(line):
                    return out, "Syntax error: unterminated string", (r, i + 1)
                buf.append('"' + " " * (j - i - 1) + '"')
                i = j + 1
                continue
            buf.append(ch)
            i += 1
        out.append("".join(buf))
    if in_block:
        return out, "Syntax error: unterminated comment", block_start
    return out, None, (0, 0)


def _in_for_header(lines: list[str], opener: tuple[str, int, int]) -> bool:
    kind, row, col = opener
    return kind == "(" and re.search(r"\bfor\s*$", lines[row - 1][: col - 1]) is not None


def _compile_lsl(text: str) -> list[dict[str, Any]]:
    lines, err, pos = _lsl_code_mask(text)
    if err:
        return _lsl_diag(pos[0], pos[1], err)
    stack: list[tuple[str, int, int]] = []
    for r, line in enumerate(lines, start=1):
        m = re.search(r"syntax\s+error", line, re.IGNORECASE)
        if m:
            return _lsl_diag(r, m.start() + 1, "Syntax error")
        for c, ch in enumerate(line, start=1):
            if ch in _BAD_LSL_CHARS and not (ch == "@" and _LABEL.match(line, c)):
                return _lsl_diag(r, c, "Syntax error")
            if ch == ";" and stack and stack[-1][0] in "([" and not _in_for_header(lines, stack[-1]):
                return _lsl_diag(r, c, "Syntax error")
            if ch in "([{":
                stack.append((ch, r, c))
            elif ch in ")]}":
                if not stack or stack[-1][0] != _PAIRS[ch]:
                    return _lsl_diag(r, c, "Syntax error")
                stack.pop()
    if stack:
        last = len(lines)
        return _lsl_diag(last, len(lines[-1]) + 1 if lines else 1, "Syntax error: unexpected end of file")
    if not re.search(r"(^|[^\w])default\s*\{", "\n".join(lines)):
        last = max(len(lines), 1)
        return _lsl_diag(last, 1, "Syntax error: missing default state")
    return []


# --- Luau ----------------------------------------------------------------------------------------


@attrs.frozen
class _Tok:
    text: str
    row: int


def _luau_diag(row: int, message: str) -> list[dict[str, Any]]:
    return [{"row": row, "column": 0, "level": "ERROR", "message": message}]


class _LuauError(Exception):
    def __init__(self, row: int, message: str) -> None:
        super().__init__(message)
        self.row = row
        self.message = message


def _luau_tokens(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, row, n = 0, 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            row += 1
            i += 1
            continue
        if ch.isspace():
            i += 1
            continue
        if text.startswith("--", i):
            m = re.match(r"--\[(=*)\[", text[i:])
            if m:
                close = "]" + m.group(1) + "]"
                end = text.find(close, i + m.end())
                if end < 0:
                    raise _LuauError(row, f"Expected ']]' (to close '[[' at line {row}), got <eof>")
                row += text.count("\n", i, end)
                i = end + len(close)
                continue
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        m = re.match(r"\[(=*)\[", text[i:])
        if m:
            close = "]" + m.group(1) + "]"
            end = text.find(close, i + m.end())
            if end < 0:
                raise _LuauError(row, "Malformed string; did you forget to finish it?")
            toks.append(_Tok("<string>", row))
            row += text.count("\n", i, end)
            i = end + len(close)
            continue
        if ch in "\"'`":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j >= n or text[j] != ch:
                raise _LuauError(row, "Malformed string; did you forget to finish it?")
            toks.append(_Tok("<string>", row))
            i = j + 1
            continue
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[i:])
        if m:
            toks.append(_Tok(m.group(0), row))
            i += m.end()
            continue
        m = re.match(r"\d[\w.]*", text[i:])
        if m:
            toks.append(_Tok("<number>", row))
            i += m.end()
            continue
        toks.append(_Tok(ch, row))
        i += 1
    toks.append(_Tok("<eof>", row))
    return toks


_STATEMENT_STARTS = {"local", "return", "function", "if", "while", "for", "repeat", "end", "until", "<eof>"}


def _show(tok: _Tok) -> str:
    return tok.text if tok.text.startswith("<") else f"'{tok.text}'"


def _check_luau(toks: list[_Tok]) -> None:
    # Lines with the marker first, in source order with everything else.
    blocks: list[tuple[str, int]] = []  # opener, row
    brackets: list[tuple[str, int]] = []
    expect: tuple[str, str, int] | None = None  # (wanted, for-what, row)
    for tok in toks:
        t = tok.text
        if expect is not None:
            wanted, what, row = expect
            if t == wanted:
                expect = None
                continue
            if t in _STATEMENT_STARTS or t in ("then", "do", "else", "elseif"):
                raise _LuauError(tok.row, f"Expected '{wanted}' when parsing {what}, got {_show(tok)}")
        if t in "([{" and len(t) == 1:
            brackets.append((t, tok.row))
            continue
        if t in ")]}" and len(t) == 1:
            if not brackets or brackets[-1][0] != _PAIRS[t]:
                raise _LuauError(
                    tok.row,
                    f"Expected <eof>, got '{t}'"
                    if not brackets
                    else f"Expected '{dict((v, k) for k, v in _PAIRS.items())[brackets[-1][0]]}' "
                    f"(to close '{brackets[-1][0]}' at line {brackets[-1][1]}), got '{t}'",
                )
            brackets.pop()
            continue
        if t == "<eof>":
            if brackets:
                b, row = brackets[-1]
                closer = {v: k for k, v in _PAIRS.items()}[b]
                raise _LuauError(tok.row, f"Expected '{closer}' (to close '{b}' at line {row}), got <eof>")
            if blocks:
                opener, row = blocks[-1]
                want = "until" if opener == "repeat" else "end"
                raise _LuauError(tok.row, f"Expected '{want}' (to close '{opener}' at line {row}), got <eof>")
            return
        if t == "function":
            blocks.append(("function", tok.row))
        elif t == "if":
            blocks.append(("if", tok.row))
            expect = ("then", "if statement", tok.row)
        elif t == "elseif":
            if not blocks or blocks[-1][0] != "if":
                raise _LuauError(tok.row, "Expected <eof>, got 'elseif'")
            expect = ("then", "if statement", tok.row)
        elif t in ("while", "for"):
            blocks.append((t, tok.row))
            expect = ("do", f"{t} loop", tok.row)
        elif t == "do":
            blocks.append(("do", tok.row))
        elif t == "repeat":
            blocks.append(("repeat", tok.row))
        elif t == "end":
            if not blocks or blocks[-1][0] == "repeat":
                raise _LuauError(tok.row, "Expected <eof>, got 'end'")
            blocks.pop()
        elif t == "until":
            if not blocks or blocks[-1][0] != "repeat":
                raise _LuauError(tok.row, "Expected <eof>, got 'until'")
            blocks.pop()
        elif t in ("then", "else") and (not blocks or blocks[-1][0] != "if"):
            raise _LuauError(tok.row, f"Expected <eof>, got '{t}'")


def _compile_luau(text: str) -> list[dict[str, Any]]:
    for r, line in enumerate(text.split("\n"), start=1):
        code = line.split("--", 1)[0]
        if re.search(r"syntax\s+error", code, re.IGNORECASE):
            return _luau_diag(r, "Incomplete statement: expected assignment or a function call")
    try:
        _check_luau(_luau_tokens(text))
    except _LuauError as exc:
        return _luau_diag(exc.row, exc.message)
    return []


# --- runtime -------------------------------------------------------------------------------------

_SAY_LSL = re.compile(r'\bllOwnerSay\s*\(\s*"((?:[^"\\\n]|\\.)*)"\s*\)')
_SAY_LUAU = re.compile(r'\bll\.OwnerSay\s*\(\s*(["\'])((?:(?!\1)[^\\\n]|\\.)*)\1\s*\)')
_ERROR_MARK = re.compile(r'SIM_RUNTIME_ERROR(?:\s*\(\s*"((?:[^"\\\n]|\\.)*)"\s*\))?')


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "    "}.get(m.group(1), m.group(1)), s)


@attrs.frozen
class RuntimeEvent:
    kind: str  # "debug" | "error"
    message: str
    line: int = 0


def runtime_events(text: str, language: str) -> list[RuntimeEvent]:
    """What a freshly (re)started script says, in source order."""
    events: list[RuntimeEvent] = []
    for r, line in enumerate(text.split("\n"), start=1):
        if language == "luau":
            for m in _SAY_LUAU.finditer(line):
                events.append(RuntimeEvent("debug", _unescape(m.group(2)), r))
        else:
            for m in _SAY_LSL.finditer(line):
                events.append(RuntimeEvent("debug", _unescape(m.group(1)), r))
        em = _ERROR_MARK.search(line)
        if em:
            default = "attempt to perform arithmetic on a nil value" if language == "luau" else "Math Error"
            events.append(RuntimeEvent("error", _unescape(em.group(1)) if em.group(1) else default, r))
    return events
