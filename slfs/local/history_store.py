"""The history store's SQLite side: every distinct text of every item, content-addressed.

SQLite (the standard library's sqlite3) rather than a git repository: no new dependency, every
write a transaction (a crash or a full disk leaves the store as it was before the write), and the
queries the mount view and the CLI ask (an item's versions newest first, the items deleted from a
prim) are indexed lookups rather than walks over commits.

Blobs are keyed by the SHA-256 of their bytes, so a text seen twice (fetched, then saved again; a
trash copy of what was last fetched) is stored once; a version references its blob, and, for a
preprocessed script, the blob of what went in-world. One Store object is used by one thread at a
time (history.py serialises the writes through one worker; reads open their own connection).
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

SCHEMA_VERSION = 1
DELETED = "deleted"
KEEP_NEWEST = 2  # pruning never removes the last two versions of an item

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS versions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    item_id TEXT NOT NULL,
    at REAL NOT NULL,
    origin TEXT NOT NULL,
    digest TEXT NOT NULL,
    inworld TEXT,
    size INTEGER NOT NULL,
    item_type TEXT NOT NULL,
    file_name TEXT NOT NULL,
    item_name TEXT NOT NULL,
    object_id TEXT NOT NULL,
    object_name TEXT NOT NULL,
    prim_id TEXT NOT NULL,
    prim_name TEXT NOT NULL,
    path TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS versions_item ON versions (item_id, at);
CREATE INDEX IF NOT EXISTS versions_prim ON versions (prim_id);
CREATE INDEX IF NOT EXISTS versions_object ON versions (object_id);
CREATE INDEX IF NOT EXISTS versions_digest ON versions (digest);
CREATE INDEX IF NOT EXISTS versions_inworld ON versions (inworld);
CREATE INDEX IF NOT EXISTS versions_at ON versions (at);
"""

_COLUMNS = ("id", "item_id", "at", "origin", "digest", "inworld", "size", "item_type", "file_name", "item_name",
            "object_id", "object_name", "prim_id", "prim_name", "path")


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@attrs.frozen(kw_only=True)
class Place:
    """Where an item was when a version of it was seen: its ids, names and path in the mount."""

    item_id: str
    item_type: str  # "script" or "notecard"
    file_name: str  # as the mount showed it (FILE.lsl)
    item_name: str  # the in-world name
    object_id: str
    object_name: str
    prim_id: str
    prim_name: str
    path: str  # relative to the mount


@attrs.frozen(kw_only=True)
class Version:
    id: int
    at: float  # seconds since the epoch (UTC)
    origin: str  # fetched, saved, viewer, deleted, recovered
    digest: str  # the text the file shows
    inworld: str | None  # a preprocessed script: what went in-world
    size: int
    place: Place

    def as_json(self) -> dict[str, object]:
        p = self.place
        return {"id": self.id, "time": self.at, "origin": self.origin, "digest": self.digest,
                "inworld_digest": self.inworld, "size": self.size, "item_id": p.item_id, "type": p.item_type,
                "file": p.file_name, "item_name": p.item_name, "object_id": p.object_id, "object": p.object_name,
                "prim_id": p.prim_id, "prim": p.prim_name, "path": p.path}


def _text_in(text: str) -> str | bytes:
    """A name as SQLite can hold it: names from the viewer may hold lone surrogates (JSON's
    "\\ud800"), which the sqlite3 module cannot encode; those are kept as their surrogatepass
    bytes (a BLOB in the TEXT column) and come back as they were (_text_out)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def _text_out(value: Any) -> Any:
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _version(row: tuple[Any, ...]) -> Version:
    v: dict[str, Any] = {k: _text_out(x) for k, x in zip(_COLUMNS, row, strict=True)}
    place = Place(item_id=v["item_id"], item_type=v["item_type"], file_name=v["file_name"], item_name=v["item_name"],
                  object_id=v["object_id"], object_name=v["object_name"], prim_id=v["prim_id"],
                  prim_name=v["prim_name"], path=v["path"])
    return Version(id=int(v["id"]), at=float(v["at"]), origin=v["origin"], digest=v["digest"], inworld=v["inworld"],
                   size=int(v["size"]), place=place)


_SELECT = f"SELECT {', '.join(_COLUMNS)} FROM versions"
# Each version with its rank among its item's versions, newest first (1: the newest).
_RANKED = ("SELECT id, at, ROW_NUMBER() OVER (PARTITION BY item_id ORDER BY at DESC, id DESC) AS rn "
           "FROM versions")


class Store:
    """One agent's store file. Writes go through `add` and `prune`, each a transaction."""

    def __init__(self, path: Path, *, readonly: bool = False, immutable: bool = False) -> None:
        """`readonly`: a connection that only reads (the store's writer is another); `immutable`: a
        store on a disk nothing can write any more (SQLite then needs no -shm file; what the last
        writer left in its WAL unmerged is not seen)."""
        self.path = path
        if readonly or immutable:
            mode = "immutable=1" if immutable else "mode=ro"
            self.db = sqlite3.connect(f"file:{path}?{mode}", uri=True, check_same_thread=False,
                                      isolation_level=None)
        else:
            self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at each checkpoint, never corrupt
            self.db.executescript("BEGIN;" + _SCHEMA + "COMMIT;")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
        self.db.execute("PRAGMA busy_timeout=2000")

    def close(self) -> None:
        self.db.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self.db)

    # --- writing -----------------------------------------------------------------------------

    def add(self, place: Place, origin: str, data: bytes, inworld: bytes | None, at: float) -> Version | None:
        """Record a version; None when it is the text the item's newest version holds already (a
        delete is always recorded: it says the item went)."""
        digest = digest_of(data)
        inworld_digest = digest_of(inworld) if inworld is not None else None
        with self._transaction():
            last = self.db.execute("SELECT digest, inworld, origin FROM versions WHERE item_id = ? "
                                   "ORDER BY at DESC, id DESC LIMIT 1", (place.item_id,)).fetchone()
            if last is not None and origin != DELETED and last[0] == digest and last[2] != DELETED \
                    and (inworld_digest is None or last[1] == inworld_digest):
                return None
            self._put_blob(digest, data)
            if inworld is not None and inworld_digest is not None:
                self._put_blob(inworld_digest, inworld)
            cur = self.db.execute(
                "INSERT INTO versions (item_id, at, origin, digest, inworld, size, item_type, file_name, item_name, "
                "object_id, object_name, prim_id, prim_name, path) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (place.item_id, at, origin, digest, inworld_digest, len(data), place.item_type,
                 _text_in(place.file_name), _text_in(place.item_name), place.object_id, _text_in(place.object_name),
                 place.prim_id, _text_in(place.prim_name), _text_in(place.path)))
            assert cur.lastrowid is not None
            return Version(id=cur.lastrowid, at=at, origin=origin, digest=digest, inworld=inworld_digest,
                           size=len(data), place=place)

    def _put_blob(self, digest: str, data: bytes) -> None:
        self.db.execute("INSERT OR IGNORE INTO blobs (digest, size, data) VALUES (?, ?, ?)", (digest, len(data), data))

    def total_bytes(self) -> int:
        return int(self.db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0])

    def prune(self, max_bytes: int, max_days: float, now: float | None = None) -> int:
        """Remove the oldest versions first, those older than `max_days` and then as many as it takes
        to bring the blobs within `max_bytes` (0: no bound), never the newest two of an item.
        Returns how many versions went."""
        now = time.time() if now is None else now
        removed = 0
        with self._transaction():
            if max_days > 0:
                removed += self._remove(self.db.execute(
                    f"SELECT id FROM ({_RANKED}) WHERE rn > ? AND at < ?",
                    (KEEP_NEWEST, now - max_days * 86400)).fetchall())
                self._collect()
            if max_bytes > 0:
                total = self.total_bytes()
                while total > max_bytes:
                    batch = self.db.execute(f"SELECT id FROM ({_RANKED}) WHERE rn > ? ORDER BY at, id LIMIT 64",
                                            (KEEP_NEWEST,)).fetchall()
                    if not batch:
                        break
                    for (vid,) in batch:
                        total -= self._remove_one(vid)
                        removed += 1
                        if total <= max_bytes:
                            break
        return removed

    def _remove(self, rows: Iterable[tuple[int]]) -> int:
        ids = [r[0] for r in rows]
        self.db.executemany("DELETE FROM versions WHERE id = ?", [(i,) for i in ids])
        return len(ids)

    def _remove_one(self, vid: int) -> int:
        """Remove one version and the blobs nothing else references; the bytes freed."""
        row = self.db.execute("SELECT digest, inworld FROM versions WHERE id = ?", (vid,)).fetchone()
        self.db.execute("DELETE FROM versions WHERE id = ?", (vid,))
        freed = 0
        for digest in filter(None, row or ()):
            if not self._referenced(digest):
                size = self.db.execute("SELECT size FROM blobs WHERE digest = ?", (digest,)).fetchone()
                self.db.execute("DELETE FROM blobs WHERE digest = ?", (digest,))
                freed += int(size[0]) if size else 0
        return freed

    def _referenced(self, digest: str) -> bool:
        return self.db.execute("SELECT 1 FROM versions WHERE digest = ?1 OR inworld = ?1 LIMIT 1",
                               (digest,)).fetchone() is not None

    def _collect(self) -> None:
        self.db.execute("DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM versions WHERE versions.digest = "
                        "blobs.digest) AND NOT EXISTS (SELECT 1 FROM versions WHERE versions.inworld = blobs.digest)")

    # --- reading -----------------------------------------------------------------------------

    def versions(self, item_id: str, limit: int = 100_000) -> list[Version]:
        """The item's versions, newest first."""
        rows = self.db.execute(f"{_SELECT} WHERE item_id = ? ORDER BY at DESC, id DESC LIMIT ?", (item_id, limit))
        return [_version(r) for r in rows]

    def since(self, item_id: str, digest: str) -> float | None:
        """When the item's newest version, if it holds the text of `digest`, was seen: the time
        the item has held that text since, as far as the store knows."""
        row = self.db.execute("SELECT at, digest, origin FROM versions WHERE item_id = ? "
                              "ORDER BY at DESC, id DESC LIMIT 1", (item_id,)).fetchone()
        if row is None or row[1] != digest or row[2] == DELETED:
            return None
        return float(row[0])

    def version(self, vid: int) -> Version | None:
        row = self.db.execute(f"{_SELECT} WHERE id = ?", (vid,)).fetchone()
        return _version(row) if row is not None else None

    def blob(self, digest: str) -> bytes | None:
        row = self.db.execute("SELECT data FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return bytes(row[0]) if row is not None else None

    def blob_size(self, digest: str) -> int:
        row = self.db.execute("SELECT size FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return int(row[0]) if row is not None else 0

    def latest_in(self, column: str, ids: Iterable[str]) -> list[Version]:
        """The newest version of every item ever seen in these prims (`prim_id`) or objects
        (`object_id`), newest first."""
        assert column in ("prim_id", "object_id")
        wanted = list(ids)
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        rows = self.db.execute(
            f"{_SELECT} WHERE id IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY item_id "
            f"ORDER BY at DESC, id DESC) AS rn FROM versions WHERE item_id IN (SELECT DISTINCT item_id FROM versions "
            f"WHERE {column} IN ({marks}))) WHERE rn = 1) ORDER BY at DESC, id DESC", wanted)
        return [_version(r) for r in rows]

    def item_ids(self, limit: int = 1_000_000) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT DISTINCT item_id FROM versions LIMIT ?", (limit,))]

    def counts(self) -> tuple[int, int]:
        """(versions, bytes of blobs)."""
        n = int(self.db.execute("SELECT COUNT(*) FROM versions").fetchone()[0])
        return n, self.total_bytes()


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (a full disk leaves no half write)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.outer = False

    def __enter__(self) -> None:
        self.outer = not self.db.in_transaction
        if self.outer:
            self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if not self.outer:
            return
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:
            self.db.execute("ROLLBACK")
