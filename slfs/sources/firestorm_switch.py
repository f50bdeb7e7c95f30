"""Firestorm's `switch` step (firestorm.py's docstring says what it does and where each rule comes
from): `switch (x) { case v: ... }` rewritten into a jump table and labels."""

from __future__ import annotations

import attrs

from slfs.sources import LimitExceeded, Line, Origin

from .firestorm_tokens import INDENT, Text, Tok, bounded, closing, spend, tokens

MAX_SWITCH_DEPTH = 64


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

    def __init__(self, src: Text, toks: list[Tok]) -> None:
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
                spend(k - i)
                return k
            elif t.text in ";}":
                break
        else:
            k = end
        spend(k - i)
        return None

    def switch(self, i: int, end: int) -> int:
        toks = self.toks
        rparen = closing(toks, i + 1, end)
        if rparen is None:
            raise self.src.error(toks[i + 1].start, "unbalanced parentheses after switch")
        lbrace = rparen + 1
        if lbrace >= end or toks[lbrace].text != "{":
            raise self.src.error(toks[i].start, "switch (...) without a body in braces")
        rbrace = closing(toks, lbrace, end)
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

    def __init__(self, src: Text) -> None:
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
    return bounded("switch", lines, _switches)


def _switches(lines: list[Line]) -> list[Line]:
    src = Text(lines)
    toks = tokens(src.text)
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
        indent = src.indent(toks[sw.token].start) + INDENT
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
