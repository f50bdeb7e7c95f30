"""Modification times programs set on item files (utimens: `touch -d`, `cp -p`, `rsync -a`, tar),
kept per item across remounts until the in-world text changes.

rsync, make and backup tools decide what changed by size and mtime. A time that is accepted and
then forgotten makes every `rsync -a` send every file again, and each save of a script resets it.
So a time set on an item is kept with a digest of the text it was set on: it is shown while the
item holds that text (this mount or a later one), and forgotten when the text changes.

One small JSON file per agent in the state dir (`times/AGENT.json`): read once when the session
names the agent (a few hundred kilobytes at most: MAX_ENTRIES), written whole, off the trio
thread, through a temp file and a rename (a crash leaves the old file or the new one).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import trio

from .. import paths
from .history_store import digest_of

log = logging.getLogger(__name__)

MAX_ENTRIES = 200_000  # a bound on what a file from disk may make us hold
MAX_FILE_BYTES = 64 << 20
WRITE_DELAY = 0.5  # seconds of quiet before the file is written (rsync sets thousands in a row)


def times_dir() -> Path:
    return paths.state_dir() / "times"


class ItemTimes:
    """The times set on items: item_id -> (mtime_ns, digest of the text it was set on)."""

    def __init__(self) -> None:
        self._set: dict[str, tuple[int, str]] = {}
        self.file: Path | None = None
        self._changed = trio.Event()
        self._dirty = False  # set since the file was last written
        self.failures = 0
        self.last_failure = ""

    def open_for(self, key: str) -> None:
        """The session named the agent (history.agent_key): their times are read (another agent's
        are written out first). A file that cannot be read is logged and counted, never fatal."""
        target = times_dir() / f"{key}.json"
        if target == self.file:
            return
        if self._dirty and self.file is not None:
            try:  # another agent's times, set this mount: written before theirs are read
                _write_atomically(self.file, self._body())
            except OSError as exc:
                self._fail(f"cannot write {self.file}: {exc}")
        self._dirty = False
        self._set = {}
        self.file = target
        try:
            if target.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"larger than {MAX_FILE_BYTES} bytes")
            raw = json.loads(target.read_bytes())
        except FileNotFoundError:
            return
        except (OSError, ValueError, RecursionError) as exc:
            self._fail(f"cannot read {target}: {exc}")
            return
        if not isinstance(raw, dict):
            self._fail(f"{target}: not a JSON object; ignored")
            return
        for item_id, value in list(raw.items())[:MAX_ENTRIES]:
            if isinstance(value, list) and len(value) == 2 and type(value[0]) is int and isinstance(value[1], str):
                self._set[item_id] = (value[0], value[1])
        log.debug("item times: %d from %s", len(self._set), target)

    def shown(self, item_id: str, data: bytes) -> int | None:
        """The time set on the item while it held `data`, if it still does."""
        kept = self._set.get(item_id)
        if kept is None or kept[1] != digest_of(data):
            return None
        return kept[0]

    def set(self, item_id: str, mtime_ns: int, data: bytes) -> None:
        """A program set the item's mtime while it shows `data`."""
        if item_id not in self._set and len(self._set) >= MAX_ENTRIES:
            self._set.pop(next(iter(self._set)))  # the oldest entry goes first
        self._set[item_id] = (mtime_ns, digest_of(data))
        self._dirty = True
        self._changed.set()

    def forget(self, item_id: str) -> None:
        """The item's text changed: the time set on the old one no longer applies."""
        if self._set.pop(item_id, None) is not None:
            self._dirty = True
            self._changed.set()

    async def run(self) -> None:
        """Write the file when times were set, after WRITE_DELAY of quiet; at the end (the
        mount's) once more, so nothing set is lost."""
        try:
            while True:
                await self._changed.wait()
                while True:
                    self._changed = trio.Event()
                    with trio.move_on_after(WRITE_DELAY):
                        await self._changed.wait()
                        continue  # more came: wait for quiet again
                    break
                await self._write()
        finally:
            with trio.CancelScope(shield=True):
                await self._write()

    async def _write(self) -> None:
        target = self.file
        if target is None or not self._dirty:
            return
        body = self._body()
        self._dirty = False
        self._changed = trio.Event()
        try:
            await trio.to_thread.run_sync(_write_atomically, target, body)
        except OSError as exc:
            self._dirty = True  # tried again with the next change, and at the end
            self._fail(f"cannot write {target}: {exc}")

    def _body(self) -> bytes:
        return json.dumps({k: [t, d] for k, (t, d) in self._set.items()}, separators=(",", ":")).encode()

    def _fail(self, message: str) -> None:
        self.failures += 1
        self.last_failure = message
        log.warning("item times: %s", message)


def _write_atomically(target: Path, body: bytes) -> None:
    paths.ensure(target.parent)
    temp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(temp, "wb", opener=paths.private_opener) as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temp, target)
