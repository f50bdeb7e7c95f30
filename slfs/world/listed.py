"""Object folders shown from the viewer's object.list but not built yet: what the listing said of
each, and the object each of its prims' and items' UUIDs is listed in (to build the right one when
an event names one of them). Building is the tree's (world/object_records.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..protocol.types import PublishedObject
from .nodes import Folder


class Listing(Protocol):
    """One object of an object.list, its head decoded and the rest on demand (the session's
    ListedObject; a protocol here so that the tree needs nothing of the session layer)."""

    @property
    def head(self) -> PublishedObject: ...
    @property
    def full(self) -> Callable[[], PublishedObject]: ...
    @property
    def prims(self) -> int: ...
    @property
    def items(self) -> int: ...
    @property
    def ids(self) -> tuple[str, ...]: ...
    @property
    def object_id(self) -> str: ...


class Listed:
    def __init__(self) -> None:
        self._listed: dict[str, Listing] = {}  # object id -> its listing
        self._listed_in: dict[str, str] = {}  # a listed prim's or item's UUID -> its object's id

    def __bool__(self) -> bool:
        return bool(self._listed)

    def pending(self) -> list[str]:
        """The ids of the objects listed and not built."""
        return list(self._listed)

    def holder(self, uuid: str) -> str | None:
        """The object not built yet whose listing names `uuid` (a prim's or an item's)."""
        oid = self._listed_in.get(uuid)
        return oid if oid is not None and oid in self._listed else None

    @property
    def item_count(self) -> int:
        """How many items the listings of the objects not built yet say they hold."""
        return sum(listed.items for listed in self._listed.values())

    def list(self, folder: Folder, listed: Listing, expander: Callable[[Folder], None]) -> None:
        """`folder` is shown unbuilt, as `listed` says (a listing it had before is replaced);
        `expander` builds it when first read."""
        if not folder.built:
            self.unlist(folder)
        self._listed[folder.object_id] = listed
        for uuid in listed.ids:
            self._listed_in[uuid] = folder.object_id
        folder.expand_with(expander)
        folder.listed_prims = listed.prims

    def unlist(self, folder: Folder) -> Listing:
        listed = self._listed.pop(folder.object_id)
        for uuid in listed.ids:
            if self._listed_in.get(uuid) == folder.object_id:
                del self._listed_in[uuid]
        folder.expand_with(None)
        return listed
