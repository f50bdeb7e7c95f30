"""The one way the layers above hear from the model: a fan-out passed to the workspace.

A service is told every event (connected, publish, compile, ...) and adds its lines to
`.slfs/status`; an invalidation listener (the fs layer's attribute and listing caches) is told each
report the tree makes, as it is made. build_services (daemon.py) builds the fan-out first, hands it
to the workspace, which emits through it, builds each service with its collaborators as constructor
arguments, and connects the fan-out to them once. The services need the workspace and the
workspace must emit to them: that one cycle is closed by `connect`, in build_services, before
anything runs; nothing is attached afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ..event_types import SlfsEvent
from ..world.tree import Invalidation

log = logging.getLogger(__name__)


class Service(Protocol):
    def on_event(self, event: SlfsEvent) -> None:
        """Called on the trio thread for every event; must not block or await."""

    def status(self) -> dict[str, Any]:
        """Lines for `.slfs/status` (key -> value)."""


class Broadcast:
    """Events and invalidation reports, each to every consumer connected (none until then)."""

    __slots__ = ("connected", "listeners", "services")

    def __init__(self) -> None:
        self.services: tuple[Service, ...] = ()
        # Told each invalidation report (PendingInvalidations.add reads the tuple: a warm listing
        # reports on every entry, so no call of ours stands between).
        self.listeners: tuple[Callable[[Invalidation], None], ...] = ()
        self.connected = False

    def connect(self, services: Iterable[Service], listeners: Iterable[Callable[[Invalidation], None]]) -> None:
        """Once, when the consumers exist (build_services)."""
        if self.connected:
            raise RuntimeError("a fan-out is connected once, when the mount's services are built")
        self.services, self.listeners, self.connected = tuple(services), tuple(listeners), True

    def event(self, event: SlfsEvent) -> None:
        for service in self.services:
            try:
                service.on_event(event)
            except Exception:
                log.exception("%s failed on the %s event", type(service).__name__, event.type)

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for service in self.services:
            out.update(service.status())
        return out
