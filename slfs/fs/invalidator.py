"""The kernel cache invalidations the model reports, sent to the kernel.

Only ever from this background task: a synchronous invalidate_entry from inside a request handler
deadlocks (the kernel waits for the handler that waits for the kernel).
"""

from __future__ import annotations

import errno
import logging
import os

import pyfuse3
import trio

from ..model.invalidations import PendingInvalidations
from ..stats import Stats
from ..world import names
from ..world.tree import EntryChanged, InodeChanged

log = logging.getLogger(__name__)


class KernelInvalidator:
    def __init__(self, pending: PendingInvalidations, stats: Stats) -> None:
        self.pending = pending
        self.stats = stats

    async def run(self) -> None:
        """Apply the tree's invalidations, merged while they wait: names at once
        (invalidate_entry_async queues them), inodes in one thread trip per batch."""
        while True:
            inodes: list[tuple[int, bool]] = []
            for inv in await self.pending.take():
                if isinstance(inv, EntryChanged):
                    self.stats.invalidated("entry")
                    try:
                        pyfuse3.invalidate_entry_async(inv.parent, os.fsencode(names.encodable(inv.name)),
                                                       ignore_enoent=True)
                    except Exception:
                        log.exception("cache invalidation failed for %r", inv)
                elif isinstance(inv, InodeChanged):
                    self.stats.invalidated("inode")
                    inodes.append((inv.inode, not inv.data))
            if inodes:
                await trio.to_thread.run_sync(_invalidate_inodes, inodes)


def _invalidate_inodes(inodes: list[tuple[int, bool]]) -> None:
    for inode, attr_only in inodes:
        try:
            pyfuse3.invalidate_inode(inode, attr_only)
        except OSError as exc:
            # The kernel side is going away (unmount) or no longer knows the inode: nothing
            # cached to drop. Not worth a traceback.
            if exc.errno != errno.ENOENT:
                log.debug("cache invalidation of inode %d: %s", inode, exc)
        except Exception:
            log.exception("cache invalidation failed for inode %d", inode)
