"""Sources, not build products: the preprocessor, includes and the in-world envelope.

Pure logic, no I/O of its own: includes are read through a `Resolver` the model provides (its
tree and the local file system). The pieces:

- `envelope`: Firestorm's and Alchemy's envelope (source kept inside the in-world text), both ways;
- `detect`: whether a source needs the preprocessor;
- `lsl`: the LSL expansion (a C99 step by pcpp, then Firestorm's own steps);
- `firestorm`: Firestorm's lazy lists and `switch` rewriting (text after the C step);
- `luau`: `require("...")` inlining for Luau.

Every expansion carries, for each line it produced, the `Origin` (file and row) it came from, so
the viewer's diagnostics can be mapped back to sources and includes.
"""

from __future__ import annotations

import posixpath
from typing import Protocol

import attrs

# The limits of one expansion, checked while it runs: the expansion runs in a worker thread,
# which nothing can stop from outside, so every input must stop by itself, soon.
INWORLD_LIMIT = 262_144  # bytes of a script asset, envelope included (the viewer's limit)
INCLUDE_LIMIT = 4 * INWORLD_LIMIT  # bytes of one include file read (comments make them larger)


@attrs.frozen
class Origin:
    """Where an expanded line came from: the file as the user knows it (a mount path for an item,
    an absolute local path for an include directory's file) and its 1-based row."""

    path: str
    row: int


@attrs.frozen
class Line:
    """One line of text (no newline) and where it came from."""

    text: str
    origin: Origin


@attrs.frozen
class Source:
    """A file an include resolved to: `path` as shown in diagnostics, `text` its (decoded) source,
    `key` a stable identity for include-once and cycle detection (defaults to `path`), `shown`
    its name in the in-world text (`__FILE__`, line markers): relative to the mount or to its
    include directory, never a local absolute path (defaults to the last component of `path`).
    `oversize` says the file is larger than INCLUDE_LIMIT (`text` is then only its start)."""

    path: str
    text: str
    key: str = ""
    shown: str = ""
    oversize: bool = False

    @property
    def identity(self) -> str:
        return self.key or self.path

    @property
    def inworld_name(self) -> str:
        return self.shown or posixpath.basename(self.path)


class Resolver(Protocol):
    """How includes are found. Called synchronously (the expansion runs in a worker thread).

    `name` is as written (`util.lsl`, `lib/util.lsl`); `including` is the `Source.path` of the file
    that includes it; `angle` is True for `#include <x>` (include directories only). Returns None
    when nothing matches; `searched` lists the places tried, for the error message."""

    def find(self, name: str, including: str, angle: bool) -> Source | None: ...

    def searched(self, name: str, including: str, angle: bool) -> list[str]: ...


@attrs.frozen
class Expansion:
    """What goes in-world after the envelope, with one origin per line of `text` (split on "\\n"),
    and the include files used (their `Source.path`, in first-use order)."""

    text: str
    origins: tuple[Origin, ...]
    includes: tuple[str, ...] = ()

    def origin_of(self, row: int) -> Origin | None:
        """The origin of the expansion's 1-based `row`, None outside it."""
        return self.origins[row - 1] if 1 <= row <= len(self.origins) else None


class PreprocessError(Exception):
    """A source that cannot be expanded: a missing include, a cycle, `#error`, a malformed
    directive. `path`/`row`/`col` say where (1-based), `message` why (for F.diag)."""

    def __init__(self, path: str, row: int, col: int, message: str) -> None:
        super().__init__(f"{path}:{row}:{col}: {message}")
        self.path = path
        self.row = row
        self.col = col
        self.message = message


class LimitExceeded(PreprocessError):
    """An expansion stopped at one of its limits (the in-world size, the work budget, a nesting
    depth): the save fails with EFBIG. `limit` names the limit for the message."""

    def __init__(self, path: str, row: int, col: int, message: str, limit: str) -> None:
        super().__init__(path, row, col, message)
        self.limit = limit


@attrs.frozen
class AgentMacros:
    """What Firestorm's agent macros expand to (from the session's agent)."""

    agent_id: str = "00000000-0000-0000-0000-000000000000"
    agent_name: str = ""


def lines_of(text: str, path: str) -> list[Line]:
    """`text` as lines (split on "\\n", a "\\r" kept) with their origins in `path`."""
    return [Line(t, Origin(path, i)) for i, t in enumerate(text.split("\n"), start=1)]


def join(lines: list[Line]) -> Expansion:
    return Expansion("\n".join(line.text for line in lines), tuple(line.origin for line in lines))
