"""How in-world names become file names, and back.

Rules (documented in slfs(5)):
- `/` in any name is shown as U+2215 DIVISION SLASH and mapped back when a name is sent.
- Scripts get `.lsl` (subtype 0) or `.luau` (subtype 1); notecards keep their name verbatim.
- A child prim is a directory named `<link name>@<first 8 hex digits of its UUID>`: unique among
  siblings however many share a name, and unchanged when link numbers move.
- When several entries of one folder want the same file name (two objects called "Box", a notecard
  `x.lsl` beside a script `x`, names differing only in `/` versus U+2215), the one whose UUID sorts
  first keeps the plain name and the others get `@<uuid prefix>` before their extension. The tag is
  derived from the UUID alone, so it is deterministic and never moves when unrelated entries come and
  go; a tagged name maps back to its item through the tag.
- Object folders (the root's entries) keep the name they were shown under while they stay
  published under the same in-world name (layout.py `pinned`): resolve names the others around them.
- Names the file system cannot hold (empty, `.`, `..`, `.slfs`, longer than 255 bytes) are tagged too.
- Control characters cannot reach a terminal through a name (`find`, `grep -r`, a shell glob print
  names raw): C0 controls are shown as their Control Pictures (U+2400-U+241F, ESC as U+241B), DEL as
  U+2421 and C1 controls as U+FFFD. The viewer itself strips such characters from inventory names
  (LLInventoryObject::correctInventoryName replaces non-standard ASCII with a space:
  secondlife/viewer indra/llinventory/llinventory.cpp); only a hostile peer sends them.
- Names are data from the network: a lone surrogate (the JSON escape `"\ud800"`) cannot be encoded
  as a file name, so what cannot be encoded is shown as U+FFFD; a name that then collides is tagged
  like any other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Protocol

from ..protocol.ids import name_safe_id

SLASH_STANDIN = "\u2215"
CONTROL_DIR = ".slfs"
SCRIPT_EXTENSIONS = {".lsl": 0, ".luau": 1}
_TAG_LEN = 8
_RESERVED = {"", ".", "..", CONTROL_DIR}
MAX_NAME_BYTES = 255
# Limits the viewer puts on inventory names.
MAX_SL_NAME_BYTES = 63


_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROLS = re.compile("[\x01-\x1f\x7f-\x9f]")


def _picture(m: re.Match[str]) -> str:
    c = ord(m.group())
    return chr(0x2400 + c) if c < 0x20 else "\u2421" if c == 0x7F else "\ufffd"


def encodable(name: str) -> str:
    """`name` with every code point UTF-8 cannot encode (lone surrogates) replaced by U+FFFD."""
    if name.isascii():  # O(1) in CPython; almost every name
        return name
    return _SURROGATE.sub("\ufffd", name)


def to_fs(name: str) -> str:
    """An in-world name as it appears on disk (without extension or tag)."""
    name = encodable(name)
    if "/" in name:
        name = name.replace("/", SLASH_STANDIN)
    if "\0" in name:
        name = name.replace("\0", " ")
    if not name.isprintable() and _CONTROLS.search(name):  # isprintable: C speed, every name
        name = _CONTROLS.sub(_picture, name)
    return name


def to_sl(name: str) -> str:
    """A name from disk as it is sent to the viewer."""
    return name.replace(SLASH_STANDIN, "/")


def extension_for(item_type: str, subtype: int | None) -> str:
    if item_type != "script":
        return ""
    return ".luau" if subtype == 1 else ".lsl"


def item_file_name(name: str, item_type: str, subtype: int | None) -> str:
    return to_fs(name) + extension_for(item_type, subtype)


def tag_of(uuid: str, length: int = _TAG_LEN) -> str:
    """The tag: the UUID's own hex digits, or a digest of an id that cannot stand in a name (data
    from the viewer: `../../x` must never reach a file name or an overlay path)."""
    return name_safe_id(uuid)[:length]


def tagged(base: str, ext: str, uuid: str, length: int = _TAG_LEN) -> str:
    return f"{base}@{tag_of(uuid, length)}{ext}"


def prim_dir_name(link_name: str, prim_id: str) -> str:
    return tagged(to_fs(link_name) or "prim", "", prim_id)


def split_ext(file_name: str) -> tuple[str, str]:
    """Split a file name into (stem, script extension); the extension is '' for notecards."""
    for ext in SCRIPT_EXTENSIONS:
        if file_name.endswith(ext) and len(file_name) > len(ext):
            return file_name[: -len(ext)], ext
    return file_name, ""


_TAG_RE = re.compile(r"^(?P<stem>.*)@(?P<tag>[0-9a-f]{8,32})$")


def strip_tag(stem: str) -> tuple[str, str | None]:
    """`Box@1a2b3c4d` -> ('Box', '1a2b3c4d'); an untagged stem -> (stem, None)."""
    m = _TAG_RE.match(stem)
    if not m:
        return stem, None
    return m.group("stem"), m.group("tag")


def fits_fs(name: str) -> bool:
    if name in _RESERVED:
        return False
    # A code point is at most 4 bytes in UTF-8 (surrogateescape: 1): short names need no encoding.
    return len(name) * 4 <= MAX_NAME_BYTES or len(name.encode("utf-8", "surrogateescape")) <= MAX_NAME_BYTES


class Named(Protocol):
    """What the collision resolver needs of an entry."""

    @property
    def uuid(self) -> str: ...
    @property
    def wanted_base(self) -> str: ...   # file name without extension
    @property
    def wanted_ext(self) -> str: ...
    @property
    def always_tagged(self) -> bool: ...


def resolve(entries: Iterable[Named], reserved: Iterable[str] = ()) -> dict[str, Named]:
    """Give every entry a distinct file name; returns name -> entry.

    Always-tagged entries (child prims) are placed first so an item can never take their name.
    Among entries wanting the same name, the lowest UUID keeps it; the rest are tagged.
    """
    entries, reserved = list(entries), tuple(reserved)  # each is read twice when the shortcut fails
    plain = _resolve_plain(entries, reserved)
    return plain if plain is not None else resolve_tagging(entries, reserved)


def resolve_tagging(entries: Iterable[Named], reserved: Iterable[str] = ()) -> dict[str, Named]:
    """resolve, the whole way (any entry may be tagged)."""
    out: dict[str, Named] = {}
    taken = set(reserved)
    ordered = sorted(entries, key=_by_uuid)
    wanted: dict[str, list[tuple[Named, str, str]]] = {}
    for e in ordered:
        base, ext = e.wanted_base, e.wanted_ext
        if e.always_tagged:
            _place(out, taken, e, base, ext, tag_first=True)
        else:
            wanted.setdefault(base + ext, []).append((e, base, ext))
    for plain, group in sorted(wanted.items()):
        forced = not fits_fs(plain)
        for i, (e, base, ext) in enumerate(group):
            _place(out, taken, e, base, ext, tag_first=forced or i > 0)
    return out


def _resolve_plain(entries: list[Named], reserved: tuple[str, ...]) -> dict[str, Named] | None:
    """What resolve gives when every entry keeps its plain name (they are all distinct, free and
    fit; no always-tagged entry): almost every folder, and every one of a 100,000-item load. The
    same listing, in the same (name) order, without sorting by UUID; None when some entry is tagged."""
    by_name: dict[str, Named] = {}
    for e in entries:
        if e.always_tagged:
            return None
        name = e.wanted_base + e.wanted_ext
        if name in by_name or not fits_fs(name):
            return None
        by_name[name] = e
    if reserved and not by_name.keys().isdisjoint(reserved):
        return None
    return {name: by_name[name] for name in sorted(by_name)}


def _by_uuid(e: Named) -> str:
    return e.uuid


def _place(out: dict[str, Named], taken: set[str], e: Named, base: str, ext: str, *, tag_first: bool) -> None:
    if not tag_first:  # the plain name, when free: most entries (no tagged variant is computed)
        name = base + ext
        if name not in taken and fits_fs(name):
            taken.add(name)
            out[name] = e
            return
    short = _shorten(base, ext)
    length = _TAG_LEN
    while length <= 32:
        name = tagged(short, ext, e.uuid, length)
        if name not in taken and fits_fs(name):
            taken.add(name)
            out[name] = e
            return
        length += 8
    raise ValueError(f"cannot name entry {e.uuid}")  # two entries with one UUID: a viewer bug


def _shorten(base: str, ext: str) -> str:
    """Keep tagged names within NAME_MAX (in-world names are short; this guards odd payloads)."""
    budget = MAX_NAME_BYTES - len(ext.encode()) - 34
    raw = base.encode("utf-8", "surrogateescape")
    if len(raw) <= budget:
        return base
    return raw[:budget].decode("utf-8", "ignore")
