"""Which sources go through the preprocessor.

LSL: a line that is a preprocessor directive (the issue's list, as Firestorm's Boost.Wave step
knows them). Luau: a `require("...")` that resolves (decided in `luau`). A source holding the line
`//fspreprocessor off` (Firestorm's switch, ../shared/research/sources-and-preprocessor.md) is
saved verbatim, whatever it contains.
"""

from __future__ import annotations

import re

DIRECTIVES = ("include", "define", "undef", "if", "ifdef", "ifndef", "elif", "else", "endif", "error", "line",
              "pragma")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?:" + "|".join(DIRECTIVES) + r")(?![A-Za-z0-9_])", re.M)
_OFF = re.compile(r"^[ \t]*//[ \t]*fspreprocessor[ \t]+off[ \t]*\r?$", re.M)


def preprocessor_off(source: str) -> bool:
    return _OFF.search(source) is not None


def has_directive(source: str) -> bool:
    """Whether any line of `source` is a preprocessor directive."""
    return _DIRECTIVE.search(source) is not None
