"""Request id allocation for calls to the viewer.

The viewer passes client ids through a signed 32-bit integer, so ids stay in 1 .. 2**31-1 and wrap
around; an id still in flight is never handed out twice.
"""

from __future__ import annotations

from collections.abc import Container

MAX_ID = 2**31 - 1


class IdAllocator:
    def __init__(self, start: int = 1) -> None:
        if not 1 <= start <= MAX_ID:
            raise ValueError("start must be in 1 .. 2**31-1")
        self._next = start

    def allocate(self, in_use: Container[int] = ()) -> int:
        """The next free id; `in_use` holds the ids of calls still pending."""
        for _ in range(MAX_ID):
            rid = self._next
            self._next = 1 if rid >= MAX_ID else rid + 1
            if rid not in in_use:
                return rid
        raise RuntimeError("no free request id")  # 2**31 calls in flight: cannot happen
