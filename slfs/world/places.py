"""Where a line of a script's text came from (model/compiles.py maps the viewer's diagnostics
through it; an item's cache keeps the places of the build it holds)."""

from __future__ import annotations

import attrs


@attrs.frozen
class Place:
    """A file and row a diagnostic belongs to: a mount path, or a local include's path."""

    path: str
    row: int
