"""What the session layer tells the layer above it."""

from __future__ import annotations

from collections.abc import Callable
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


@attrs.frozen
class ListedObject:
    """One object of the viewer's object.list: its own fields decoded (`head`, whose inventory and
    prims are not), the rest when first needed. The inventories and prims are nearly all of a large
    answer's bytes, and most objects of a 100,000-item world are never opened in a session; each is
    decoded when its folder is first read (model.tree). `full()` decodes the whole object as sent
    (ProtocolError when that fails); `prims` and `items` are how many the answer lists of them, for
    a link count and a status line before that, and `ids` their UUIDs, for finding the object an
    event about one of them is about."""

    head: PublishedObject
    full: Callable[[], PublishedObject] = attrs.field(repr=False)
    prims: int = 0
    items: int = 0
    ids: tuple[str, ...] = attrs.field(default=(), repr=False)

    @property
    def object_id(self) -> str:
        return self.head.object_id


class RuntimeListener(Protocol):
    """Implemented by model.runtime.Runtime: a script's runtime output, as the viewer sends it."""

    def on_runtime_debug(self, msg: RuntimeDebug) -> None: ...
    def on_runtime_error(self, msg: RuntimeError_) -> None: ...


class SessionListener(Protocol):
    """Implemented by the model layer (model.workspace.Workspace). Every `on_` method is
    synchronous, quick, and must not block; they are called from the session's reader task in the
    order the viewer's frames arrived.

    `load_objects` is awaited (shielded from cancellation) with a large object.list before
    on_connected gets the same list; it may apply it in steps with checkpoints between them (or do
    nothing: on_connected follows). No later frame is handled until it returns."""

    async def load_objects(self, objects: list[ListedObject]) -> None: ...
    def on_connected(self, info: SessionInfo, objects: list[ListedObject]) -> None: ...
    def on_disconnected(self, reason: str) -> None: ...
    def on_publish(self, obj: PublishedObject) -> None: ...
    def on_unpublish(self, msg: ObjectUnpublish) -> None: ...
    def on_update(self, msg: ObjectUpdate) -> None: ...
    @property
    def runtime(self) -> RuntimeListener:
        """Who hears runtime output: its own listener, so the line's whole way is one module."""

    def on_syntax_change(self, msg: SyntaxChange) -> None: ...
    def on_compiled(self, msg: CompilationResult) -> None: ...
    def on_unsubscribe(self, msg: ScriptUnsubscribe) -> None: ...
    def on_editor_command(self, command: str, params: dict[str, Any]) -> None: ...
    def on_state(self, state: str, detail: str) -> None: ...


class NullListener:
    """A listener that ignores everything (handy for tools and tests)."""

    async def load_objects(self, objects: list[ListedObject]) -> None:
        pass

    def on_connected(self, info: SessionInfo, objects: list[ListedObject]) -> None:
        pass

    def on_disconnected(self, reason: str) -> None:
        pass

    def on_publish(self, obj: PublishedObject) -> None:
        pass

    def on_unpublish(self, msg: ObjectUnpublish) -> None:
        pass

    def on_update(self, msg: ObjectUpdate) -> None:
        pass

    @property
    def runtime(self) -> RuntimeListener:
        return self

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
