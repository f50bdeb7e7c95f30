"""The ids the viewer sends (object, prim, item UUIDs; live-sync script ids), checked before they
become part of a name, a tag or a path.

An id is data from the peer: a misbehaving viewer can send `../../x` or `a/b` as an item_id. slfs
takes such an entry (liberal in what it accepts) but never puts the text in a file name, a tag or a
by-id link: there only an id of the viewer's own shapes is used (strict in what it acts on).
The shapes (viewer-source.md): LLUUID::asString, 8-4-4-4-12 lowercase hex; a live-sync script_id,
the md5 hex digest of "<prim uuid>_<item uuid>" (G1), 32 hex digits.
"""

from __future__ import annotations

import hashlib
import re

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX32 = re.compile(r"[0-9a-fA-F]{32}")
# What an id may hold to stand for itself in a name: ASCII letters and digits, and dashes.
_NAME_SAFE = re.compile(r"-*[0-9A-Za-z][0-9A-Za-z-]*")


def is_uuid(value: object) -> bool:
    """A UUID as the viewer writes one (8-4-4-4-12 hex digits, nothing around it)."""
    return isinstance(value, str) and _UUID.fullmatch(value) is not None


def is_script_id(value: object) -> bool:
    """A live-sync script id: a UUID, or 32 hex digits (G1's md5)."""
    return is_uuid(value) or (isinstance(value, str) and _HEX32.fullmatch(value) is not None)


def name_safe_id(value: str) -> str:
    """What stands for the id `value` in a name or tag, lowercase: the id's own letters and digits
    when it is made of those and dashes (a UUID: its hex digits), else a hex digest of it (so
    `../../x` or `a/b` never reaches a name)."""
    if _NAME_SAFE.fullmatch(value):
        return value.replace("-", "").lower()
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


__all__ = ["is_script_id", "is_uuid", "name_safe_id"]
