"""The one way the layers above hear from the workspace: services attached to it.

A service is told every event (connected, publish, compile, ...) and adds its lines to
`.slfs/status`. The daemon builds each service once, with its collaborators as constructor
arguments, and attaches it; nothing is patched afterwards.
"""

from __future__ import annotations

from typing import Any, Protocol


class Service(Protocol):
    def on_event(self, event: dict[str, Any]) -> None:
        """Called on the trio thread for every event; must not block or await."""

    def status(self) -> dict[str, Any]:
        """Lines for `.slfs/status` (key -> value)."""
