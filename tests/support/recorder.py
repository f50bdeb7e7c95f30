"""A listener that records every callback, for the session tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from slfs.session import SessionInfo


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.states: list[tuple[str, str]] = []
        self.raise_in: set[str] = set()

    def _add(self, name: str, value: Any) -> None:
        self.events.append((name, value))
        if name in self.raise_in:
            raise RuntimeError(f"listener failure in {name}")

    def names(self) -> list[str]:
        return [n for n, _ in self.events]

    def of(self, name: str) -> list[Any]:
        return [v for n, v in self.events if n == name]

    async def wait_for(self, pred: Callable[[], bool], timeout: float = 5.0) -> None:
        with trio.fail_after(timeout):
            while not pred():
                await trio.sleep(0.005)

    async def load_objects(self, objects: list[Any]) -> None:
        pass  # on_connected gets the same list

    def on_connected(self, info: SessionInfo, objects: list[Any]) -> None:
        self._add("connected", (info, objects))

    def on_disconnected(self, reason: str) -> None:
        self._add("disconnected", reason)

    def on_publish(self, obj: Any) -> None:
        self._add("publish", obj)

    def on_unpublish(self, msg: Any) -> None:
        self._add("unpublish", msg)

    def on_update(self, msg: Any) -> None:
        self._add("update", msg)

    @property
    def runtime(self) -> Recorder:
        return self

    def on_runtime_debug(self, msg: Any) -> None:
        self._add("debug", msg)

    def on_runtime_error(self, msg: Any) -> None:
        self._add("error", msg)

    def on_syntax_change(self, msg: Any) -> None:
        self._add("syntax", msg)

    def on_compiled(self, msg: Any) -> None:
        self._add("compiled", msg)

    def on_unsubscribe(self, msg: Any) -> None:
        self._add("unsubscribe", msg)

    def on_editor_command(self, command: str, params: dict[str, Any]) -> None:
        self._add("command", (command, params))

    def on_state(self, state: str, detail: str) -> None:
        self.states.append((state, detail))
        self._add("state", state)
