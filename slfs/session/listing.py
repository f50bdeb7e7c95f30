"""The viewer's object.list answer, decoded in two parts: each object's own fields at once, its
inventory and prims (nearly all of a large answer's bytes) when the model first needs them.

A 100,000-item world's answer took about a second to decode into records and build into the tree
(issue 23's profile), most of it for objects nobody opens in that session. The objects' own fields
are what the mount's root shows; they are decoded now, and a malformed one fails the whole answer
as before. Each object's whole record is decoded by its ListedObject's `full()`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from slfs.protocol.types import ObjectListResponse, PublishedObject

from .listener import ListedObject

T = TypeVar("T")

WHAT = "object.list result"
# The fields of an object decoded later: its inventory, and its prims with theirs.
LATER = frozenset({"inventory", "linked_objects"})

# (payload class, data, what it is for the log, where it sits in the answer) -> the payload.
Decode = Callable[[type[T], Any, str, str], T]


def decode_listing(decode: Decode[Any], result: Any) -> list[ListedObject]:
    """The answer's objects, their own fields decoded (ProtocolError as decode raises it)."""
    raw = result.get("objects") if isinstance(result, dict) else None
    if not isinstance(raw, list):
        decode(ObjectListResponse, result, WHAT, "")  # the error the whole shape gives
        return []
    heads_result = {**result, "objects": [_head(o) for o in raw]}
    heads: list[PublishedObject] = decode(ObjectListResponse, heads_result, WHAT, "").objects
    # A bad element fails the whole list, so the decoded heads are the raw objects, in order.
    out = []
    for i, (head, o) in enumerate(zip(heads, raw, strict=True)):
        prims, items, ids = _contents(o)
        out.append(ListedObject(head=head, full=partial(decode, PublishedObject, o, WHAT, f"objects[{i}]"),
                                prims=prims, items=items, ids=ids))
    return out


def _head(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    return {k: v for k, v in obj.items() if k not in LATER}


def _contents(obj: dict[str, Any]) -> tuple[int, int, tuple[str, ...]]:
    """How many prims and inventory items the answer lists for the object (before decoding), and
    the UUIDs they are listed with."""
    ids: list[str] = []
    links = obj.get("linked_objects")
    links = [link for link in links if isinstance(link, dict)] if isinstance(links, list) else []
    items = 0
    for holder in (obj, *links):
        inventory = holder.get("inventory")
        if isinstance(inventory, list):
            items += len(inventory)
            ids += [e["item_id"] for e in inventory if isinstance(e, dict) and isinstance(e.get("item_id"), str)]
    ids += [link["link_id"] for link in links if isinstance(link.get("link_id"), str)]
    return len(links), items, tuple(ids)
