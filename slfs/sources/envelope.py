"""The envelope: the author's source kept inside the in-world text, before its expansion.

Firestorm writes (and Alchemy reads and writes) LSL scripts as

    //start_unprocessed_text
    /*<source, escaped>*/
    //end_unprocessed_text
    //nfo_preprocessor_version 0
    //program_version <program>
    //last_compiled <MM/DD/YYYY HH:MM:SS>
    //mono                        (or //lsl2, //luau)
    <empty line>
    <empty line>
    <expansion>

Escaping inserts `|` after every `/` or `*` followed by `/`, `*` or `|`, so the source holds no
`*/` and never changes its line count. Alchemy writes Luau scripts with `--` lines and the source
in a long bracket `--[==[...]==]` of a level the source does not contain (nothing escaped).
Source: ../shared/research/sources-and-preprocessor.md (from Firestorm's fslslpreproc.cpp and
Alchemy's alscriptenvelope.cpp).

Reading: Firestorm unwraps only text that starts exactly with `//start_unprocessed_text\\n/*` and
holds `*/\\n//end_unprocessed_text`; Alchemy's reader is lenient (every trailer line optional,
`\\r\\n` accepted, no empty lines). `unwrap` accepts both and anything in between.
"""

from __future__ import annotations

import datetime
import re

import attrs

LSL_START = "//start_unprocessed_text\n/*"
LSL_END = "*/\n//end_unprocessed_text"
LUAU_START = "--start_unprocessed_text\n--["
LUAU_END_LINE = "--end_unprocessed_text"
NFO = "nfo_preprocessor_version 0"
TARGETS = ("mono", "lsl2", "luau")

_ESCAPE = re.compile(r"([/*])(?=[/*|])")
_UNESCAPE = re.compile(r"([/*])\|")
# The trailer lines a reader skips after the end marker, either comment style.
_TRAILER = re.compile(r"(//|--)(nfo_preprocessor_version .*|program_version( .*)?|last_compiled( .*)?"
                      r"|mono|lsl2|luau)\r?")


@attrs.frozen
class Unwrapped:
    """An envelope read back: the author's source, the expansion after it, the 1-based row of the
    in-world text where the expansion starts, and the target named (None when absent)."""

    source: str
    expansion: str
    expansion_row: int
    target: str | None


def escape(source: str) -> str:
    return _ESCAPE.sub(r"\1|", source)


def unescape(escaped: str) -> str:
    return _UNESCAPE.sub(r"\1", escaped)


def stamp(when: datetime.datetime) -> str:
    """`//last_compiled`'s format, in UTC."""
    return when.astimezone(datetime.UTC).strftime("%m/%d/%Y %H:%M:%S")


def wrap_lsl(source: str, expansion: str, *, program: str, when: datetime.datetime, target: str) -> str:
    """Firestorm's envelope, byte for byte, with two empty lines before the expansion."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}")
    return (f"{LSL_START}{escape(source)}{LSL_END}\n//{NFO}\n//program_version {program}\n"
            f"//last_compiled {stamp(when)}\n//{target}\n\n\n{expansion}")


def long_bracket_level(source: str) -> int:
    """The smallest level whose closing bracket occurs neither in the source nor across its end."""
    level = 0
    while f"]{'=' * level}]" in source + "]":
        level += 1
    return level


def wrap_luau(source: str, expansion: str, *, program: str, when: datetime.datetime) -> str:
    """Alchemy's Luau envelope (`--luau`), the source in a long bracket, nothing escaped."""
    eq = "=" * long_bracket_level(source)
    return (f"--start_unprocessed_text\n--[{eq}[{source}]{eq}]\n{LUAU_END_LINE}\n--{NFO}\n"
            f"--program_version {program}\n--last_compiled {stamp(when)}\n--luau\n{expansion}")


def unwrap(text: str) -> Unwrapped | None:
    """The envelope in `text`, or None when `text` is not one (then it is shown as it is)."""
    if text.startswith(LSL_START) or text.startswith(LSL_START.replace("\n", "\r\n")):
        return _unwrap_lsl(text)
    if text.startswith(LUAU_START) or text.startswith(LUAU_START.replace("\n", "\r\n")):
        return _unwrap_luau(text)
    return None


def _unwrap_lsl(text: str) -> Unwrapped | None:
    begin = text.index("/*") + 2
    for end_marker in (LSL_END, LSL_END.replace("\n", "\r\n")):
        end = text.find(end_marker, begin)
        if end >= 0:
            break
    else:
        return None
    source = unescape(text[begin:end])
    return _after_trailer(source, text, end + len(end_marker))


def _unwrap_luau(text: str) -> Unwrapped | None:
    m = re.compile(r"--\[(=*)\[").match(text, text.index("--["))
    if m is None:
        return None
    close = f"]{m.group(1)}]"
    end = text.find(close, m.end())
    if end < 0:
        return None
    rest = end + len(close)
    after = text[rest:]
    for nl in ("\n", "\r\n"):
        if after.startswith(nl + LUAU_END_LINE):
            return _after_trailer(text[m.end():end], text, rest + len(nl) + len(LUAU_END_LINE))
    return None


def _after_trailer(source: str, text: str, pos: int) -> Unwrapped:
    """Skip the trailer lines after the end marker (each optional), then Firestorm's two empty
    lines when they are there."""
    row = text.count("\n", 0, pos) + 1  # the row of the end marker
    target: str | None = None
    rest = text[pos:]
    lines = rest.split("\n")
    # lines[0] is what follows the end marker on its own row ("" or "\r").
    i = 1
    while i < len(lines) and _TRAILER.fullmatch(lines[i]):
        name = lines[i][2:].rstrip("\r")
        if name in TARGETS:
            target = name
        i += 1
    if target is not None and i + 2 <= len(lines) and lines[i].rstrip("\r") == "" and lines[i + 1].rstrip("\r") == "" \
            and i + 2 < len(lines):
        i += 2
    expansion = "\n".join(lines[i:]) if i < len(lines) else ""
    return Unwrapped(source=source, expansion=expansion, expansion_row=row + i, target=target)

