"""What the session layer tells the layer above it."""

from __future__ import annotations

from typing import Any, Protocol

import attrs

from slfs.protocol.types import (
    CompilationResult,
    ObjectUnpublish,
    ObjectUpdate,
    PublishedObject,
    RuntimeDebug,
    RuntimeError_,
    ScriptUnsubscribe,
    SyntaxChange,
)


@attrs.frozen
class SessionInfo:
    viewer_name: str
    viewer_version: str
    agent_id: str
    agent_name: str
    syntax_id: str
    features: dict[str, bool]
    endpoint: str
    # False when the viewer has no object.list (G1): the objects passed to on_connected are then
    # not what it publishes, only that nothing was listed.
    lists_objects: bool = True


class SessionListener(Protocol):
    """Implemented by the model layer (model.workspace.Workspace). Every `on_` method is
    synchronous, quick, and must not block; they are called from the session's reader task in the
    order the viewer's frames arrived.

    `load_objects` is awaited (shielded from cancellation) with a large object.list before
    on_connected gets the same list; it may apply it in steps with checkpoints between them (or do
    nothing: on_connected follows). No later frame is handled until it returns."""

    async def load_objects(self, objects: list[PublishedObject]) -> None: ...
    def on_connected(self, info: SessionInfo, objects: list[PublishedObject]) -> None: ...
    def on_disconnected(self, reason: str) -> None: ...
    def on_publish(self, obj: PublishedObject) -> None: ...
    def on_unpublish(self, msg: ObjectUnpublish) -> None: ...
    def on_update(self, msg: ObjectUpdate) -> None: ...
    def on_runtime_debug(self, msg: RuntimeDebug) -> None: ...
    def on_runtime_error(self, msg: RuntimeError_) -> None: ...
    def on_syntax_change(self, msg: SyntaxChange) -> None: ...
    def on_compiled(self, msg: CompilationResult) -> None: ...
    def on_unsubscribe(self, msg: ScriptUnsubscribe) -> None: ...
    def on_editor_command(self, command: str, params: dict[str, Any]) -> None: ...
    def on_state(self, state: str, detail: str) -> None: ...


class NullListener:
    """A listener that ignores everything (handy for tools and tests)."""

    async def load_objects(self, objects: list[PublishedObject]) -> None:
        pass

    def on_connected(self, info: SessionInfo, objects: list[PublishedObject]) -> None:
        pass

    def on_disconnected(self, reason: str) -> None:
        pass

    def on_publish(self, obj: PublishedObject) -> None:
        pass

    def on_unpublish(self, msg: ObjectUnpublish) -> None:
        pass

    def on_update(self, msg: ObjectUpdate) -> None:
        pass

    def on_runtime_debug(self, msg: RuntimeDebug) -> None:
        pass

    def on_runtime_error(self, msg: RuntimeError_) -> None:
        pass

    def on_syntax_change(self, msg: SyntaxChange) -> None:
        pass

    def on_compiled(self, msg: CompilationResult) -> None:
        pass

    def on_unsubscribe(self, msg: ScriptUnsubscribe) -> None:
        pass

    def on_editor_command(self, command: str, params: dict[str, Any]) -> None:
        pass

    def on_state(self, state: str, detail: str) -> None:
        pass
