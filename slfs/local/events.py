"""What happened, kept for people and tools: the event stream and a rotated JSON-lines log in the
state directory that outlives the daemon (the runtime logs are model/runtime.py's).

Subscribers get events through memory channels; a subscriber that does not keep up is dropped
rather than allowed to block the session's reader.

`append` runs in the session's reader and never touches the disk: the log file is written by a
logging.handlers.QueueListener thread through a RotatingFileHandler. A failing disk (full, read-only,
no permission) costs only the file's lines: it is logged, counted in `write_errors` and described by
`last_write_error`, and the file is tried again with the next event.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import queue
import sys
import threading
import time
from logging.handlers import QueueListener, RotatingFileHandler
from pathlib import Path
from typing import Any

import trio

from .. import paths
from ..event_types import SlfsEvent

log = logging.getLogger(__name__)

MAX_EVENTS = 20000
ROTATE_BYTES = 5 * 1024 * 1024
ROTATE_KEEP = 3
MAX_PENDING = 10000  # lines waiting for the writer thread; more are dropped (and counted)


class _Mark(logging.LogRecord):
    """Not a line: set when the writer reaches it (flush)."""

    def __init__(self) -> None:
        super().__init__("slfs.events", logging.INFO, "", 0, "", None, None)
        self.done = threading.Event()


class _EventFile(RotatingFileHandler):
    """The JSON-lines file (events-KEY.jsonl, .1 to .3 at 5 MiB), written in the listener's thread."""

    def __init__(self, path: Path, owner: EventLog) -> None:
        super().__init__(path, maxBytes=ROTATE_BYTES, backupCount=ROTATE_KEEP, encoding="utf-8", delay=True)
        self.owner = owner

    def _open(self) -> Any:
        os.makedirs(os.path.dirname(self.baseFilename), mode=0o700, exist_ok=True)
        # Made 0600 first (super() would open it with the umask's mode): the events hold in-world
        # names, chat and paths.
        os.close(paths.private_opener(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND))
        stream = super()._open()
        try:
            # A line cut short (a full disk, a crash) must not swallow the next one.
            with open(self.baseFilename, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                if size:
                    f.seek(size - 1)
                    if f.read(1) != b"\n":
                        stream.write("\n")
        except BaseException:
            stream.close()
            raise
        return stream

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record, _Mark):
            record.done.set()
            return
        before = self.owner.write_errors
        super().emit(record)
        if self.owner.write_errors == before:
            self.owner._write_ok()

    def handleError(self, record: logging.LogRecord) -> None:
        # Called inside the failed emit's except: count it, and reopen the file next time.
        exc = sys.exc_info()[1]
        self.owner._write_failed(str(exc) or type(exc).__name__)
        stream, self.stream = self.stream, None  # type: ignore[assignment]
        if stream is not None:
            try:
                stream.close()
            except (OSError, ValueError):
                pass


class EventLog:
    def __init__(self, log_path: Path | None) -> None:
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_EVENTS)
        # Each event encoded once: `.slfs/events` is re-read on every poll of tail -f.
        self._lines: collections.deque[bytes] = collections.deque(maxlen=MAX_EVENTS)
        self.seq = 0
        self.log_path = log_path
        self._subscribers: list[trio.MemorySendChannel[dict[str, Any]]] = []
        # Lines the log file did not get, and why the last one did not ("" if none): for the status.
        self.write_errors = 0
        self.last_write_error = ""
        self._failing = False
        self._lock = threading.Lock()
        self._queue: queue.Queue[logging.LogRecord | None] | None = None
        self._writer: QueueListener | None = None
        if log_path is not None:
            self._queue = queue.Queue(MAX_PENDING)
            self._file = _EventFile(log_path, self)
            self._writer = QueueListener(self._queue, self._file)
            self._writer.start()

    def append(self, event: dict[str, Any]) -> None:
        self.seq += 1
        event = {"seq": self.seq, **event}
        self.events.append(event)
        text = json.dumps(event, default=str)
        self._lines.append(text.encode() + b"\n")
        self._write(text)
        for chan in list(self._subscribers):
            try:
                chan.send_nowait(event)
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                self._subscribers.remove(chan)
                chan.close()

    # Service (model/services.py): the workspace's events come in here.

    def on_event(self, event: SlfsEvent) -> None:
        self.append(event.to_json())

    def status(self) -> dict[str, Any]:
        return {"event_log_errors": self.write_errors, "event_log_error": self.last_write_error or "none"}

    def _write(self, text: str) -> None:
        """Hand the line to the writer thread; never blocks."""
        if self._queue is None or self._writer is None:
            return
        record = logging.LogRecord("slfs.events", logging.INFO, "", 0, text, None, None)
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self._write_failed(f"the writer is {MAX_PENDING} lines behind; dropping lines")

    def _write_failed(self, why: str) -> None:
        with self._lock:
            self.write_errors += 1
            message = f"cannot write the event log {self.log_path}: {why}"
            first = not self._failing or message != self.last_write_error
            self._failing = True
            self.last_write_error = message
        if first:  # once per kind of failure, not once per line
            log.error("%s (events are still kept in memory and in .slfs/events)", message)

    def _write_ok(self) -> None:
        if self._failing:
            with self._lock:
                self._failing = False
            log.info("the event log %s is written again (%d line(s) were lost)", self.log_path, self.write_errors)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait (blocking; for tests and shutdown) until the lines appended so far were written or failed."""
        if self._queue is None:
            return True
        mark = _Mark()
        try:
            self._queue.put(mark, timeout=timeout)
        except queue.Full:
            return False
        return mark.done.wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Write what is pending (at most `timeout` seconds) and stop the writer thread."""
        writer, self._writer = self._writer, None
        if writer is None or self._queue is None:
            return
        try:
            self._queue.put(None, timeout=timeout)  # the listener's sentinel
        except queue.Full:
            pass
        thread = writer._thread
        if thread is not None:
            thread.join(timeout)
        if thread is None or not thread.is_alive():
            self._file.close()

    def since(self, seq: int = 0, seconds: float | None = None) -> list[dict[str, Any]]:
        cutoff = time.time() - seconds if seconds is not None else None
        return [e for e in self.events if e["seq"] > seq and (cutoff is None or e["time"] >= cutoff)]

    def subscribe(self) -> trio.MemoryReceiveChannel[dict[str, Any]]:
        send, recv = trio.open_memory_channel[dict[str, Any]](1000)
        self._subscribers.append(send)
        return recv

    def render(self) -> bytes:
        return b"".join(self._lines)
