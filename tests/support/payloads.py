"""Protocol payloads for model tests: a published object, a script entry, an object.update."""

from __future__ import annotations

from typing import Any

from slfs.protocol import from_json
from slfs.protocol import types as t


def obj(oid: str = "o1", name: str = "Box", inventory: list[dict[str, Any]] | None = None,
        links: list[dict[str, Any]] | None = None) -> t.PublishedObject:
    data: dict[str, Any] = {"object_id": oid, "object_name": name, "inventory": inventory or []}
    if links is not None:
        data["linked_objects"] = links
    return from_json(t.PublishedObject, data)


def script(iid: str, name: str, revision: int | None = None, **kw: Any) -> dict[str, Any]:
    d = {"item_id": iid, "name": name, "type": "script", "subtype": 0, **kw}
    if revision is not None:
        d["revision"] = revision
    return d


def update(**kw: Any) -> t.ObjectUpdate:
    return from_json(t.ObjectUpdate, {"object_id": "o1", **kw})
