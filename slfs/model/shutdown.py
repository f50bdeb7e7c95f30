"""The daemon stops: files written but not yet closed are saved when there is time, or else kept in
the recovery folder, as are new files never closed and live files not yet saved. Nothing is
dropped."""

from __future__ import annotations

import logging

import trio

from ..world.fs_errors import FsError
from ..world.tree import Item, NewFile
from .calls import Calls
from .live import LiveScripts
from .live_writes import LiveWriter
from .save import Saver

log = logging.getLogger(__name__)


class Shutdown:
    """What the stop does with the texts no flush has stored yet."""

    def __init__(self, saver: Saver, live: LiveWriter, *, calls: Calls, live_scripts: LiveScripts) -> None:
        self.calls = calls
        self.live_scripts = live_scripts
        self.tree = saver.tree
        self.saver = saver
        self.live = live

    async def keep_unsaved(self, grace: float, *, save: bool = True) -> None:
        """Files written but not yet closed: saved (when `save`, within `grace` seconds), or else
        kept in the recovery folder; new files never closed are kept too. Nothing is dropped."""
        items = [n for n in list(self.tree.nodes.values())
                 if isinstance(n, Item) and n.edit.dirty and n.edit.buffer is not None]
        kept: set[str] = set()
        if save and items:
            with trio.move_on_after(grace):
                # A stop while the session reconnects after a drop waits for it as a save would
                # (reconnect_wait from the drop), rather than sending the files to recovery at once.
                viewer = self.calls.connected or await self.calls.await_viewer()
                for item in items if viewer else ():
                    unlinked = item.folder is not None and item.folder.tombstones.get(item.name) is item
                    if item.attached and not unlinked:
                        try:
                            await self.saver.save(item)
                        except FsError as exc:  # a failed save leaves a recovery copy itself
                            kept.add(item.uuid)
                            log.error("unsaved %s at shutdown: %s", self.tree.path_of(item), exc.message)
        for item in items:
            if item.edit.dirty and item.edit.buffer is not None and item.uuid not in kept:
                await self.saver.recover(self.tree.path_of(item) or item.name, bytes(item.edit.buffer),
                                         "daemon stopped before it was saved", item=item)
        for ls in list(self.live_scripts.by_id.values()):
            if ls.dirty and ls.local is not None:
                try:
                    await self.live.commit(ls)  # the temp file is local: no viewer needed
                except FsError as exc:  # a failed save leaves a recovery copy itself
                    log.error("unsaved live file %s at shutdown: %s", ls.name, exc.message)
        await self.live.keep_unsaved()
        for node in list(self.tree.nodes.values()):
            if isinstance(node, NewFile) and node.live:
                continue  # the live writer's, just above
            if isinstance(node, NewFile) and node.folder is not None and node.data:
                path = f"{self.tree.path_of(node.folder)}/{node.name}".lstrip("/")
                await self.saver.recover(path, bytes(node.data), "daemon stopped before the new file was closed")
            elif isinstance(node, NewFile) and node.failed and node.dirty:
                # Written after its create failed, and still open.
                await self.saver.recover(node.failed, bytes(node.data), "written after its create failed; not saved")
