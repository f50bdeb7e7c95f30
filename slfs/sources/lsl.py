"""The LSL expansion: Firestorm's preprocessor, with pcpp as its C99 step.

What Firestorm does (`indra/newview/fslslpreproc.cpp`, `FSLSLPreprocessor::start_process`), in
order, and what this module does the same way:

1. Newlines inside string literals become `\\n`, and as many newlines as the string had are added
   right after its closing quote, so every later line keeps its row (a small state machine over
   code, strings, `//` and `/* */` comments; a backslash in a string takes the next character
   verbatim, so a backslash-newline stays a line splice).
2. The C step (Boost.Wave there, pcpp here) with these macros predefined: `__AGENTKEY__` and
   `__AGENTID__` (the agent's UUID, quoted), `__AGENTIDRAW__` (bare), `__AGENTNAME__` (quoted),
   `__SHORTFILE__` (the current file's name, quoted, switched on entering and leaving an include),
   `__UNIXTIME__` (an integer), and the casts `list(...)` = `((list)(__VA_ARGS__))`, likewise
   `float`, `integer`, `key`, `rotation`, `quaternion`, `string`, `vector`; with the standard
   `__FILE__`, `__LINE__`, `__DATE__` (`"Mmm dd yyyy"`, the day space-padded) and `__TIME__`
   (`"hh:mm:ss"`). Comments are not kept. A Wave warning is an error in Firestorm (its
   `throw_exception` hook rethrows everything but "last line of file ends without a newline"), so
   `#warning` stops the expansion like `#error`.
3. Lazy lists, then `switch`, each when its option is on or when the script has defined
   `USE_LAZY_LISTS` / `USE_SWITCHES` at any point of the C step (Firestorm asks Wave after every
   token; a define only turns a step on, never off).

Differences, by choice:

- Firestorm turns Wave's `#line` output into `//#line N "file"` comment lines. Nothing reads them
  back (Firestorm maps no diagnostics through them), they cost bytes of the 64 KiB in-world text,
  and `Expansion.origins` says where every line came from, so the expansion has none.
- Each file's rows keep their place: the rows pcpp drops (directives, the second row of a comment
  or macro call that spans rows) come back as empty lines, so without includes the expansion's row
  N is the source's row N, as in Firestorm. An include whose expansion is only empty lines (a file
  of `#define`s, a guarded file seen again) leaves no lines at all.
- Step 1 runs on included files too (Firestorm runs it on the edited text only; an include's
  multi-line string would otherwise be lexed as code).
- Trigraphs are left alone (Wave does not convert them by default; pcpp would turn `"??!"` into
  `"|"`).
- `__DATE__`, `__TIME__` and `__UNIXTIME__` come from `now` (UTC); Wave uses local time.
- `__SHORTFILE__` is the last component of the file's path (`Main.lsl`), where Firestorm has the
  inventory name (`Main`). `__ASSETID__` is not defined (the resolver knows no asset ids).
- Includes come from the resolver only. A file already on the include stack twice is a cycle;
  a `#pragma once` or include-guarded file is skipped when included again, as by pcpp.
- `__FILE__` names a file as the in-world text may show it (`Source.inworld_name`: relative to
  the mount or its include directory), never by a local absolute path: the in-world text is seen
  by others, a path would tell them the user's home and name.

Limits (LimitExceeded, the save's EFBIG): the expansion runs in a worker thread that nothing can
stop from outside, so it stops itself, while it runs, for any input: when what it has produced
passes the in-world size (`#define A B B` forty levels deep is 2^40 tokens), when it has done
WORK_LIMIT steps (a pathological input that produces little: an include tree of 2^30 readings,
macro calls nested a thousand deep), when macros or includes nest too deep, and when an `#if`
shifts by 64 bits or more (Python's integers would grow to the shift count).
"""

from __future__ import annotations

import copy
import datetime
import importlib
import os.path
import re
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

import pcpp

from slfs.sources import (
    INCLUDE_LIMIT,
    INWORLD_LIMIT,
    AgentMacros,
    Expansion,
    LimitExceeded,
    Line,
    Origin,
    PreprocessError,
    Resolver,
    Source,
)

from .firestorm import multiline_strings

MAX_INCLUDE_DEPTH = 100
MAX_MACRO_DEPTH = 100  # macros expanding macros (well below Python's recursion limit)
# Steps of the C step: tokens read, tokens scanned and produced by each macro expansion. A large
# real script (64 KiB in-world, macros everywhere) takes about 300,000; pcpp does 100,000 to
# 500,000 a second.
WORK_LIMIT = 3_000_000
# pcpp copies the rest of a line's tokens for each function-like macro call, and moves them for
# each expansion longer or shorter than its name: quadratic, in C, for so many C operations a step.
COPIES_PER_STEP = 256
MOVES_PER_STEP = 4096
INCLUDE_STEPS = 200  # what an include costs besides its tokens (the resolver, a new reading)
# Tokens held at once in the lists being expanded. Every token of an expansion is at least a byte
# of it but for white space (a line's end, a line of an include that gives only empty lines), so
# a script the in-world text can hold never comes near; a token takes some 400 bytes of memory.
TOKEN_LIMIT = 2 * INWORLD_LIMIT
SHIFT_BITS = 64  # pcpp's integers in `#if` are 64 bits wide

# What Python's str.splitlines (used by pcpp) breaks lines at besides "\n": hidden in private-use
# characters for the C step and put back after it, so rows are counted on "\n" only.
_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_HIDE = {ord(c): 0xF0000 + i for i, c in enumerate(_BREAKS)}
_SHOW = {v: chr(k) for k, v in _HIDE.items()}

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_CASTS = ("list", "float", "integer", "key", "rotation", "quaternion", "string", "vector")
_LINE_NUMBER = re.compile(r"[0-9]+")
_INCLUDE = "SLFS_INCLUDE"  # the type of the token an include yields first: where it starts


def _c_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _firestorm() -> Any:
    """The module with Firestorm's lazy-list and switch rewrites (a seam for the tests)."""
    try:
        return importlib.import_module("slfs.sources.firestorm")
    except ImportError as e:
        raise ImportError(
            "slfs.sources.firestorm (lazy_lists, switches) is missing; "
            "call expand_lsl with lazy_lists=False, switch=False"
        ) from e


class _Instance:
    """One reading of one file (a file included twice is read twice), or a `#line` view of one."""

    def __init__(self, path: str, identity: str, text: str, base: str | None = None) -> None:
        self.path = path  # what origins and errors name (a #line file name after #line)
        self.identity = identity
        self.text = text  # as pcpp lexes it (for columns)
        self.base = base  # the tag of the reading this #line view belongs to
        self.delta = 0  # logical row - physical row, for a #line view
        self.start = 0  # the row before its first (a #line view starts at its number)


def _bounded_binop(binop: Callable[[Any], None]) -> Callable[[Any], None]:
    """pcpp's binary operator production, with a shift count out of range an error: pcpp shifts
    Python integers, which grow to the count (`1 << 8000000000` is a gigabyte)."""

    def production(p: Any) -> None:
        if p[2] in ("<<", ">>"):
            count = p[3]
            if getattr(count, "exception", None) is None and not 0 <= int(count) < SHIFT_BITS:
                p[0] = pcpp.evaluator.Value(0, exception=OverflowError(
                    f"shift count {int(count)} out of range (0 to {SHIFT_BITS - 1})"))
                return
        binop(p)

    return production


def _bounded_evaluator(lexer: Any) -> Any:
    """pcpp's `#if` evaluator with `_bounded_binop` (its own copy of the parser: ply parsers keep
    state while they parse, so each preprocessor has its own)."""
    evaluator = pcpp.evaluator.Evaluator(lexer)
    parser = copy.copy(evaluator.parser)
    parser.productions = [copy.copy(p) for p in parser.productions]
    for production in parser.productions:
        if getattr(production, "callable", None) is pcpp.evaluator.p_expression_binop:
            production.callable = _bounded_binop(production.callable)
    evaluator.parser = parser
    return evaluator


class _ArgsFrame:
    """A function-like macro's replacement being built (pcpp's `macro_expand_args`): its size so
    far and, in the order pcpp expands them, the arguments still to expand with their uses."""

    def __init__(self, macro: Any, args: list[list[Any]]) -> None:
        expanded = [argnum for kind, argnum, _ in macro.patch if kind == "e"]
        self.order = list(dict.fromkeys(expanded))  # pcpp expands each argument once, at first use
        self.uses = {argnum: expanded.count(argnum) for argnum in self.order}
        self.size = len(macro.value) + sum(len(args[argnum]) for kind, argnum, _ in macro.patch if kind == "t")
        self.next = 0


def _produced(tokens: list[Any], ws: Any) -> int:
    """A lower bound of the bytes `tokens` put in the expansion: white space may be stripped
    (a line's end, an include that gives only empty lines), everything else stays."""
    return sum(len(str(t.value)) for t in tokens if t.type not in ws)


class _Preprocessor(pcpp.Preprocessor):  # type: ignore[misc]
    def __init__(self, resolver: Resolver, main_path: str) -> None:
        super().__init__()
        self.evaluator = _bounded_evaluator(self.lexer)
        self.work = 0
        self.frames: list[list[Any] | _ArgsFrame] = []  # the expansions running, outermost first
        self.rewrite_paths: list[Any] = []
        self.expand_filemacro = False  # __FILE__ is set per include below, from display paths
        self.auto_pragma_once_enabled = True
        self.line_directive = None
        self.resolver = resolver
        self.instances: dict[str, _Instance] = {}
        self.remap: dict[str, str] = {}  # reading's tag -> its current #line view
        self.stack: list[str] = []  # tags of the readings being expanded, outermost first
        self.includes: list[str] = []
        self.main_path = main_path
        self.directive: tuple[str, int, int] | None = None  # where the directive being run is
        self.undef("__PCPP__")

    # -- bookkeeping -------------------------------------------------------------------------

    def new_instance(self, path: str, identity: str, text: str) -> str:
        tag = f"{len(self.instances)}:{path}"
        self.instances[tag] = _Instance(path, identity, text)
        return tag

    def where(self, tok: Any) -> tuple[str, int, int]:
        if tok is None:
            return self.directive or (self.main_path, 1, 1)
        inst = self.instances.get(tok.source)
        if inst is None:
            return (self.main_path, int(tok.lineno or 1), 1)
        text = self.instances[inst.base].text if inst.base else inst.text
        lexpos = getattr(tok, "lexpos", None)
        col = 1
        if isinstance(lexpos, int) and 0 <= lexpos <= len(text):
            col = lexpos - (text.rfind("\n", 0, lexpos) + 1) + 1
        return (inst.path, int(tok.lineno), col)

    def fail(self, where: tuple[str, int, int], message: str) -> NoReturn:
        path, row, col = where
        raise PreprocessError(path, row, col, message.strip().translate(_SHOW))

    def stop(self, where: tuple[str, int, int], limit: str, message: str) -> NoReturn:
        path, row, col = where
        raise LimitExceeded(path, row, col, message, limit)

    def too_big(self, tok: Any) -> NoReturn:
        self.stop(self.where(tok), "in-world size", f"the expansion passes {INWORLD_LIMIT} bytes, the most "
                  "a script's in-world text holds (the in-world limit)")

    def spend(self, steps: int, tok: Any) -> None:
        self.work += steps
        if self.work > WORK_LIMIT:
            self.stop(self.where(tok), "work", f"the preprocessor stopped after {WORK_LIMIT} steps (its work "
                      "limit): macros or includes that expand without end?")


    def reading_tag(self, tag: str) -> str:
        return self.instances[tag].base or tag

    def reading(self, tag: str) -> _Instance:
        return self.instances[self.reading_tag(tag)]

    # -- pcpp hooks --------------------------------------------------------------------------

    def group_lines(self, input: str, abssource: str) -> Iterator[list[Any]]:
        inst = self.instances.get(abssource)
        # The text as it was handed in, not as pcpp's trigraph replacement left it.
        text = inst.text if inst is not None else input
        for line in super().group_lines(text, abssource):
            if line:
                self.spend(len(line), line[0])
            view = self.remap.get(abssource)
            if view is not None:
                delta = self.instances[view].delta
                for tok in line:
                    tok.source = view
                    tok.lineno += delta
            yield line

    def on_error(self, file: str, line: int, msg: str) -> None:
        inst = self.instances.get(file)
        path = inst.path if inst is not None else self.main_path
        col = 1
        if self.directive is not None and self.directive[:2] == (path, line):
            col = self.directive[2]
        self.fail((path, max(int(line or 1), 1), col), msg)

    def on_file_open(self, is_system_include: bool, includepath: str) -> Any:
        raise OSError(f"includes come from the resolver only: {includepath}")

    def on_comment(self, tok: Any) -> bool:
        tok.type = self.t_SPACE
        tok.value = " "
        return True

    def on_directive_handle(self, directive: Any, toks: list[Any], ifpassthru: bool, precedingtoks: list[Any]) -> Any:
        hash_tok = precedingtoks[0] if precedingtoks else directive
        self.directive = self.where(hash_tok)
        name = directive.value
        if name in ("ifdef", "ifndef") and (len(toks) != 1 or toks[0].type != self.t_ID):
            self.fail(self.directive, f"#{name} needs one macro name")
        if name in ("if", "elif") and not toks:
            self.fail(self.directive, f"#{name} needs an expression")
        if name in ("define", "undef") and not toks:
            self.fail(self.directive, f"#{name} needs a macro name")
        if name == "pragma" and not toks:
            raise pcpp.OutputDirective(pcpp.Action.IgnoreAndRemove)
        self.lastdirective = directive
        return True

    def on_directive_unknown(self, directive: Any, toks: list[Any], ifpassthru: bool, precedingtoks: list[Any]) -> Any:
        hash_tok = precedingtoks[0] if precedingtoks else directive
        at = self.where(hash_tok)
        name = directive.value
        if name in ("error", "warning"):
            self.fail(at, f"#{name} " + "".join(str(t.value) for t in toks).strip())
        if name == "line":
            self.line(directive, toks, at)
            return True
        if name == "pragma":
            return None  # passed through, as Wave does with pragmas it does not know
        self.fail(at, f"unknown directive #{name}")
        return True

    def line(self, directive: Any, toks: list[Any], at: tuple[str, int, int]) -> None:
        toks = self.tokenstrip(self.expand_macros([copy.copy(t) for t in toks]))
        toks = [t for t in toks if t.type not in self.t_WS]
        if not toks or not _LINE_NUMBER.fullmatch(str(toks[0].value)) or len(toks) > 2:
            self.fail(at, '#line needs a line number and an optional "file name"')
        number = int(str(toks[0].value))
        current = self.instances[directive.source]
        base_tag = current.base or directive.source
        path = current.path
        if len(toks) == 2:
            if toks[1].type != self.t_STRING:
                self.fail(at, '#line needs a line number and an optional "file name"')
            path = re.sub(r"\\(.)", r"\1", str(toks[1].value)[1:-1]).translate(_SHOW)
            self.define("__FILE__ " + str(toks[1].value))
        physical = int(directive.lineno) - current.delta
        view = self.new_instance(path, current.identity, "")
        self.instances[view].base = base_tag
        self.instances[view].delta = number - (physical + 1)
        self.instances[view].start = number - 1
        self.remap[base_tag] = view

    def expand_macros(self, tokens: list[Any], expanding_from: list[str] | None = None) -> list[Any]:
        # pcpp builds a macro's whole expansion in memory before it yields a token of it: the
        # limits are checked here, on every macro expanded, before its tokens join the list
        # they replace a name in.
        if not tokens:
            return tokens
        first = tokens[0]
        caller = self.frames[-1] if self.frames else None
        if len(self.frames) >= 2 * MAX_MACRO_DEPTH:  # a frame per macro, one per argument list
            self.stop(self.where(first), "macro depth", f"macros nested deeper than {MAX_MACRO_DEPTH} "
                      "(the macro nesting limit)")
        self.spend(len(tokens), first)  # scanning the tokens is a step each
        self.check_live(len(tokens), first)
        self.frames.append(tokens)
        try:
            out: list[Any] = super().expand_macros(tokens, expanding_from or [])
        finally:
            self.frames.pop()
        self.spend(len(out), first)
        if _produced(out, self.t_WS) > INWORLD_LIMIT:
            self.too_big(first)
        if isinstance(caller, _ArgsFrame):  # an argument, about to replace each of its uses
            argnum = caller.order[caller.next] if caller.next < len(caller.order) else None
            caller.next += 1
            caller.size += len(out) * caller.uses.get(argnum, 1) if argnum is not None else len(out)
            self.check_live(caller.size, first)
        else:  # a macro's expansion, about to replace its name in the caller's list
            self.check_live(len(out), first)
            if isinstance(caller, list) and len(out) != 1:  # which moves the rest of that list
                self.spend(len(caller) // MOVES_PER_STEP, first)
        return out

    def check_live(self, more: int, tok: Any) -> None:
        """Stop before the lists being expanded hold more than TOKEN_LIMIT tokens with `more`."""
        live = more + sum(len(f) if isinstance(f, list) else f.size for f in self.frames)
        if live > TOKEN_LIMIT:
            self.too_big(tok)

    def macro_expand_args(self, macro: Any, args: list[list[Any]]) -> list[Any]:
        caller = self.frames[-1] if self.frames else None
        if isinstance(caller, list):  # pcpp has copied the rest of the caller's list to find the arguments
            self.spend(len(caller) // COPIES_PER_STEP, args[0][0] if args and args[0] else None)
        frame = _ArgsFrame(macro, args)
        self.check_live(frame.size, macro.value[0] if macro.value else args[0][0] if args and args[0] else None)
        self.frames.append(frame)
        try:
            return list(super().macro_expand_args(macro, args))
        finally:
            self.frames.pop()

    def collect_args(self, tokenlist: list[Any], ignore_errors: bool = False) -> Any:
        result = super().collect_args(tokenlist, ignore_errors)
        if ignore_errors and result[0] == 0:
            opening = next((t for t in tokenlist if t.value == "("), tokenlist[0])
            self.fail(self.where(opening), "unterminated argument list of a macro call")
        return result

    def define(self, tokens: Any) -> None:
        if not isinstance(tokens, str):
            if not tokens:
                self.fail(self.directive or (self.main_path, 1, 1), "#define needs a macro name")
            if tokens[0].type != self.t_ID:
                self.fail(self.where(tokens[0]), "a macro name must be an identifier")
        super().define(tokens)

    def undef(self, tokens: Any) -> None:
        if not isinstance(tokens, str) and (not tokens or tokens[0].type != self.t_ID):
            self.fail(self.directive or (self.main_path, 1, 1), "#undef needs a macro name")
        super().undef(tokens)

    def include(self, tokens: list[Any], original_line: list[Any]) -> Iterator[Any]:
        hash_tok = next((t for t in original_line if t.value == "#"), original_line[0])
        at = self.where(hash_tok)
        if tokens and tokens[0].value != "<" and tokens[0].type != self.t_STRING:
            tokens = self.tokenstrip(self.expand_macros(tokens))
        if tokens and tokens[0].type == self.t_STRING and str(tokens[0].value).startswith('"'):
            angle, name = False, str(tokens[0].value)[1:-1]
        elif tokens and tokens[0].value == "<" and any(t.value == ">" for t in tokens[1:]):
            end = next(i for i, t in enumerate(tokens) if i > 0 and t.value == ">")
            angle, name = True, "".join(str(t.value) for t in tokens[1:end])
        else:
            self.fail(at, '#include needs "file" or <file>')
        name = name.translate(_SHOW)
        including = self.reading(self.stack[-1]).path
        written = f"<{name}>" if angle else f'"{name}"'
        self.spend(INCLUDE_STEPS, hash_tok)
        source = self.resolver.find(name, including, angle)
        if source is None:
            searched = self.resolver.searched(name, including, angle)
            self.fail(at, f"include not found: {written} (searched: {', '.join(searched)})")
        assert source is not None
        if source.path not in self.includes:
            self.includes.append(source.path)
        identity = source.identity
        for tag, guard in self.include_once.items():
            if self.instances[tag].identity == identity and (guard is None or guard in self.macros):
                return
        readings = [self.reading(t).identity for t in self.stack]
        if readings.count(identity) >= 2:
            start = len(readings) - 1 - readings[::-1].index(identity)
            cycle = [self.reading(t).path for t in self.stack[start:]] + [source.path]
            self.fail(at, "include cycle: " + " -> ".join(cycle))
        if len(self.stack) > MAX_INCLUDE_DEPTH:
            self.stop(at, "include depth", f"includes nested deeper than {MAX_INCLUDE_DEPTH} (the include "
                      "depth limit)")
        if source.oversize:
            self.stop(at, "include size", f"{written} is larger than {INCLUDE_LIMIT} bytes (the include "
                      "size limit)")
        tag = self.new_instance(source.path, identity, _prepare(source.text))
        mark = copy.copy(hash_tok)
        mark.type, mark.value, mark.child = _INCLUDE, "", tag
        yield mark
        shortfile = self.macros.get("__SHORTFILE__")
        self.define("__FILE__ " + _c_string(source.inworld_name))
        self.define("__SHORTFILE__ " + _c_string(os.path.basename(source.path)))
        self.stack.append(tag)
        yield from self.parsegen(self.instances[tag].text, name, tag)
        self.stack.pop()
        if shortfile is not None:
            self.macros["__SHORTFILE__"] = shortfile
        self.source = self.stack[-1]


def _prepare(text: str) -> str:
    return multiline_strings(text.replace("\r\n", "\n")).translate(_HIDE)


def _predefine(pp: _Preprocessor, main: Source, macros: AgentMacros, now: datetime.datetime) -> None:
    agent_id = macros.agent_id
    path = main.path
    pp.define(f'__DATE__ "{_MONTHS[now.month - 1]} {now.day:2d} {now.year:4d}"')
    pp.define(f'__TIME__ "{now.hour:02d}:{now.minute:02d}:{now.second:02d}"')
    pp.define("__FILE__ " + _c_string(main.inworld_name))
    pp.define("__AGENTKEY__ " + _c_string(agent_id))
    pp.define("__AGENTID__ " + _c_string(agent_id))
    pp.define("__AGENTIDRAW__ " + agent_id)
    pp.define("__AGENTNAME__ " + _c_string(macros.agent_name))
    pp.define("__SHORTFILE__ " + _c_string(os.path.basename(path)))
    pp.define(f"__UNIXTIME__ {int(now.timestamp())}")
    for cast in _CASTS:
        pp.define(f"{cast}(...) (({cast})(__VA_ARGS__))")


def _lines(pp: _Preprocessor, tokens: Iterator[Any], on_token: Callable[[], None]) -> list[Line]:
    """The C step's tokens as lines, each with the origin of its first token. The rows of a
    file's reading that gave no line (directives, rows joined by a comment or a macro call) come
    back as empty lines; an include's row is taken by the included text, unless that text is only
    empty lines: then it is dropped and the row comes back empty."""
    raw: list[tuple[str, str, int, str | None]] = []  # text, tag, row, the include it stands for
    produced = 0  # bytes of the expansion so far, white space not counted (it may be stripped)
    last: dict[str, int] = {}
    current: list[Any] = []

    def pad(tag: str, row: int) -> None:
        previous = last.get(tag, pp.instances[tag].start)
        raw.extend(("", tag, r, None) for r in range(previous + 1, row))
        last[tag] = max(previous, row)

    def flush(newline: Any) -> None:
        first = next((t for t in current if t.type not in pp.t_WS), current[0] if current else newline)
        tag, row = first.source, int(first.lineno)
        pad(tag, row)
        raw.append(("".join(str(t.value) for t in current).rstrip(), tag, row, None))
        current.clear()

    for tok in tokens:
        on_token()
        pp.spend(len(pp.stack), tok)  # a token passes through a generator per include level
        if tok.type not in pp.t_WS:
            produced += len(str(tok.value))
            if produced > INWORLD_LIMIT:
                pp.too_big(tok)
        if tok.type == _INCLUDE:
            if current:
                flush(current[0])
            pad(tok.source, int(tok.lineno))
            raw.append(("", tok.source, int(tok.lineno), tok.child))
        elif tok.type in pp.t_WS and tok.value == "\n":
            flush(tok)
        else:
            current.append(tok)
    if current:
        flush(current[0])
    kept = {pp.reading_tag(tag) for text, tag, _, _ in raw if text.strip()} | {pp.stack[0]}
    return [
        Line(text.translate(_SHOW), Origin(pp.instances[tag].path, row))
        for text, tag, row, child in raw
        if pp.reading_tag(tag) in kept and child not in kept
    ]


def expand_lsl(
    source: str,
    path: str,
    resolver: Resolver,
    *,
    macros: AgentMacros,
    lazy_lists: bool = True,
    switch: bool = True,
    now: datetime.datetime | None = None,
    name: str = "",
) -> Expansion:
    """What Firestorm sends in-world for `source` (the text after its envelope), with the origin
    of every line; `name` is the main file's name in the in-world text (`__FILE__`; by default the
    last component of `path`). Raises PreprocessError for a missing include, a cycle,
    `#error`/`#warning` and malformed directives, LimitExceeded for an expansion past a limit."""
    if now is None:
        now = datetime.datetime.now(datetime.UTC)
    elif now.tzinfo is not None:
        now = now.astimezone(datetime.UTC)
    else:
        now = now.replace(tzinfo=datetime.UTC)
    pp = _Preprocessor(resolver, path)
    main = pp.new_instance(path, path, _prepare(source))
    pp.stack.append(main)
    _predefine(pp, Source(path, source, shown=name), macros, now)
    use = {"USE_LAZY_LISTS": lazy_lists, "USE_SWITCHES": switch}

    def on_token() -> None:
        for name, on in use.items():
            if not on and name in pp.macros:
                use[name] = True

    try:
        lines = _lines(pp, pp.parsegen(pp.instances[main].text, path, main), on_token)
    except IndexError as e:  # pcpp indexes a directive's arguments without checking them
        where = pp.directive or (path, 1, 1)
        raise PreprocessError(*where, "malformed directive") from e
    except RecursionError as e:  # the limits above come first; this is the last guard
        where = pp.directive or (path, 1, 1)
        raise LimitExceeded(*where, "nested too deeply for the preprocessor (its nesting limit)", "nesting") from e
    on_token()
    if use["USE_LAZY_LISTS"]:
        lines = _firestorm().lazy_lists(lines)
    if use["USE_SWITCHES"]:
        lines = _firestorm().switches(lines)
    text = "\n".join(line.text for line in lines)
    return Expansion(text, tuple(line.origin for line in lines), tuple(pp.includes))


__all__ = ["MAX_INCLUDE_DEPTH", "MAX_MACRO_DEPTH", "WORK_LIMIT", "expand_lsl"]
