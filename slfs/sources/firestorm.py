"""Firestorm's own steps: multi-line strings before the C preprocessor (`multiline_strings`), lazy
lists and `switch` after it.

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

from slfs.sources import Line

from .firestorm_switch import switches
from .firestorm_tokens import Text, Tok, bounded, closing, spend, tokens

__all__ = ["HELPER", "lazy_lists", "multiline_strings", "switches"]

HELPER = (
    "list lazy_list_set(list target, integer index, list value)",
    "{",
    "    while (llGetListLength(target) < index)",
    "        target += 0;",
    "    return llListReplaceList(target, value, index, index);",
    "}",
    "",
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


# --- multi-line strings ------------------------------------------------------------------------


def multiline_strings(text: str) -> str:
    """Firestorm's first step: a newline inside a string literal becomes `\\n`, and the string's
    newlines are added after its closing quote."""
    out: list[str] = []
    # 0 code, 1 string, 2 string after a backslash, 3 code after "/", 4 block comment,
    # 5 block comment after "*", 6 line comment
    state = 0
    pending = 0
    for ch in text:
        if state == 1:
            if ch == "\n":
                out.append("\\n")
                pending += 1
                continue
            if ch == "\\":
                state = 2
            elif ch == '"':
                out.append('"' + "\n" * pending)
                pending = 0
                state = 0
                continue
        elif state == 2:
            state = 1
        elif state == 3:
            state = 4 if ch == "*" else 6 if ch == "/" else 0
        elif state == 4:
            if ch == "*":
                state = 5
        elif state == 5:
            if ch == "/":
                state = 0
            elif ch != "*":
                state = 4
        elif state == 6:
            if ch == "\n":
                state = 0
        elif ch == '"':
            state = 1
        elif ch == "/":
            state = 3
        out.append(ch)
    return "".join(out)


# --- lazy lists ----------------------------------------------------------------------------------


def lazy_lists(lines: list[Line]) -> list[Line]:
    """Firestorm's lazy lists: `a[i] = v;` and `(type)a[i]` rewritten, the helper in front once."""
    if not lines:
        return []
    return bounded("lazy-list", lines, _lazy_lists)


def _lazy_lists(lines: list[Line]) -> list[Line]:
    src = Text(lines)
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
    if first is not None and not _defines_helper(tokens(src.text)):
        origin = src.origin(first)
        out = [Line(row, origin) for row in HELPER] + out
    return out


def _assignment_at(toks: list[Tok], i: int) -> tuple[int, int] | None:
    """For `name[index] = value` + `;` or `)` starting at `toks[i]`: the indexes of `]` and of the
    terminator."""
    name = toks[i]
    n = len(toks)
    if name.kind != "ident" or name.text in _NOT_A_LIST or i + 1 >= n or toks[i + 1].text != "[":
        return None
    close = closing(toks, i + 1, n)
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
            spend(k - close)
            return (close, k) if k > close + 2 else None
    spend(n - close)
    return None


def _lazy_assignments(text: str) -> tuple[str, int | None]:
    """One pass of `name[index] = value` rewrites; also the offset of the first one rewritten."""
    toks = tokens(text)
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
    toks = tokens(text)
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
        close = closing(toks, j + 1, n)
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


def _defines_helper(toks: list[Tok]) -> bool:
    """Whether the script has a global function `lazy_list_set` of its own."""
    depth = 0
    for k, t in enumerate(toks):
        if t.kind == "op" and t.text in "{}":
            depth += 1 if t.text == "{" else -1
        elif depth == 0 and t.text == "lazy_list_set" and k + 1 < len(toks) and toks[k + 1].text == "(":
            return True
    return False
