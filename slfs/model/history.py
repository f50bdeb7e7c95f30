"""History: every distinct text of every item slfs sees, kept in a local store per agent.

The model tells `record` each text that passes (a fetch, a save by slfs, a viewer-side save seen
as a fetch that differs, the text before a delete, a recovery copy); `record` only queues it, so a
save's close() never waits on the disk. One worker task writes the queue to the store
(history_store.py, SQLite) through one thread at a time, a batch per transaction. A store that
cannot be written (a full or read-only disk, a directory that cannot be made) is a status line
(`history`, `history_errors`) and a log entry; the save it came from has already landed.

The store is per agent (their items are theirs whatever mount shows them) under the data dir:
`~/.local/share/slfs/history/AGENT.sqlite3`. It opens when the session says who the agent is.
Reads (the mount's `.slfs/history/` listings, the `history` request) use a read-only connection
of their own: indexed lookups of one item's versions, answered from the page cache.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import re
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from .. import event_types as ev
from .. import paths
from ..local.history_store import DELETED, Place, Store, Version, digest_of
from ..protocol.ids import is_uuid
from ..world.nodes import Item
from .options import Options

log = logging.getLogger(__name__)

FETCHED, SAVED, VIEWER, RECOVERED = "fetched", "saved", "viewer", "recovered"
ORIGINS = (FETCHED, SAVED, VIEWER, DELETED, RECOVERED)
QUEUE = 4096  # versions waiting for the disk; beyond it a version is dropped (counted, said)
BATCH = 256  # versions written in one transaction
# When the queue is this full, texts merely fetched are left out (counted, not an error): the
# room left is for saves, viewer-side changes, deletes and recovery copies, which exist nowhere else.
FETCHED_RESERVE = 512
REOPEN_INTERVAL = 30.0  # seconds between two tries to open a store the disk refused
AGE_PRUNE_INTERVAL = 3600.0  # seconds between two age prunes of a store that stays open
SUFFIX = ".sqlite3"


def history_dir() -> Path:
    return paths.data_dir() / "history"


def agent_key(agent_id: str, agent_name: str) -> str:
    """The store file's name: the agent's UUID, else a digest of their name (never the name: it is
    network text), else one store for an agent the viewer never named."""
    if is_uuid(agent_id):
        return agent_id.lower()
    if agent_name:
        return "name-" + hashlib.sha256(agent_name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return "unknown-agent"


def place_of(path_of: Callable[[Any], str], item: Item) -> Place | None:
    folder = item.folder
    if folder is None or item.record is None:
        return None
    obj = folder.object_folder
    return Place(item_id=item.uuid, item_type=item.info.type, file_name=item.name, item_name=item.info.name,
                 object_id=obj.uuid, object_name=obj.link_name, prim_id=folder.uuid, prim_name=folder.link_name,
                 path=path_of(item))


@attrs.frozen
class _Pending:
    place: Place
    origin: str
    data: bytes
    inworld: bytes | None
    at: float


@attrs.frozen
class _Open:
    key: str


class History:
    """The history store's trio side: record (queue), the worker, reads, status."""

    def __init__(self, options: Options, path_of: Callable[[Any], str],
                 emit: Callable[[ev.SlfsEvent], None] = lambda _event: None) -> None:
        self.max_bytes = options.history_max
        self.max_days = options.history_days
        self.enabled = self.max_bytes > 0
        self._path_of = path_of
        self._emit = emit
        self._opened = trio.Event()  # the agent's store was opened (or failed to): since() can answer
        self._send, self._recv = trio.open_memory_channel[_Pending | _Open](QUEUE)
        self._limiter = trio.CapacityLimiter(1)  # one writer thread at a time owns the store
        self._blob_limiter = trio.CapacityLimiter(1)
        self._store: Store | None = None  # the worker's (written only in its thread)
        self.reader: Store | None = None  # read-only, for listings
        self._blobs: Store | None = None  # read-only, for contents (in a thread)
        self.key = ""
        self.file: Path | None = None
        self.queued = 0  # versions (and stores to open) handed to the worker: a sequence number
        self.done = 0  # of those, how many the worker has finished with (written, deduplicated or failed)
        self._progress = trio.Event()
        self.written = 0
        self.dropped = 0
        self.skipped = 0  # fetched texts left out while the queue was nearly full (FETCHED_RESERVE)
        self.failures = 0
        self.last_failure = ""
        self._pruned_at = 0.0
        self._open_tried_at = -math.inf
        self.versions = 0
        self.bytes = 0
        # Bumped whenever the store's content changes (a store opened, versions added, a prune):
        # the listings the mount shows are kept until then (_cached).
        self.generation = 0
        self._listings: dict[str, tuple[int, Any]] = {}

    # --- recording (the trio thread: never blocks) ------------------------------------------

    def open_for(self, agent_id: str, agent_name: str) -> None:
        """The session knows the agent: their store opens (another agent's closes)."""
        if not self.enabled:
            return
        key = agent_key(agent_id, agent_name)
        if key != self.key:
            self.key = key
            self._opened = trio.Event()
            self._put(_Open(key))

    def record(self, item: Item, origin: str, data: bytes, *, inworld: bytes | None = None,
               at: float | None = None) -> None:
        """A text of `item` seen at `at` (default now; origin: one of ORIGINS); queued for the store."""
        if not self.enabled or not self.key:
            return
        place = place_of(self._path_of, item)
        if place is None:
            return
        if origin == FETCHED and self._send.statistics().current_buffer_used >= QUEUE - FETCHED_RESERVE:
            self.skipped += 1  # a first mount's prefetch outrunning the disk: the text is in-world still
            if self.skipped == 1:
                log.info("history: fetched texts are coming faster than the store takes them; some are not kept")
            return
        self._put(_Pending(place, origin, bytes(data), None if inworld is None else bytes(inworld),
                           time.time() if at is None else at))

    def _put(self, what: _Pending | _Open) -> None:
        try:
            self._send.send_nowait(what)
        except trio.WouldBlock:
            self.dropped += 1
            which = what.place.path if isinstance(what, _Pending) else "a store to open"
            self._fail(f"{QUEUE} versions are waiting for the disk; one of {which} was not kept",
                       log_it=self.dropped == 1 or self.dropped % 1000 == 0)
            if isinstance(what, _Open):
                self._opened.set()  # no open to wait for: first fetches go on without the store
            return
        self.queued += 1

    async def flush(self, timeout: float = 10.0) -> bool:
        """Until every version recorded (and store opened) before the call is done with."""
        target = self.queued
        with trio.move_on_after(timeout):
            while self.done < target:
                await self._progress.wait()
            return True
        return False

    # --- the worker ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Write what record queued, a batch per transaction, in one thread at a time; at the end
        (the mount's), close the store, so the next mount finds it checkpointed."""
        try:
            await self._serve()
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._close_all, limiter=self._limiter)

    def _close_all(self) -> None:
        for store in (self._store, self.reader, self._blobs):
            if store is not None:
                try:
                    store.close()
                except sqlite3.Error as exc:
                    log.warning("history: closing %s: %s", store.path, exc)
        self._store = self.reader = self._blobs = None

    async def _serve(self) -> None:
        async for first in self._recv:
            batch = [first]
            while len(batch) < BATCH:
                try:
                    batch.append(self._recv.receive_nowait())
                except trio.WouldBlock:
                    break
            try:
                results = await trio.to_thread.run_sync(self._write, batch, limiter=self._limiter)
            except Exception as exc:  # a bug here must cost versions, never the mount
                log.exception("history: a batch of %d could not be written", len(batch))
                self._fail(f"{len(batch)} version(s) not kept: {exc}", log_it=False)
                results = []
            if any(isinstance(what, _Open) for what in batch):
                self._opened.set()
            for pending, version in results:
                if version is not None:
                    self._emit(ev.Version(path=pending.place.path, origin=version.origin, digest=version.digest,
                                          item_id=version.place.item_id, version=version.id, size=version.size))
            self.done += len(batch)
            self.generation += 1
            self._progress.set()
            self._progress = trio.Event()

    def _write(self, batch: list[_Pending | _Open]) -> list[tuple[_Pending, Version | None]]:
        """The worker's thread: open stores, add versions, prune. Failures are status and log."""
        out: list[tuple[_Pending, Version | None]] = []
        pending: list[_Pending] = []
        for what in batch:
            if isinstance(what, _Open):
                out += self._add_all(pending)
                pending = []
                self._open(what.key)
            else:
                pending.append(what)
        out += self._add_all(pending)
        self._maybe_prune()
        return out

    def _open(self, key: str) -> None:
        self._open_tried_at = time.monotonic()
        self._close_all()
        target = history_dir() / f"{key}{SUFFIX}"
        self.file = target
        try:
            paths.ensure(target.parent)
            if not target.exists():  # made 0600 before SQLite opens it (its -wal and -shm follow it)
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
            store = Store(target)
            self._store = store
            self.reader = Store(target, readonly=True)
            self._blobs = Store(target, readonly=True)
            self._pruned_at = 0.0
            self._maybe_prune(force=True)
            self.versions, self.bytes = store.counts()
            log.info("history: %s (%d versions, %d bytes)", target, self.versions, self.bytes)
        except (sqlite3.Error, OSError) as exc:
            self._fail(f"cannot open the history store {target}: {exc}")
            self._close_all()
            self._open_read_only(target)

    def _open_read_only(self, target: Path) -> None:
        """A store the disk no longer lets us write (read-only, full) is still shown."""
        if not target.is_file():
            return
        try:
            self.reader = Store(target, immutable=True)
            self._blobs = Store(target, immutable=True)
            self.versions, self.bytes = self.reader.counts()
            log.info("history: %s is shown read-only (%d versions)", target, self.versions)
        except (sqlite3.Error, OSError) as exc:
            self.reader = self._blobs = None
            log.warning("history: %s cannot be read either: %s", target, exc)

    def _add_all(self, pending: list[_Pending]) -> list[tuple[_Pending, Version | None]]:
        store = self._store
        if not pending:
            return []
        if store is None:
            if self.key and time.monotonic() - self._open_tried_at > REOPEN_INTERVAL:
                self._open(self.key)  # a disk that refused before may take it now
            store = self._store
            if store is None:
                self._fail(f"{len(pending)} version(s) not kept: the history store is not open", log_it=False)
                return [(p, None) for p in pending]
        out: list[tuple[_Pending, Version | None]] = []
        failed = False
        try:
            with store._transaction():
                for p in pending:
                    out.append((p, store.add(p.place, p.origin, p.data, p.inworld, p.at)))
        except (sqlite3.Error, OSError):
            # The batch is rolled back whole: each version on its own, so those the disk takes land.
            out = []
            for p in pending:
                try:
                    out.append((p, store.add(p.place, p.origin, p.data, p.inworld, p.at)))
                except (sqlite3.Error, OSError) as exc:
                    failed = True
                    self._fail(f"a version of {p.place.path} ({p.origin}, {len(p.data)} bytes) could not be "
                               f"written to {store.path}: {exc}")
                    out.append((p, None))
        added = [v for _p, v in out if v is not None]
        self.written += len(added)
        self.versions += len(added)
        self.bytes += sum(v.size for v in added)
        if self.last_failure and added and not failed:
            log.info("history: writing works again (%s)", store.path)
            self.last_failure = ""
        return out

    def _maybe_prune(self, *, force: bool = False) -> None:
        store = self._store
        if store is None:
            return
        now = time.time()
        by_age = force or now - self._pruned_at > AGE_PRUNE_INTERVAL
        # self.bytes counts each version's text (a shared blob more than once): over the bound by
        # that count is the only time a size prune can have anything to do.
        by_size = self.bytes > self.max_bytes
        if not (by_age or by_size):
            return
        try:
            # Down to 90 % of the bound, so a store at its bound prunes once in a while, not per batch.
            removed = store.prune(self.max_bytes * 9 // 10, self.max_days if by_age else 0.0, now)
            self.versions, self.bytes = store.counts()
        except (sqlite3.Error, OSError) as exc:
            self._fail(f"pruning {store.path} failed: {exc}")
            return
        if by_age:
            self._pruned_at = now
        if removed:
            log.info("history: pruned %d old versions (%d left, %d bytes)", removed, self.versions, self.bytes)

    def _fail(self, message: str, *, log_it: bool = True) -> None:
        self.failures += 1
        self.last_failure = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}"
        if log_it:
            log.error("history: %s", message)

    # --- reading ------------------------------------------------------------------------------

    async def wait_open(self, timeout: float = 2.0) -> None:
        """Until the agent's store was opened (or failed to), at most `timeout`: a mount's first
        fetches race its opening, and since() answers only from an open store."""
        if self.enabled and self.key:
            with trio.move_on_after(timeout):
                await self._opened.wait()

    def since(self, item_id: str, data: bytes) -> float | None:
        """When the item came to hold `data`, if its newest version is that text: what a first
        fetch shows as the file's mtime, so a remount shows what the last mount did."""
        return self._read(lambda r: r.since(item_id, digest_of(data)), None)

    def versions_of(self, item_id: str) -> list[Version]:
        """The item's versions, newest first (none while no store is open)."""
        return self._read(lambda r: r.versions(item_id), [])

    def latest_in_prim(self, prim_id: str) -> list[Version]:
        """The newest version of every item ever seen in the prim, newest first."""
        return self._read(lambda r: r.latest_in("prim_id", [prim_id]), [])

    def latest_in_object(self, object_id: str) -> list[Version]:
        return self._read(lambda r: r.latest_in("object_id", [object_id]), [])

    def version(self, vid: int) -> Version | None:
        return self._read(lambda r: r.version(vid), None)

    def item_ids(self) -> list[str]:
        return self._read(lambda r: r.item_ids(), [])

    # --- what the mount shows: OBJECT/.slfs/history/FILE/VERSION, MOUNT/.slfs/history/by-id/ID/ ----

    def item_dirs(self, prim_id: str, shown: dict[str, str]) -> dict[str, str]:
        """A folder's `.slfs/history/`: directory name -> item_id. `shown`: the folder's item files
        now (file name -> item_id), each under its name; then every other item the store saw in the
        prim (deleted, moved away) under the name it last had, `@` and 8 digits of its id when that
        name is taken."""
        out = dict(shown)
        taken = set(shown.values())
        for v in self._cached(f"prim:{prim_id}", lambda: self.latest_in_prim(prim_id)):
            item_id = v.place.item_id
            if item_id in taken:
                continue
            name = v.place.file_name
            if name in out or not name:
                name = f"{name}@{item_id[:8]}"
            out[name] = item_id
            taken.add(item_id)
        return out

    def version_files(self, item_id: str) -> dict[str, tuple[Version, bool]]:
        """An item's history directory: file name -> (version, whether it is the in-world text of a
        preprocessed script's version: `NAME.inworld` beside `NAME`)."""
        def listing() -> dict[str, tuple[Version, bool]]:
            versions = self.versions_of(item_id)
            out: dict[str, tuple[Version, bool]] = {}
            for name, v in version_names(versions, extension(versions[0].place) if versions else ""):
                out[name] = (v, False)
                if v.inworld is not None:
                    out[f"{name}.inworld"] = (v, True)
            return out
        return self._cached(f"item:{item_id}", listing)  # type: ignore[no-any-return]

    def _cached(self, key: str, make: Callable[[], Any]) -> Any:
        """Listings stay valid until the store changes (a version added, a prune): an `ls -l` of a
        1,000-version directory asks for each name, and each must not query the store again."""
        hit = self._listings.get(key)
        if hit is not None and hit[0] == self.generation:
            return hit[1]
        value = make()
        if len(self._listings) > 256:
            self._listings.clear()
        self._listings[key] = (self.generation, value)
        return value

    def blob_size(self, digest: str) -> int:
        return int(self._read(lambda r: r.blob_size(digest), 0))

    def _read(self, ask: Callable[[Store], Any], default: Any) -> Any:
        reader = self.reader
        if reader is None:
            return default
        try:
            return ask(reader)
        except sqlite3.Error as exc:
            self._fail(f"reading {reader.path} failed: {exc}")
            return default

    async def blob(self, digest: str) -> bytes | None:
        """A version's text (read in a thread: it may be large and the disk slow)."""
        store = self._blobs
        if store is None:
            return None

        def read() -> bytes | None:
            try:
                return store.blob(digest)
            except sqlite3.Error as exc:
                self._fail(f"reading {store.path} failed: {exc}")
                return None

        return await trio.to_thread.run_sync(read, limiter=self._blob_limiter)

    # --- Service (model/services.py) ----------------------------------------------------------

    def on_event(self, event: ev.SlfsEvent) -> None:
        pass

    def status(self) -> dict[str, Any]:
        if not self.enabled:
            return {"history": "off (history_max=0)"}
        if self.last_failure:
            line = f"failing: {self.last_failure}"
        elif self.reader is None:
            line = "not open yet (no agent known)" if not self.key else "opening"
        else:
            line = f"{self.versions} versions, {_size(self.bytes)} of {_size(self.max_bytes)} ({self.file})"
            if self.skipped:
                line += f"; {self.skipped} fetched texts not kept (they came faster than the disk took them)"
        return {"history": line, "history_errors": self.failures + self.dropped}


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def extension(place: Place) -> str:
    """A version file's extension: the script's (.lsl, .luau), none for a notecard."""
    if place.item_type != "script":
        return ""
    return ".luau" if place.file_name.endswith(".luau") else ".lsl"


# The sequence of a second version within one second, zero-padded so that `ls` (and `ls | tail -2`,
# the README's diff recipe) lists them in time order: `~002` ... `~999`, then `~1000` (out of order
# only past 999 versions in one second). Names before issue 33 had it unpadded (`~2`, `~10`).
SEQ_WIDTH = 3
_SEQUENCED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)~(\d+)(?=\.|$)")


def version_names(versions: list[Version], ext: str) -> list[tuple[str, Version]]:
    """File names of an item's versions (newest first as given): UTC time and origin,
    `2026-12-02T14:03:07Z.saved.lsl`; a second version within one second gets `~002`, `~003`...
    (after the first in `ls` order)."""
    seen: dict[str, int] = {}
    named: list[tuple[str, Version]] = []
    for v in reversed(versions):  # oldest first, so a name never changes when a newer one comes
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(math.floor(v.at)))
        n = seen[stamp] = seen.get(stamp, 0) + 1
        named.append((f"{stamp}{'' if n == 1 else f'~{n:0{SEQ_WIDTH}d}'}.{v.origin}{ext}", v))
    named.reverse()
    return named


def current_version_name(name: str) -> str:
    """A version name (or a prefix of one) in its current form: an older name's unpadded sequence
    (`...Z~2.saved.lsl`) padded as version_names pads it (`...Z~002.saved.lsl`)."""
    m = _SEQUENCED.match(name)
    if m is None or len(m[2]) >= SEQ_WIDTH:
        return name
    return f"{m[1]}~{int(m[2]):0{SEQ_WIDTH}d}{name[m.end():]}"
