"""Firestorm's own steps after the C preprocessor: lazy lists and `switch`.

What Firestorm does (phoenix-firestorm, `indra/newview/fslslpreproc.cpp`: `reformat_lazy_lists`,
`subst_lazy_references`, `reformat_switch_statements`, `start_process`), and what is done here:

Lazy lists (`lazy_lists`)
  * `name[index] = value;` becomes `name=lazy_list_set(name,index,[value]);`: the index and the value
    are kept as written (the value runs to the first `;` or `)` outside parentheses, its trailing
    blanks included), the blanks around `[`, `]` and `=` go. The terminator may be `)`, so
    `for (...; ...; l[i] = 0)` works. `==` is no assignment; `+=` and friends are not rewritten;
    `return`, `do` and `else` are never taken for a list name. It is one pass: a value or an index is
    not searched for further assignments.
  * `(type)name[index]` becomes `llList2Type(name,index)` for `integer`, `float`, `string`, `key`,
    `vector`, `rotation`/`quaternion` (`llList2Rot`) and `list` (`llList2List`, with two arguments,
    which the LSL compiler rejects: Firestorm does the same). `(type)(name[index])` becomes
    `(llList2Type(name,index))` when `)` follows `]` at once; with anything else in the parentheses
    the text is left alone. Each type is a pass repeated until nothing changes, in that order, after
    the assignments, so casts nest (`(integer)a[(integer)b[0]]`).
  * Firestorm puts its `lazy_list_set(list, integer, list)` function (pad the list with integer 0
    up to the index, then `llListReplaceList` the index) and an empty line in front of every script
    that has lazy lists on, used or not. Here a function of the same name, signature and behaviour
    (written here, not copied) is put in front only when an assignment was rewritten, and not when
    the script defines `lazy_list_set` itself.

`switch` (`switches`)
  * `switch (x) { ... }` becomes a block `{ ... }` that opens with a jump table: for each case
    `if((x) == (value))jump label;` (the switch's parenthesised expression as written, evaluated once
    per case, the case's value as written up to its `:`), then `jump` to the default's label, or to
    the end label when there is no default (Firestorm then warns "DefaultLabelMissing").
  * `case value:` becomes `@label;`; `case value {` becomes `@label; {` (Firestorm takes a `{`
    as the end of a case value as well as `:`). `default:` becomes `@label;`, `default {` becomes
    `@label; {`. Without a `break` nothing jumps, so cases fall through as in C.
  * Every `break;` in the switch's body becomes `jump end;`, at any depth, also inside a loop in the
    body (LSL has no `break`), except inside a nested switch, which is rewritten first and has its
    own labels. The end label `@end;` is put before the body's `}` when something jumps to it.
  * Firestorm's labels are random (`c` and five letters or digits); here they are
    `sw<N>_case<M>`, `sw<N>_default` and `sw<N>_end` (N counts switches in the text, M the cases of
    one switch), with `_` appended while a name is taken by an identifier of the script.
  * Firestorm orders its jump table by the text of the case values (a `std::map`, so a repeated
    value keeps only its last case); here the order is the source order and the first of equal
    cases wins, as in C.

Lines: every rewrite stays on the line of the text it replaces, and every input line keeps its row
and origin; where Firestorm drops a line break (blanks around `[`, `]`, `=`, the casts, the switch
head) the break is kept. The only new lines are the helper (with the origin of the first rewritten
assignment), the jump table (one line per case with the case's origin, the final `jump` with the
switch's) and the end label (the switch's origin), so compiler diagnostics map back to the case or
switch that produced the code.

The scanning is done over tokens (identifiers, numbers, strings with escapes, comments, operators),
so nothing inside a string literal is ever rewritten. A `case` or `default` label outside a switch,
a switch without a `{` body, unbalanced parentheses or braces in a switch, a case without its `:`,
and a second `default` raise `PreprocessError`.

Both steps run in the expansion's worker thread, which nothing can stop from outside: they count
the tokens they scan and stop at WORK_LIMIT (casts nested thousands deep need a pass each,
thousands of unclosed `a[` a scan to the end each), and switches nest at most MAX_SWITCH_DEPTH
deep; both raise `LimitExceeded` (the save's EFBIG).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Callable

import attrs

from slfs.sources import LimitExceeded, Line, Origin, PreprocessError

WORK_LIMIT = 20_000_000  # tokens scanned by one step; a 64 KiB script takes some 100,000
MAX_SWITCH_DEPTH = 64


class _OverBudget(Exception):
    pass


# The tokens scanned so far by the step running in this thread (saves expand in parallel threads).
_scanned = threading.local()


def _spend(steps: int) -> None:
    _scanned.steps = getattr(_scanned, "steps", 0) + steps
    if _scanned.steps > WORK_LIMIT:
        raise _OverBudget


def _bounded(step: str, lines: list[Line], run: Callable[[list[Line]], list[Line]]) -> list[Line]:
    """`run(lines)` with a fresh count; over the limit, a LimitExceeded at the text's first line."""
    _scanned.steps = 0
    try:
        return run(lines)
    except _OverBudget:
        origin = lines[0].origin
        raise LimitExceeded(origin.path, origin.row, 1, f"Firestorm's {step} step stopped after {WORK_LIMIT} "
                            "tokens scanned (its work limit)", "work") from None
    except RecursionError:
        origin = lines[0].origin
        raise LimitExceeded(origin.path, origin.row, 1, f"Firestorm's {step} step: nested too deeply "
                            "(its nesting limit)", "nesting") from None


HELPER = (
    "list lazy_list_set(list target, integer index, list value)",
    "{",
    "    while (llGetListLength(target) < index)",
    "        target += 0;",
    "    return llListReplaceList(target, value, index, index);",
    "}",
    "",
)

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

# Words that Firestorm never takes for the name of a list in `name[index] = value` (FIRE-20278).
_NOT_A_LIST = frozenset({"return", "do", "else"})

_CASTS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"integer"}), "llList2Integer"),
    (frozenset({"float"}), "llList2Float"),
    (frozenset({"string"}), "llList2String"),
    (frozenset({"key"}), "llList2Key"),
    (frozenset({"vector"}), "llList2Vector"),
    (frozenset({"rotation", "quaternion"}), "llList2Rot"),
    (frozenset({"list"}), "llList2List"),
)

_INDENT = "    "


@attrs.frozen
class _Tok:
    kind: str  # ident, number, string, op
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Tok]:
    """The tokens of `text`, blanks and comments left out (their text stays between tokens)."""
    _spend(len(text) // 4)
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "op"
        if kind not in ("space", "comment"):
            out.append(_Tok(kind, m.group(), m.start(), m.end()))
    return out


def _closing(toks: list[_Tok], i: int, end: int) -> int | None:
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
                _spend(k - i)
                return k
    _spend(end - i)
    return None


class _Text:
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


# --- lazy lists ----------------------------------------------------------------------------------


def lazy_lists(lines: list[Line]) -> list[Line]:
    """Firestorm's lazy lists: `a[i] = v;` and `(type)a[i]` rewritten, the helper in front once."""
    if not lines:
        return []
    return _bounded("lazy-list", lines, _lazy_lists)


def _lazy_lists(lines: list[Line]) -> list[Line]:
    src = _Text(lines)
    text, first = _lazy_assignments(src.text)
    for names, function in _CASTS:
        while True:
            rewritten = _lazy_references(text, names, function)
            if rewritten == text:
                break
            text = rewritten
    rows = text.split("\n")
    assert len(rows) == len(lines), "a lazy-list rewrite changed the number of lines"
    out = [Line(row, line.origin) for row, line in zip(rows, lines, strict=True)]
    if first is not None and not _defines_helper(_tokens(src.text)):
        origin = src.origin(first)
        out = [Line(row, origin) for row in HELPER] + out
    return out


def _assignment_at(toks: list[_Tok], i: int) -> tuple[int, int] | None:
    """For `name[index] = value` + `;` or `)` starting at `toks[i]`: the indexes of `]` and of the
    terminator."""
    name = toks[i]
    n = len(toks)
    if name.kind != "ident" or name.text in _NOT_A_LIST or i + 1 >= n or toks[i + 1].text != "[":
        return None
    close = _closing(toks, i + 1, n)
    if close is None or close == i + 2 or close + 2 >= n or toks[close + 1].text != "=":
        return None
    depth = 0
    for k in range(close + 2, n):
        t = toks[k]
        if t.kind != "op":
            continue
        if t.text == "(":
            depth += 1
        elif t.text == ")" and depth > 0:
            depth -= 1
        elif t.text == ")" or (t.text == ";" and depth == 0):
            _spend(k - close)
            return (close, k) if k > close + 2 else None
    _spend(n - close)
    return None


def _lazy_assignments(text: str) -> tuple[str, int | None]:
    """One pass of `name[index] = value` rewrites; also the offset of the first one rewritten."""
    toks = _tokens(text)
    out: list[str] = []
    pos = 0
    first: int | None = None
    i = 0
    while i < len(toks):
        found = _assignment_at(toks, i)
        if found is None:
            i += 1
            continue
        close, term = found
        name, bracket, value = toks[i], toks[i + 1], toks[close + 2]
        index = text[bracket.end : toks[close].start]
        # Firestorm drops the blanks around `[`, `]` and `=`; their line breaks are kept here.
        breaks_before_index = "\n" * text.count("\n", name.end, bracket.start)
        breaks_before_value = "\n" * text.count("\n", toks[close].end, value.start)
        out.append(text[pos : name.start])
        out.append(
            f"{name.text}=lazy_list_set({name.text},{breaks_before_index}{index},"
            f"{breaks_before_value}[{text[value.start : toks[term].start]}]){toks[term].text}"
        )
        pos = toks[term].end
        if first is None:
            first = name.start
        i = term + 1
    out.append(text[pos:])
    return "".join(out), first


def _lazy_references(text: str, names: frozenset[str], function: str) -> str:
    """One pass of `(type)name[index]` rewrites for the cast names `names`."""
    toks = _tokens(text)
    n = len(toks)
    out: list[str] = []
    pos = 0
    i = 0
    while i < n:
        if not (
            toks[i].text == "("
            and i + 2 < n
            and toks[i + 1].kind == "ident"
            and toks[i + 1].text in names
            and toks[i + 2].text == ")"
        ):
            i += 1
            continue
        j = i + 3
        paren = j < n and toks[j].text == "("
        if paren:
            j += 1
        if not (j + 1 < n and toks[j].kind == "ident" and toks[j + 1].text == "["):
            i += 1
            continue
        close = _closing(toks, j + 1, n)
        if close is None or close == j + 2:
            i += 1
            continue
        if paren and not (close + 1 < n and toks[close + 1].text == ")" and toks[close + 1].start == toks[close].end):
            # `(type)(name[index] ...)`: Firestorm leaves the whole of it as it is.
            i = close + 1
            continue
        breaks = "\n" * text.count("\n", toks[i].start, toks[j + 1].end)
        call = f"{function}({toks[j].text},{breaks}{text[toks[j + 1].end : toks[close].start]})"
        out.append(text[pos : toks[i].start])
        out.append(f"({call})" if paren else call)
        pos = toks[close + 1].end if paren else toks[close].end
        i = close + 2 if paren else close + 1
    out.append(text[pos:])
    return "".join(out)


def _defines_helper(toks: list[_Tok]) -> bool:
    """Whether the script has a global function `lazy_list_set` of its own."""
    depth = 0
    for k, t in enumerate(toks):
        if t.kind == "op" and t.text in "{}":
            depth += 1 if t.text == "{" else -1
        elif depth == 0 and t.text == "lazy_list_set" and k + 1 < len(toks) and toks[k + 1].text == "(":
            return True
    return False


# --- switch --------------------------------------------------------------------------------------


@attrs.define
class _Case:
    token: int  # index of `case`
    delimiter: int  # index of its `:` or `{`
    label: str


@attrs.define
class _Switch:
    number: int
    token: int  # index of `switch`
    rparen: int
    lbrace: int
    rbrace: int
    end_label: str
    default_label: str
    cases: list[_Case] = attrs.Factory(list)
    default: int | None = None  # index of `default`
    breaks: list[int] = attrs.Factory(list)
    case_at: dict[int, _Case] = attrs.Factory(dict)  # token index of `case` -> its case

    @property
    def needs_end(self) -> bool:
        return bool(self.breaks) or self.default is None


class _Parse:
    """Finds the switches of a text, their cases, defaults and breaks."""

    def __init__(self, src: _Text, toks: list[_Tok]) -> None:
        self.src = src
        self.toks = toks
        self.names = {t.text for t in toks if t.kind == "ident"}
        self.switches: list[_Switch] = []
        # token index -> what stands there: a switch's head or end, a case, a default, a break
        self.at: dict[int, tuple[str, _Switch]] = {}
        self.depth = 0
        self.scan(0, len(toks), None)

    def label(self, base: str) -> str:
        while base in self.names:
            base += "_"
        self.names.add(base)
        return base

    def scan(self, i: int, end: int, switch: _Switch | None) -> None:
        toks = self.toks
        while i < end:
            t = toks[i]
            following = toks[i + 1].text if i + 1 < end else ""
            if t.kind != "ident":
                i += 1
            elif t.text == "switch" and following == "(":
                i = self.switch(i, end)
            elif t.text == "case":
                delimiter = self.case_delimiter(i, end)
                if switch is None:
                    if delimiter is not None and toks[delimiter].text == ":":
                        raise self.src.error(t.start, "case outside a switch")
                    i += 1
                    continue
                if delimiter is None:
                    raise self.src.error(t.start, "case without a ':'")
                if delimiter == i + 1:
                    raise self.src.error(t.start, "case without a value")
                label = self.label(f"sw{switch.number}_case{len(switch.cases) + 1}")
                switch.cases.append(_Case(i, delimiter, label))
                switch.case_at[i] = switch.cases[-1]
                self.at[i] = ("case", switch)
                i = delimiter + 1 if toks[delimiter].text == ":" else delimiter
            elif t.text == "default" and following in (":", "{"):
                if switch is None:
                    if following == ":":
                        raise self.src.error(t.start, "default outside a switch")
                    i += 1
                    continue
                if switch.default is not None:
                    raise self.src.error(t.start, "a second default in the switch")
                switch.default = i
                self.at[i] = ("default", switch)
                i += 2 if following == ":" else 1
            elif t.text == "break" and following == ";" and switch is not None:
                switch.breaks.append(i)
                self.at[i] = ("break", switch)
                i += 1
            else:
                i += 1

    def case_delimiter(self, i: int, end: int) -> int | None:
        """The index of the `:` (or `{`) that ends the value of the case at `i`, None if a `;` or
        `}` comes first."""
        depth = 0
        for k in range(i + 1, end):
            t = self.toks[k]
            if t.kind != "op":
                continue
            if t.text in "([":
                depth += 1
            elif t.text in ")]":
                depth -= 1
                if depth < 0:
                    break
            elif depth == 0 and t.text in ":{":
                _spend(k - i)
                return k
            elif t.text in ";}":
                break
        else:
            k = end
        _spend(k - i)
        return None

    def switch(self, i: int, end: int) -> int:
        toks = self.toks
        rparen = _closing(toks, i + 1, end)
        if rparen is None:
            raise self.src.error(toks[i + 1].start, "unbalanced parentheses after switch")
        lbrace = rparen + 1
        if lbrace >= end or toks[lbrace].text != "{":
            raise self.src.error(toks[i].start, "switch (...) without a body in braces")
        rbrace = _closing(toks, lbrace, end)
        if rbrace is None:
            raise self.src.error(toks[lbrace].start, "unbalanced braces: the switch's body is not closed")
        self.depth += 1
        if self.depth > MAX_SWITCH_DEPTH:
            origin = self.src.origin(toks[i].start)
            raise LimitExceeded(origin.path, origin.row, 1, f"switches nested deeper than {MAX_SWITCH_DEPTH} "
                                "(the switch nesting limit)", "switch depth")
        number = len(self.switches) + 1
        switch = _Switch(
            number, i, rparen, lbrace, rbrace, self.label(f"sw{number}_end"), self.label(f"sw{number}_default")
        )
        self.switches.append(switch)
        self.at[i] = ("switch", switch)
        self.at[rbrace] = ("end", switch)
        self.scan(lbrace + 1, rbrace, switch)
        self.depth -= 1
        return rbrace + 1


class _Writer:
    """Output lines: copied input text keeps its lines' origins, generated lines get theirs."""

    def __init__(self, src: _Text) -> None:
        self.src = src
        self.out: list[Line] = []
        self.buf: list[str] = []
        self.origin = src.lines[0].origin

    def put(self, text: str) -> None:
        self.buf.append(text)

    def new_line(self, origin: Origin) -> None:
        self.out.append(Line("".join(self.buf), self.origin))
        self.buf = []
        self.origin = origin

    def copy(self, start: int, end: int, *, breaks_only: bool = False) -> None:
        """The input text from `start` to `end` (or only its line breaks)."""
        parts = self.src.text[start:end].split("\n")
        row = self.src.row(start)
        if not breaks_only:
            self.put(parts[0])
        for part in parts[1:]:
            row += 1
            self.new_line(self.src.lines[row].origin)
            if not breaks_only:
                self.put(part)

    def finish(self) -> list[Line]:
        self.out.append(Line("".join(self.buf), self.origin))
        return self.out


def _one_line(text: str) -> str:
    return text.replace("\r", "").replace("\n", " ")


def switches(lines: list[Line]) -> list[Line]:
    """Firestorm's `switch`: jump tables, labels and jumps (see the module's text)."""
    if not lines:
        return []
    return _bounded("switch", lines, _switches)


def _switches(lines: list[Line]) -> list[Line]:
    src = _Text(lines)
    toks = _tokens(src.text)
    parse = _Parse(src, toks)
    if not parse.switches:
        return list(lines)
    text = src.text
    w = _Writer(src)
    pos = 0
    i = 0
    while i < len(toks):
        found = parse.at.get(i)
        if found is None:
            i += 1
            continue
        what, sw = found
        tok = toks[i]
        indent = src.indent(toks[sw.token].start) + _INDENT
        if what == "end":
            # the switch's closing brace: the end label before it, on a line of its own when the
            # brace starts its line
            pos_break = text.rfind("\n", pos, tok.start)
            if sw.needs_end and pos_break >= 0 and not text[pos_break : tok.start].strip():
                w.copy(pos, pos_break)
                w.new_line(src.origin(toks[sw.token].start))
                w.put(f"{indent}@{sw.end_label};")
                w.copy(pos_break, tok.start)
            else:
                w.copy(pos, tok.start)
                if sw.needs_end:
                    w.put(f"@{sw.end_label};")
            pos = tok.start
            i += 1
            continue
        w.copy(pos, tok.start)
        if what == "switch":
            w.put("{")
            arg = _one_line(text[toks[i + 1].start : toks[sw.rparen].end])
            for case in sw.cases:
                value = _one_line(text[toks[case.token + 1].start : toks[case.delimiter].start])
                w.new_line(src.origin(toks[case.token].start))
                w.put(f"{indent}if({arg} == ({value}))jump {case.label};")
            w.new_line(src.origin(tok.start))
            w.put(f"{indent}jump {sw.default_label if sw.default is not None else sw.end_label};")
            brace = toks[sw.lbrace]
            eol = text.find("\n", brace.end)
            eol = len(text) if eol < 0 else eol
            if "\n" in text[tok.start : brace.end]:
                w.copy(tok.start, brace.end, breaks_only=True)
                pos = brace.end
            elif text[brace.end : eol].strip():
                w.new_line(src.origin(tok.start))
                pos = brace.end
            else:
                pos = eol
            i = sw.lbrace + 1
        elif what in ("case", "default"):
            if what == "case":
                case = sw.case_at[i]
                label, delimiter = case.label, case.delimiter
            else:
                label, delimiter = sw.default_label, i + 1
            w.put(f"@{label};")
            # `name :` is replaced whole; for `name {`, the `{` stays
            last = delimiter if toks[delimiter].text == ":" else delimiter - 1
            w.copy(tok.start, toks[last].end, breaks_only=True)
            pos = toks[last].end
            i = last + 1
        else:  # break
            w.put(f"jump {sw.end_label}")
            pos = tok.end
            i += 1
    w.copy(pos, len(text))
    return w.finish()
