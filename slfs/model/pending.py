"""The count of saves, creates and deletes in flight: `.slfs/status` shows it (pending_saves), and
the daemon's stop waits until it is zero (wait_idle). Every write service counts through one
instance, so a stop waits for all of them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import trio


class PendingSaves:
    """How many writes to the viewer are in flight, and an event set while there are none."""

    def __init__(self) -> None:
        self.count = 0
        self._idle = trio.Event()
        self._idle.set()

    @contextmanager
    def counting(self) -> Iterator[None]:
        """One write in flight for the duration of the block."""
        self.count += 1
        self._idle = trio.Event() if self._idle.is_set() else self._idle
        try:
            yield
        finally:
            self.count -= 1
            if self.count == 0:
                self._idle.set()

    async def wait_idle(self, timeout: float) -> bool:
        """Whether the count reached zero within `timeout` seconds."""
        with trio.move_on_after(timeout):
            await self._idle.wait()
            return True
        return False
