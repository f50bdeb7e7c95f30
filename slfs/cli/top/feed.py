"""What `slfs top` reads, all through the client layer: a snapshot (status, the recursive listing,
the events kept so far) and, for the live view, background threads that follow the events and ask
the listing and status again when told to, handing everything to the view through one queue."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from ...client import ClientError, MountClient, mounts
from ...client.connection import ControlClient
from .model import TopModel

STATUS_EVERY = 2.0  # the connection state is asked this often (it changes without an event too)
RESYNC_EVERY = 30.0  # and the listing, for what no event says (an item the viewer added or renamed)
RETRY = 1.0  # a lost event stream is subscribed again after this


def snapshot(client: MountClient) -> TopModel:
    """A model of the mount now: its status and listing, and the runtime lines kept so far."""
    model = TopModel(client.mountpoint)
    model.set_status(client.status())
    model.load(client.listing(recursive=True).get("entries", []))
    backlog = client.events(since=0)
    for e in backlog.events:
        model.apply(e, past=True)
    model.caught_up(backlog.cursor)
    return model


# ("event", e) | ("listing", entries) | ("status", data) | ("note", text) | ("lost", why) |
# ("restarted", pid) | what a command answers (app.py)
Message = tuple[str, Any]


class Feed:
    """The live view's background work. Each thread is a daemon thread: one blocked on the daemon
    never holds up `q` (stop() closes the event connection under it)."""

    def __init__(self, client: MountClient, cursor: int) -> None:
        self.client = client
        self.cursor = cursor
        self.out: queue.SimpleQueue[Message] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._want_listing = threading.Event()
        self._lock = threading.Lock()
        self._conn: ControlClient | None = None
        self._pid: Any = None  # the daemon's, from its ready frame

    def start(self) -> None:
        for target in (self._follow, self._poll):
            threading.Thread(target=target, name=f"top-{target.__name__}", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self._want_listing.set()
        with self._lock:
            conn = self._conn
        if conn is not None:
            conn.close()

    def resync(self) -> None:
        """Ask the listing again (soon: requests that come meanwhile are one)."""
        self._want_listing.set()

    def run(self, what: Callable[[], Message]) -> None:
        """A command (run, stop, reset, diag) in a thread of its own; its answer comes in the queue."""
        def go() -> None:
            try:
                self.out.put(what())
            except ClientError as exc:
                self.out.put(("note", exc.message))
        threading.Thread(target=go, name="top-command", daemon=True).start()

    def _follow(self) -> None:
        lost = False
        while not self._stop.is_set():
            try:
                conn = mounts.connect(self.client.entry)
                with self._lock:
                    self._conn = conn
                pid = conn.ready.get("pid")
                if self._pid is not None and pid != self._pid:
                    # Another daemon (the mount was made again): its events count from 1.
                    self.cursor = 0
                    self.out.put(("restarted", pid))
                self._pid = pid
                if lost:
                    self.out.put(("note", "the event stream is back"))
                    self._want_listing.set()  # what happened meanwhile
                    lost = False
                with conn:
                    for event in conn.events(since=self.cursor):
                        if event.seq is not None:
                            self.cursor = event.seq
                        self.out.put(("event", event))
                ended = "the mount's daemon closed the event stream"
            except ClientError as exc:
                ended = exc.message
            if self._stop.is_set():
                return
            if not lost:
                self.out.put(("lost", ended))
                lost = True
            self._stop.wait(RETRY)

    def _poll(self) -> None:
        last_listing = time.monotonic()
        while not self._stop.is_set():
            asked = self._want_listing.wait(STATUS_EVERY)
            if self._stop.is_set():
                return
            try:
                if asked or time.monotonic() - last_listing > RESYNC_EVERY:
                    self._want_listing.clear()
                    last_listing = time.monotonic()
                    self.out.put(("listing", self.client.listing(recursive=True).get("entries", [])))
                self.out.put(("status", self.client.status()))
            except ClientError as exc:
                self.out.put(("status", {"state": "unreachable", "state_detail": exc.message}))
