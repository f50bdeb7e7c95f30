"""Items' content: the sole writer of Item.cache (what the tree's updates mark stale aside).

Content is fetched on demand and cached; fetches of one item are coalesced (the first caller
fetches, the others wait on its event). Background fetches (a first listing's prefetch, the tree's
stale items, a refetch) go through one queue served by `prefetch` workers: a queued item costs a
reference, not a task (a find over 100,000 items would otherwise park 100,000 tasks).
"""

from __future__ import annotations

import errno
import logging
import math
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

from ..local.item_times import ItemTimes
from ..protocol.types import ContentGetParams, ContentGetResponse
from ..session import CONNECTED, ViewerSession
from ..sources import envelope
from ..world.fs_errors import FsError, transient_read_error
from ..world.places import Place
from ..world.tree import Folder, Item, Tree
from .calls import Calls
from .history import FETCHED, VIEWER, History
from .options import Options

log = logging.getLogger(__name__)


@attrs.define
class _Fetch:
    done: trio.Event = attrs.field(factory=trio.Event)
    error: FsError | None = None


class FetchQueue:
    """Items to fetch in the background; built before the tree, whose on_stale is `put`."""

    def __init__(self) -> None:
        self.send, self.recv = trio.open_memory_channel[Item](math.inf)

    def put(self, item: Item) -> None:
        self.send.send_nowait(item)

    def queued(self) -> int:
        return self.send.statistics().current_buffer_used


class Content:
    """Reads, fetches and records items' content (the only writer of Item.cache)."""

    def __init__(self, queue: FetchQueue, tree: Tree, calls: Calls, session: ViewerSession, history: History,
                 times: ItemTimes, options: Options, note_error: Callable[[str], None]) -> None:
        self.queue = queue
        self.tree = tree
        self.calls = calls
        self.session = session
        self.history = history
        self.times = times
        self.options = options
        self.note_error = note_error
        self._fetches: dict[str, _Fetch] = {}  # by item UUID: renames move inodes, not items
        self.fetch_count = 0
        self._fetching = 0  # background fetches a worker has taken and not finished
        self.worker_errors = 0  # a worker's bugs, counted in `background_errors`

    @property
    def connected(self) -> bool:
        return self.session.state == CONNECTED

    async def run_workers(self) -> None:
        """The background fetch workers, `prefetch` of them (at least one); until cancelled."""
        async with trio.open_nursery() as nursery:
            for _ in range(max(1, self.options.prefetch)):
                nursery.start_soon(self._fetch_worker)

    async def read_content(self, item: Item, *, current: bool = False, fresh: bool = False) -> bytes:
        """The item's content, fetched once and cached. Offline, the last known content.
        `current`: known at the item's current revision, which our own save's content is not
        until a fetch confirms it (Item.content_current); a read shows it meanwhile. `fresh`:
        fetched now, whatever is cached (what a save cut by a drop left in-world)."""
        for _attempt in range(4):
            cache = item.cache
            if cache.content is not None and not fresh and (item.content_current if current else cache.content_valid):
                return cache.content
            if not item.readable:
                raise FsError(errno.EACCES, f"{self.tree.path_of(item)}: script is not readable "
                              "(needs copy and modify permission)")
            if not self.connected and not await self.calls.await_viewer():
                if item.cache.content is not None and not fresh:
                    return item.cache.content
                raise FsError(errno.EIO, f"{self.tree.path_of(item)}: not connected to the viewer "
                              f"({self.session.state_detail})")
            fetch = self._fetches.get(item.uuid)
            if fetch is not None:
                await fetch.done.wait()
                if fetch.error is not None:
                    raise fetch.error
                continue
            fetch = self._fetches[item.uuid] = _Fetch()
            try:
                await self._fetch(item)
                fresh = False
            except FsError as exc:
                fetch.error = exc
                raise
            finally:
                fetch.done.set()
                del self._fetches[item.uuid]
        if item.cache.content is not None:
            return item.cache.content  # changing faster than we can read it: serve the newest we have
        raise FsError(errno.EIO, f"{self.tree.path_of(item)}: content keeps changing")

    async def _fetch(self, item: Item) -> None:
        assert item.folder is not None
        first = item.cache.content is None
        if first:
            await self.history.wait_open()  # the history tells a first fetch's mtime (below)
        generation, revision = item.cache.generation, item.info.revision
        path = self.tree.path_of(item)
        res: ContentGetResponse = await self.calls.call(
            f"read {path}", "object.content.get", ContentGetParams(prim_id=item.folder.uuid, item_id=item.uuid),
            ContentGetResponse, retries=self.options.save_retries, transient=transient_read_error, idempotent=True,
        )
        self.fetch_count += 1
        if item.info.type == "notecard":
            self.set_embedded_items(item, res.embedded_items or 0)
        current = generation == item.cache.generation
        # A script kept in an envelope (Firestorm's preprocessor) is shown as the source inside it.
        unwrapped = envelope.unwrap(res.content) if item.is_script else None
        shown = unwrapped.source if unwrapped is not None else res.content
        data = shown.encode("utf-8", "replace")
        # Content that changed since we last knew it, and not by our save (whose text we knew): a
        # save in the viewer, someone else's edit, a recompile.
        origin = VIEWER if item.cache.content is not None and item.cache.content != data else FETCHED
        inworld = res.content.encode("utf-8", "replace") if unwrapped is not None else None
        seen = None
        if first and item.cache.content is None and self.times.shown(item.uuid, data) is None:
            # A first fetch (no stat has shown the file yet: sizes are unknown before it): its
            # mtime is when the item came to hold this text, as far as the history knows, so a
            # remount shows what the last mount did; else now. Never changed once shown: editors
            # take a changed mtime for a change on disk.
            since = self.history.since(item.uuid, data)
            seen = since if since is not None else time.time()
            item.mtime_ns = round(seen * 1e6) * 1000  # the store's doubles hold microseconds exactly
        self.set_content(item, data, valid=current, revision=revision if current else None, inworld=inworld)
        self.history.record(item, origin, data, inworld=inworld, at=seen)
        if current:
            item.fetched_at(data, revision)

    def set_embedded_items(self, item: Item, count: int) -> None:
        """What the viewer says the notecard embeds: more than none makes it read-only (mode 0444)."""
        if item.cache.embedded_items != count:
            item.cache.embedded_items = count
            self.tree.invalidate_item(item, data=False)

    def set_content(self, item: Item, data: bytes, *, valid: bool, revision: int | None = None,
                    inworld: bytes | None = None) -> None:
        """Record content (of `revision`, by default the item's current one) as the file shows it,
        and, for a script kept in an envelope, the text as stored in-world; mtime moves only when
        the bytes differ from what was known before."""
        first = item.cache.content is None
        changed = not first and item.cache.content != data
        if inworld != item.cache.inworld:
            item.cache.inworld_places = None  # no longer the text our build's places describe
        item.cache.hold(data, inworld, valid=valid,
                        revision=revision if revision is not None or not valid else item.info.revision)
        item.echo.set_unconfirmed(False)
        set_on = self.times.shown(item.uuid, data) if first or changed else None
        if changed:
            # A time a program set on this very text (cp -p sets it before the close that saves)
            # stays; any other change is now, and forgets the time set on the old text.
            if set_on is None:
                self.times.forget(item.uuid)
            item.mtime_ns = set_on if set_on is not None else time.time_ns()
            self.tree.invalidate_item(item, data=True)
        else:
            if set_on is not None:
                item.mtime_ns = set_on
            # A first fetch needs no kernel invalidation (unknown sizes were never cached there),
            # but the size listings show is known now.
            self.tree.stat_changed(item)

    def set_inworld_places(self, item: Item, places: tuple[Place | None, ...] | None) -> None:
        """Where our build's sources sit in the in-world text just saved (the viewer's compile rows
        map back through them): the saver's, once its build is stored."""
        item.cache.inworld_places = places

    def set_mtime(self, item: Item, mtime_ns: int) -> None:
        """utimens (touch -d, cp -p, rsync -a): the time is shown, and kept across remounts, while
        the item holds the text the file shows now."""
        item.mtime_ns = mtime_ns
        shown = bytes(item.edit.buffer) if item.edit.buffer is not None else item.cache.content
        if shown is not None:
            self.times.set(item.uuid, mtime_ns, shown)
        self.tree.invalidate_item(item, data=False)  # a rename onto the item: the kernel has the old time

    def set_edit_mtime(self, item: Item, mtime_ns: int) -> None:
        """The time a local edit shows (model/edits.py): now at a write, the time before it when the
        edit is undone. An item's mtime is written here only."""
        item.mtime_ns = mtime_ns

    def confirm_content(self, item: Item) -> None:
        """Fetch the item in the background until its content is current (Item.content_current):
        our own save's content at the revision its echo brought."""
        self.queue.put(item)

    def refetch(self, item: Item) -> None:
        """What the viewer holds may differ from what we know: fetch it again (in the background)."""
        item.cache.stale()
        self.tree.invalidate_item(item, data=True)
        self.queue.put(item)

    async def _fetch_worker(self) -> None:
        async for item in self.queue.recv:
            if item.attached and not item.content_current and item.readable and self.connected:
                self._fetching += 1
                try:
                    await self.read_content(item, current=True)
                except FsError as exc:
                    log.debug("background fetch of %s failed: %s", item.uuid, exc.message)
                except Exception as exc:  # a bug: this worker must go on serving the queue
                    self.worker_errors += 1
                    log.exception("background fetch of %s failed", item.uuid)
                    self.note_error(f"background fetch failed: {exc!r}")
                finally:
                    self._fetching -= 1

    def start_prefetch(self, folder: Folder) -> None:
        """The first listing of a prim fetches its items, `prefetch` at a time."""
        if folder.listed:
            return
        folder.listed = True
        if self.options.prefetch <= 0 or not self.connected:
            return
        for item in list(folder.items.values()):
            if item.readable and item.cache.content is None:
                self.queue.put(item)

    def status(self) -> dict[str, Any]:
        return {"content_fetches": self.fetch_count, "fetches_pending": self.queue.queued() + self._fetching}
