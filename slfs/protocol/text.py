"""Network text made safe for a terminal and bounded, before anyone `cat`s it.

Compiler lines and runtime output come from the viewer, and runtime output from scripts other
residents wrote: a message may hold terminal escapes (a CSI that clears the screen, an OSC that sets
the title or writes the clipboard), NUL bytes (one viewer build answered with them) or megabytes of
text. What slfs shows in a file, a status line or an event is cleaned here: escape sequences and
control characters go (tabs and NULs become spaces; newlines stay only where the caller keeps them), and the
text is cut at a bound with an ellipsis.
"""

from __future__ import annotations

import re

# An escape sequence (CSI ... final byte, OSC/DCS/APC/PM/SOS ... ST or BEL, or ESC and one byte),
# then any other C0/C1 control character or DEL.
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"             # CSI
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, DCS, SOS, PM, APC up to BEL or ST
    r"|\x1b[ -~]?"                          # any other escape
    r"|\x9b[0-?]*[ -/]*[@-~]?"              # 8-bit CSI
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"       # the rest of C0 (but \t and \n), DEL, C1
)
ELLIPSIS = "…"
# What `printable` replaces: C0 but tab and newline, DEL, C1, and lone surrogates (which cannot even
# be written to a UTF-8 stream).
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def printable(text: str) -> str:
    """`text` with every control character but tab and newline (and every lone surrogate) shown as
    U+FFFD: for text already made of lines (a log record, CLI output), where an escape sequence left in
    would retitle the terminal, write its clipboard or rewrite the screen. What remains of a sequence
    after its ESC is inert text."""
    if text.isascii() and text.isprintable():  # the common case, without a regex
        return text
    return _UNPRINTABLE.sub(REPLACEMENT, text)


def clean(text: str, limit: int, *, keep_newlines: bool = False) -> str:
    """`text` without escapes or control characters, tabs as spaces, newlines kept only when asked
    (else a space each), at most `limit` characters (the last one an ellipsis when cut). Only a
    bounded prefix is looked at, so a 16 MB message costs no more than a short one."""
    head = text[: limit * 2 + 64]  # escapes removed can shorten it; never scan more than this
    out = _ESCAPES.sub("", head.replace("\0", " ")).replace("\t", " ")
    if not keep_newlines:
        out = out.replace("\n", " ")
    if len(out) > limit or len(head) < len(text):
        out = out[: max(0, limit - 1)] + ELLIPSIS
    return out


def one_line(text: str, limit: int) -> str:
    """`clean`, and runs of white space as one space: a message for one line of a file."""
    return " ".join(clean(text, limit).split())
