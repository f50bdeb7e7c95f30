"""`require("...")` inlining for Luau, as Linden's VS Code extension does it.

The extension (secondlife/sl-vscode-plugin, `src/shared/parser.ts`, `doc/preprocessor-guide.md`)
turns a main script and the modules it requires into one chunk: a local table of module functions,
each module's body wrapped once in `(function() ... end)` in a numbered slot (numbered in the order
modules are first met, a module before the modules it requires), a `-- @line 1 "<module>"` marker as
the first line of each body, every `require("x")` replaced by `__require_table[N]()`, and the table
set to nil at the end of the main chunk. Nested requires are resolved relative to the module that
contains them; a module is keyed by what it resolved to, so two spellings of one file share a slot.

What differs here, on purpose: the extension puts the table in front of the main script, which moves
every line of it down. Here the main chunk keeps its rows: it becomes the body of a local function
opened in front of its first token (on the same row, after any leading comments such as `--!strict`)
and closed after its last line, the slots are filled after it, then it is called with the chunk's
`...`, then the table is cleared. At run time the order is the same as the extension's (slots filled,
main code, table cleared); only the text is arranged so that no main-file line changes row.

Limits (LimitExceeded, the save's EFBIG), checked while bundling: the bundle never grows past
the in-world size (main file and modules, counted as each module is added), requires nest at most
MAX_REQUIRE_DEPTH deep, at most MAX_MODULES modules. The `-- @line` markers name files as the
in-world text may show them (`Source.inworld_name`), never by a local absolute path.

Only the lexical structure of Luau is needed (comments, quoted, long and interpolated strings) to
find calls outside strings and comments; no parser.
"""

from __future__ import annotations

import bisect
import posixpath
import re

import attrs

from slfs.sources import (
    INCLUDE_LIMIT,
    INWORLD_LIMIT,
    Expansion,
    LimitExceeded,
    Origin,
    PreprocessError,
    Resolver,
    Source,
)

MAX_REQUIRE_DEPTH = 64
MAX_MODULES = 256
TABLE = "__require_table"
_CLEAR = f"{TABLE} = nil :: any"
# Extensions tried, in order, for a name written without one (the extension asks its host for
# `luau` then `lua`).
EXTENSIONS = (".luau", ".lua")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9][A-Za-z0-9_.]*")
_LONG_OPEN = re.compile(r"\[(=*)\[")
# What follows the identifier `require` in a call with one plain string literal (no escapes).
_CALL_ARGS = re.compile(r"""\s*\(\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*\)""")


@attrs.frozen
class _Call:
    name: str
    row: int
    col: int
    start: int  # offset of `require`
    end: int  # offset after `)`


@attrs.frozen
class _Scan:
    calls: tuple[_Call, ...]
    first_code: int  # offset of the first token outside comments, -1 when there is none


def _long_end(text: str, i: int, level: int) -> int:
    """Offset after the `]=*]` closing a long bracket whose content starts at `i`, or len(text)."""
    close = "]" + "=" * level + "]"
    j = text.find(close, i)
    return len(text) if j < 0 else j + len(close)


def _quoted_end(text: str, i: int, quote: str) -> int:
    """Offset after a '...' or "..." string whose content starts at `i`. An unterminated string
    ends at the end of its line (the compiler reports it; nothing after it is taken as code)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if text.startswith("z", i + 1):  # \z skips the white space after it, newlines too
                i += 2
                while i < n and text[i].isspace():
                    i += 1
                continue
            i += 2  # an escaped character, an escaped newline included
            continue
        if c == quote:
            return i + 1
        if c == "\n":
            return i
        i += 1
    return n


def _backtick_end(text: str, i: int) -> tuple[int, bool]:
    """Scan an interpolated string from `i` (after the opening backtick or after the `}` closing
    an interpolation): the offset after the closing backtick and False, or after an opening `{`
    and True (code follows until the matching `}`)."""
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            return i + 1, False
        if c == "{":
            return i + 1, True
        if c == "\n":
            return i, False
        i += 1
    return n, False


def _scan(text: str) -> _Scan:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    calls: list[_Call] = []
    first_code = -1
    prev = ""  # the previous token's last character (to tell `a.require(...)` from `require(...)`)
    braces: list[int] = []  # per open interpolation, the depth of `{` inside it
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if text.startswith("--", i):
            m = _LONG_OPEN.match(text, i + 2)
            if m:
                i = _long_end(text, m.end(), len(m.group(1)))
            else:
                j = text.find("\n", i)
                i = n if j < 0 else j
            continue
        if first_code < 0:
            first_code = i
        if c == "[":
            m = _LONG_OPEN.match(text, i)
            if m:
                i, prev = _long_end(text, m.end(), len(m.group(1))), "]"
                continue
        if c in "\"'":
            i, prev = _quoted_end(text, i + 1, c), c
            continue
        if c == "`" or (c == "}" and braces and braces[-1] == 0):
            if c == "}":
                braces.pop()
            i, interpolating = _backtick_end(text, i + 1)
            if interpolating:
                braces.append(0)
                prev = "{"
            else:
                prev = "`"
            continue
        if c == "{" and braces:
            braces[-1] += 1
        elif c == "}" and braces:
            braces[-1] -= 1
        m = _NAME.match(text, i)
        if m:
            if m.group(0) == "require" and prev not in (".", ":"):
                args = _CALL_ARGS.match(text, m.end())
                if args:
                    row = bisect.bisect_right(starts, i)
                    name = args.group(1) if args.group(1) is not None else args.group(2)
                    calls.append(_Call(name, row, i - starts[row - 1] + 1, i, args.end()))
                    i, prev = args.end(), ")"
                    continue
            i, prev = m.end(), "a"
            continue
        m = _NUMBER.match(text, i)
        if m:
            i, prev = m.end(), "0"
            continue
        if c == ".":  # `a.require(...)` is a field, `s..require(...)` a concatenation
            j = i + 1
            while j < n and text[j] == ".":
                j += 1
            i, prev = j, "." if j == i + 1 else ".."
            continue
        i, prev = i + 1, c
    return _Scan(tuple(calls), first_code)


def requires(source: str) -> list[tuple[str, int, int]]:
    """Every `require("name")` / `require('name')` with one plain string literal, outside strings
    and comments, as (name, row, col), 1-based. A call on a field or method (`m.require(...)`,
    `m:require(...)`), a dynamic argument or `require "x"` without parentheses is not one."""
    return [(c.name, c.row, c.col) for c in _scan(source).calls]


def candidates(name: str) -> tuple[str, ...]:
    """The names a require is looked up by: as written when it has an extension, else with `.luau`
    then `.lua` appended."""
    return (name,) if posixpath.splitext(posixpath.basename(name))[1] else tuple(name + e for e in EXTENSIONS)


def _find(resolver: Resolver, name: str, including: str) -> Source | None:
    for candidate in candidates(name):
        found = resolver.find(candidate, including=including, angle=False)
        if found is not None:
            return found
    return None


def resolvable_requires(source: str, path: str, resolver: Resolver) -> bool:
    """Whether at least one of the main file's requires resolves (the source then uses requires
    and is expanded; otherwise its requires are left for the run time)."""
    return any(_find(resolver, c.name, path) is not None for c in _scan(source).calls)


@attrs.define
class _Module:
    source: Source
    lines: list[str]  # its text, requires replaced
    cause: Origin  # the require that first asked for it


def _slot_call(slot: int, span: str) -> str:
    """The call replacing a require, with the require's newlines kept so that rows stay."""
    return f"{TABLE}[{slot}](" + "\n" * span.count("\n") + ")"


def _edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    out: list[str] = []
    at = 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):
        out.append(text[at:start])
        out.append(new)
        at = end
    out.append(text[at:])
    return "".join(out)


def _body_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a final newline ends the last line, it does not start another
    return lines


class _Inliner:
    def __init__(self, resolver: Resolver, main: str) -> None:
        self.resolver = resolver
        self.slots: dict[str, int] = {}  # Source.identity -> slot
        self.modules: list[_Module] = []  # slot N at index N-1
        self.size = len(main.encode("utf-8"))  # bytes of the bundle's sources so far
        self.found: dict[tuple[str, str], Source | None] = {}  # (name, including) -> what it resolved to

    def find(self, name: str, including: str) -> Source | None:
        key = (name, including)
        if key not in self.found:
            self.found[key] = _find(self.resolver, name, including)
        return self.found[key]

    def add(self, found: Source, path: str, call: _Call, depth: int) -> None:
        """Check the limits before `found` joins the bundle, required at `call` of `path`."""
        def stop(limit: str, message: str) -> None:
            raise LimitExceeded(path, call.row, call.col, message, limit)
        if depth > MAX_REQUIRE_DEPTH:
            stop("require depth", f"requires nested deeper than {MAX_REQUIRE_DEPTH} (the require depth limit)")
        if len(self.modules) >= MAX_MODULES:
            stop("modules", f"more than {MAX_MODULES} modules (the module limit)")
        if found.oversize:
            stop("include size", f'"{call.name}" is larger than {INCLUDE_LIMIT} bytes (the include size limit)')
        self.size += len(found.text.encode("utf-8"))
        if self.size > INWORLD_LIMIT:
            stop("in-world size", f"the bundle passes {INWORLD_LIMIT} bytes with \"{call.name}\", the most a "
                 "script's in-world text holds (the in-world limit)")

    def rewrite(self, text: str, path: str, chain: list[tuple[str, str]]) -> tuple[str, _Scan]:
        """`text` (of the file at `path`) with its requires replaced by slot calls, modules it
        requires (and theirs) registered. `chain` is the (identity, path) of the files being
        expanded, outermost first, `path`'s own last."""
        scan = _scan(text)
        edits: list[tuple[int, int, str]] = []
        for call in scan.calls:
            found = self.find(call.name, path)
            if found is None:
                searched: list[str] = []
                for candidate in candidates(call.name):
                    for place in self.resolver.searched(candidate, including=path, angle=False):
                        if place not in searched:
                            searched.append(place)
                raise PreprocessError(
                    path,
                    call.row,
                    call.col,
                    f'module not found: "{call.name}" (searched: {", ".join(searched) or "nowhere"})',
                )
            identities = [identity for identity, _ in chain]
            if found.identity in identities:
                loop = [p for _, p in chain[identities.index(found.identity) :]] + [found.path]
                raise PreprocessError(path, call.row, call.col, "require cycle: " + " -> ".join(loop))
            slot = self.slots.get(found.identity)
            if slot is None:
                self.add(found, path, call, len(chain))
                slot = self.slots[found.identity] = len(self.modules) + 1
                module = _Module(found, [], Origin(path, call.row))
                self.modules.append(module)
                body, _ = self.rewrite(found.text, found.path, [*chain, (found.identity, found.path)])
                module.lines = _body_lines(body)
            edits.append((call.start, call.end, _slot_call(slot, text[call.start : call.end])))
        return _edit(text, edits), scan


def expand_luau(source: str, path: str, resolver: Resolver, *, name: str = "") -> Expansion:
    """`source` (the main file at `path`) with every module it requires inlined, laid out as the
    VS Code extension lays it out: the module table and its numbered slots first, then the main
    chunk (its requires now calls of their slots), then the table cleared. Hot comments (`--!`)
    that open the main file stay first, where Luau reads them. Rows move; the origins say where
    each line came from.

    `name` is the main file's name in the in-world text (its `-- @line` marker; by default the last
    component of `path`).

    Raises PreprocessError for a require that does not resolve and for a cycle, LimitExceeded for
    a bundle past a limit. A source without requires comes back unchanged."""
    inliner = _Inliner(resolver, source)
    text, scan = inliner.rewrite(source, path, [(path, path)])
    lines = text.split("\n")
    if not inliner.modules:
        return Expansion(text, tuple(Origin(path, row) for row in range(1, len(lines) + 1)))
    eol = "\r" if lines[0].endswith("\r") else ""
    main = [(line, Origin(path, row)) for row, line in enumerate(lines, start=1)]
    hot = 0
    while hot < len(main) and main[hot][0].startswith("--!"):
        hot += 1
    cause = Origin(path, scan.calls[0].row)
    # (text, origin, generated): generated lines end as the main file's first line does, so a
    # "\r\n" file stays one.
    head: list[tuple[str, Origin, bool]] = [(f"local {TABLE}: {{ [number]: () -> any }} = {{}}", cause, True)]
    for slot, module in enumerate(inliner.modules, start=1):
        head.append((f"{TABLE}[{slot}] = (function()", module.cause, True))
        head.append((f'-- @line 1 "{module.source.inworld_name}"', module.cause, True))
        head.extend((line, Origin(module.source.path, row), False) for row, line in enumerate(module.lines, start=1))
        head.append(("end)", module.cause, True))
    head.append((f'-- @line {hot + 1} "{name or posixpath.basename(path)}"', cause, True))
    final_newline = len(main) > hot and main[-1][0] == ""
    body = main[hot:-1] if final_newline else main[hot:]
    out = [(line, origin, False) for line, origin in main[:hot]] + head
    out += [(line, origin, False) for line, origin in body]
    out.append((_CLEAR, cause, True))
    if final_newline:
        out.append(("", cause, False))
    return Expansion("\n".join(line + eol if generated else line for line, _o, generated in out),
                     tuple(origin for _l, origin, _g in out), tuple(m.source.path for m in inliner.modules))
