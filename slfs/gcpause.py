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
def paused_gc(*, freeze: bool = False, young_first: bool = False) -> Iterator[None]:
    """The cycle collector off for the block (as it was after it: nesting and a disabled collector
    are left alone).

    `freeze`: at the end of the block, what is alive goes to the collector's permanent generation
    (gc.freeze()), which its passes never walk. After a 100,000-item load the first collection
    would otherwise walk every object the load made (a tenth of a second, the mount not answering),
    and each full one the whole heap again. Frozen objects are still freed by reference counting;
    only a cycle among them is never collected, so what holds them must not leave cycles behind
    (the tree breaks its nodes' links when it lets a node go: model.nodes.release).

    `young_first` (with `freeze`, for a block that made few objects): the young generations are
    collected before the freeze, so the garbage cycles made since the last collection are freed
    rather than frozen with what is alive. Walking what a large load made would cost a collection
    of it all: there it is left out."""
    collecting = gc.isenabled()
    if collecting:
        gc.disable()
    try:
        yield
    finally:
        if freeze:
            if young_first:
                gc.collect(1)
            gc.freeze()
        if collecting:
            gc.enable()
