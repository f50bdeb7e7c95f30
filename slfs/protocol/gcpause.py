"""Pausing the cycle collector around work that allocates many containers and frees none.

Parsing a 20 MB object.list answer or building a 100,000-item tree allocates millions of tracked
objects; each allocation threshold starts a collection, and the full ones walk every object the
daemon holds (the old tree included), which costs as much as the work itself. That work makes no
cyclic garbage worth collecting early, so the collector waits until it is done.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cycle collector off for the block (as it was after it: nesting and a disabled collector
    are left alone)."""
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
