"""A bounded wait for a mount's events after a cursor, on a connection of its own, that another
thread can end at once (`cancel`): what `slfs mcp` waits with (slfs_wait, the runtime output after
a save), so that a client's cancellation never leaves a thread blocked on the daemon."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from ..event_types import SlfsEvent, event_from_json
from . import mounts
from .client_error import ClientError, ShutDown
from .connection import ControlClient

Want = Callable[[SlfsEvent], bool]
DRAIN = 0.05  # after the first match, how long to take events already on their way


@attrs.frozen
class Collected:
    """The events that matched, the cursor to go on from (the last event seen), and whether the
    wait ended because it was cancelled."""

    events: list[SlfsEvent]
    cursor: int
    cancelled: bool = False


class EventWait:
    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry
        self._lock = threading.Lock()
        self._conn: ControlClient | None = None
        self._cancelled = False

    def cancel(self) -> None:
        """End a collect() running in another thread (its socket is shut down under it)."""
        with self._lock:
            self._cancelled = True
            conn = self._conn
        if conn is not None:
            conn.close()

    def collect(self, since: int, timeout: float, want: Want, *, first: bool = False,
                limit: int = 200) -> Collected:
        """Events after `since` that `want` accepts, for `timeout` s (or, with `first`, until the
        first of them and those right behind it), at most `limit`."""
        deadline = time.monotonic() + max(0.0, timeout)
        found: list[SlfsEvent] = []
        cursor = since
        conn = mounts.connect(self.entry)
        with self._lock:
            if self._cancelled:
                conn.close()
                return Collected([], cursor, True)
            self._conn = conn
        try:
            conn.request("subscribe", since=since, _timeout=max(1.0, timeout))
            while len(found) < limit:
                left = deadline - time.monotonic()
                if first and found:
                    left = min(left, DRAIN)
                if left <= 0:
                    break
                try:
                    frame = conn.read_frame(left)
                except ShutDown:
                    raise
                except ClientError as exc:
                    if exc.code == "ETIMEDOUT":
                        break
                    raise
                if frame.get("type") == "subscription_ended":
                    break  # too far behind: what we have, and the cursor to go on from
                raw = frame.get("event")
                if frame.get("type") != "event" or not isinstance(raw, dict):
                    continue
                event = event_from_json(raw)
                if event.seq is not None and event.seq > cursor:
                    cursor = event.seq
                if want(event):
                    found.append(event)
        except ClientError:
            if self._cancelled:  # the socket was shut down under us: that is the cancel
                return Collected(found, cursor, True)
            raise
        finally:
            with self._lock:
                self._conn = None
            conn.close()
        return Collected(found, cursor, self._cancelled)
