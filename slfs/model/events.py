"""What happened, kept for people and tools: the event stream, per-script runtime logs, and a
rotated JSON-lines log in the state directory that outlives the daemon.

The viewer buffers no runtime output (a line spoken while nothing listens is lost), so slfs keeps
it. Subscribers get events through memory channels; a subscriber that does not keep up is dropped
rather than allowed to block the session's reader.
"""

from __future__ import annotations

import collections
import json
import logging
import time
from pathlib import Path
from typing import Any

import trio

log = logging.getLogger(__name__)

MAX_EVENTS = 20000
MAX_LOG_LINES = 2000
ROTATE_BYTES = 5 * 1024 * 1024
ROTATE_KEEP = 3


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


class EventLog:
    def __init__(self, log_path: Path | None) -> None:
        self.events: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_EVENTS)
        # Each event encoded once: `.slfs/events` is re-read on every poll of tail -f.
        self._lines: collections.deque[bytes] = collections.deque(maxlen=MAX_EVENTS)
        self.seq = 0
        self.log_path = log_path
        self.script_logs: dict[str, collections.deque[str]] = {}
        self._subscribers: list[trio.MemorySendChannel[dict[str, Any]]] = []

    def append(self, event: dict[str, Any]) -> None:
        self.seq += 1
        event = {"seq": self.seq, **event}
        self.events.append(event)
        self._lines.append(json.dumps(event, default=str).encode() + b"\n")
        if event.get("type") in ("runtime.debug", "runtime.error") and event.get("item_id"):
            self._script_line(event)
        self._write(event)
        for chan in list(self._subscribers):
            try:
                chan.send_nowait(event)
            except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
                self._subscribers.remove(chan)
                chan.close()

    def _script_line(self, event: dict[str, Any]) -> None:
        lines = self.script_logs.setdefault(event["item_id"], collections.deque(maxlen=MAX_LOG_LINES))
        text = str(event.get("message", "")).replace("\n", " ")
        if event["type"] == "runtime.error":
            where = f" (line {event['line']})" if event.get("line") else ""
            detail = event.get("error") or text
            lines.append(f"{_stamp(event['time'])} error{where}: {detail}")
            for frame in event.get("stack") or []:
                lines.append(f"    {frame}")
        else:
            lines.append(f"{_stamp(event['time'])} {event.get('channel', 'debug')}: {text}")

    def _write(self, event: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            if self.log_path.exists() and self.log_path.stat().st_size > ROTATE_BYTES:
                for i in range(ROTATE_KEEP - 1, 0, -1):
                    older = self.log_path.with_name(f"{self.log_path.name}.{i}")
                    if older.exists():
                        older.rename(self.log_path.with_name(f"{self.log_path.name}.{i + 1}"))
                self.log_path.rename(self.log_path.with_name(f"{self.log_path.name}.1"))
            with self.log_path.open("ab") as f:
                f.write(self._lines[-1])
        except OSError as exc:
            log.warning("cannot write the event log %s: %s", self.log_path, exc)
            self.log_path = None

    def since(self, seq: int = 0, seconds: float | None = None) -> list[dict[str, Any]]:
        cutoff = time.time() - seconds if seconds is not None else None
        return [e for e in self.events if e["seq"] > seq and (cutoff is None or e["time"] >= cutoff)]

    def subscribe(self) -> trio.MemoryReceiveChannel[dict[str, Any]]:
        send, recv = trio.open_memory_channel[dict[str, Any]](1000)
        self._subscribers.append(send)
        return recv

    def render(self) -> bytes:
        return b"".join(self._lines)

    def script_log(self, item_id: str) -> bytes:
        lines = self.script_logs.get(item_id)
        return ("\n".join(lines) + "\n").encode("utf-8", "replace") if lines else b""
