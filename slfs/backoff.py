"""Capped, jittered exponential backoff: the one schedule for reconnects and retried calls."""

from __future__ import annotations

import random


class Backoff:
    """Delays that start at `first` and double up to `cap`, each drawn from [d/2, d] so that many
    clients (or many retried calls) do not retry in step. `reset()` after a success."""

    def __init__(self, first: float, cap: float) -> None:
        self.first = first
        self.cap = cap
        self._next = first

    def delay(self) -> float:
        d = self._next
        self._next = min(self._next * 2, self.cap)
        return random.uniform(d / 2, d)

    def reset(self) -> None:
        self._next = self.first
