"""Whether an item's next inventory update is the echo of our own save.

The viewer answers a save with an inventory update that says nothing of whose change it was; the
first one after our save is presumably ours and must not make the file look stale. The tree asks
and consumes this state as updates come, the writer sets it around each save, the workspace clears
it when a fetch confirms the content: every change goes through the methods here.
"""

from __future__ import annotations

import time

import attrs

# How long after our own save an inventory update is taken as its echo.
OWN_UPDATE_WINDOW = 2.0


@attrs.define(eq=False)
class Echo:
    # Until this time.monotonic(), the next inventory update is the echo of our own save.
    expected_until: float = 0.0
    # Older viewers (no revision): the content is our save's, and an update that passed for its
    # echo has come; a fetch confirms it (someone's edit may have come first). Newer viewers say
    # the same with content_revision behind the item's revision.
    unconfirmed: bool = False

    def expect(self) -> None:
        """A save goes out: the next update within the window is its echo."""
        self.expected_until = time.monotonic() + OWN_UPDATE_WINDOW

    def cancel(self) -> None:
        """No echo is awaited (the save failed, its echo came, or the connection ended)."""
        self.expected_until = 0.0

    def expected(self, now: float | None = None) -> bool:
        return self.expected_until > (time.monotonic() if now is None else now)

    @property
    def awaited(self) -> bool:
        """An echo was asked for and has not come (whatever the clock says)."""
        return bool(self.expected_until)

    def came_unconfirmed(self) -> None:
        """An update passed for the echo (older viewers): the content is presumably our save's
        until a fetch confirms it."""
        self.expected_until = 0.0
        self.unconfirmed = True

    def set_unconfirmed(self, unconfirmed: bool) -> None:
        self.unconfirmed = unconfirmed
