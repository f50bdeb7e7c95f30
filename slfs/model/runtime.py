"""A script's runtime output, the whole way from the viewer's notification to what the mount shows:
the session hands `runtime.debug` / `runtime.error` to `Runtime` (session/incoming.py), which finds
who spoke, emits the event and keeps the lines in the logs the fs layer shows (fs/control_dir.py:
`F.log`, `OBJECT/.slfs/log`, `MOUNT/.slfs/log`).

A line is attributed to an item, else to its object, else to the mount.

Each generation names the speaker differently (`../shared/research/viewer-source.md` §4, §7.7):
- G2/G4 send `item_id`, `prim_id`, the root as `object_id` and an `item` {root_id, prim_id,
  item_id, name, language};
- G3 sends the null UUID as `item_id` for a plain line (it cannot name the script), with the object;
- G1 sends only `script_id` (its live-sync subscription, the md5 of "<prim uuid>_<item uuid>"),
  `object_id` = the prim that spoke (not the root) and `object_name`.
So every reference is tried, none is required, and the null UUID means unknown. Nothing is dropped
for a field one generation omits: what names no item of the mount goes to its object's log, and
what names no object to the mount's.
"""

from __future__ import annotations

import collections
import hashlib
import time
from typing import Any, Protocol

import attrs

from .. import event_types as ev
from ..protocol.constants import NULL_UUID
from ..protocol.text import clean
from ..protocol.types import ItemRef, RuntimeDebug, RuntimeError_
from ..world.tree import Folder, Item, Tree
from .live import LiveScripts

ITEM, OBJECT, MOUNT = "item", "object", "mount"  # the scope of an attributed line

# Runtime output is other residents' text: each message is bounded (a script can say 16 MB in one
# event on viewers with no frame limit) and kept terminal-safe.
MAX_RUNTIME_TEXT = 16384
MAX_STACK = 64
MAX_LOG_LINES = 2000  # per log: each script's, each object's, the mount's

# The viewer buffers no runtime output (a line spoken while nothing listens is lost), so slfs keeps it.


class EventSink(Protocol):
    def event(self, event: ev.SlfsEvent) -> None: ...


class Runtime:
    """The session's listener for runtime output (session/listener.py, RuntimeListener)."""

    def __init__(self, tree: Tree, live: LiveScripts, sink: EventSink) -> None:
        self.tree = tree
        self.live = live
        self.sink = sink
        self.logs = RuntimeLogs()

    def on_runtime_debug(self, msg: RuntimeDebug) -> None:
        self._spoke(ev.RuntimeDebug(time=time.time(), **debug_fields(self.tree, self.live, msg)))

    def on_runtime_error(self, msg: RuntimeError_) -> None:
        self._spoke(ev.RuntimeError_(time=time.time(), **error_fields(self.tree, self.live, msg)))

    def _spoke(self, event: ev.RuntimeDebug | ev.RuntimeError_) -> None:
        self.logs.add(event)
        self.sink.event(event)


class RuntimeLogs:
    """The lines each log holds, the last MAX_LOG_LINES of each. A line goes to its script's log
    (`F.log`) and its object's (`OBJECT/.slfs/log`: every script of the object, each line naming
    it); naming no object of the mount, to the mount's (`MOUNT/.slfs/log`)."""

    def __init__(self) -> None:
        self.scripts: dict[str, collections.deque[str]] = {}
        self.objects: dict[str, collections.deque[str]] = {}
        self.mount: collections.deque[str] = collections.deque(maxlen=MAX_LOG_LINES)

    def add(self, event: ev.RuntimeDebug | ev.RuntimeError_) -> None:
        lines = _render(event)
        if event.scope == ITEM:
            _log_for(self.scripts, event.item_id).extend(lines)
        if event.scope in (ITEM, OBJECT):
            who = f"{event.item_name or event.object_name or '?'}: "
            _log_for(self.objects, event.object_id).extend(who + line for line in lines)
        else:
            who = f"{event.object_name or event.object_id or 'unknown object'}: "
            self.mount.extend(who + line for line in lines)

    def script_log(self, item_id: str) -> bytes:
        return _lines_text(self.scripts.get(item_id))

    def object_log(self, object_id: str) -> bytes:
        return _lines_text(self.objects.get(object_id))

    def mount_log(self) -> bytes:
        return _lines_text(self.mount)


def _log_for(logs: dict[str, collections.deque[str]], key: str) -> collections.deque[str]:
    return logs.setdefault(key, collections.deque(maxlen=MAX_LOG_LINES))


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) + f".{int(t * 1000) % 1000:03d}"


def _render(event: ev.RuntimeDebug | ev.RuntimeError_) -> list[str]:
    # The texts were made terminal-safe with the event (debug_fields, error_fields); lines stay lines.
    text = event.message.replace("\n", " ")
    stamp = _stamp(event.time or time.time())
    if not isinstance(event, ev.RuntimeError_):
        return [f"{stamp} {event.channel}: {text}"]
    where = f" (line {event.line})" if event.line else ""
    return [f"{stamp} error{where}: {event.error or text}"] + [f"    {frame}" for frame in event.stack]


def _lines_text(lines: collections.deque[str] | None) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8", "replace") if lines else b""


@attrs.frozen
class Attribution:
    scope: str
    item: Item | None = None
    obj: Folder | None = None


def _known(uuid: Any) -> str | None:
    if not isinstance(uuid, str) or not uuid:
        return None
    uuid = uuid.lower()
    return None if uuid == NULL_UUID else uuid


def script_id_of(item: Item) -> str | None:
    """The live-sync script_id the viewer gives a script: md5 of "<prim uuid>_<item uuid>"."""
    if item.folder is None:
        return None
    return hashlib.md5(f"{item.folder.uuid.lower()}_{item.uuid.lower()}".encode()).hexdigest()


def attribute(tree: Tree, live: LiveScripts, *, object_id: Any, prim_id: Any, item_id: Any, script_id: Any,
              ref: ItemRef | None) -> Attribution:
    def item_named(uuid: str | None) -> Item | None:
        node = tree.find(uuid) if uuid else None
        return node if isinstance(node, Item) and node.attached and node.is_script else None

    def folder_named(uuid: str | None) -> Folder | None:
        node = tree.find(uuid) if uuid else None
        return node if isinstance(node, Folder) and node.attached else None

    for uuid in (_known(item_id), _known(ref.item_id) if ref else None):
        found = item_named(uuid)
        if found is not None:
            return Attribution(ITEM, found, found.folder.object_folder if found.folder else None)
    prims = [f for f in (folder_named(_known(u)) for u in (
        prim_id, ref.prim_id if ref else None, object_id, ref.root_id if ref else None)) if f is not None]
    sid = script_id.lower() if isinstance(script_id, str) and script_id else None
    if sid is not None:
        ls = live.by_id.get(sid)
        found = live.item_of(ls) if ls is not None else None
        # Else the md5 of each script of the prims named: a bounded search, never the whole mount.
        for prim in prims:
            if found is not None:
                break
            found = next((i for i in prim.items.values() if i.is_script and script_id_of(i) == sid), None)
        if found is not None:
            return Attribution(ITEM, found, found.folder.object_folder if found.folder else None)
    if ref is not None and ref.name:
        for prim in prims:
            found = next((i for i in prim.items.values() if i.is_script and i.info.name == ref.name), None)
            if found is not None:
                return Attribution(ITEM, found, prim.object_folder)
    if prims:
        return Attribution(OBJECT, None, prims[0].object_folder)
    return Attribution(MOUNT)


def debug_fields(tree: Tree, live: LiveScripts, msg: RuntimeDebug) -> dict[str, Any]:
    """The `runtime.debug` event's fields."""
    return {**speaker_fields(tree, live, msg), "channel": clean(msg.channel, 40),
            "message": clean(msg.message, MAX_RUNTIME_TEXT, keep_newlines=True)}


def error_fields(tree: Tree, live: LiveScripts, msg: RuntimeError_) -> dict[str, Any]:
    """The `runtime.error` event's fields."""
    stack = [clean(str(frame), 1000) for frame in msg.stack[:MAX_STACK]]
    return {**speaker_fields(tree, live, msg), "channel": clean(msg.channel, 40),
            "message": clean(msg.message, MAX_RUNTIME_TEXT, keep_newlines=True),
            "error": clean(msg.error, 2000), "line": msg.line, "column": msg.column, "stack": stack}


def speaker_fields(tree: Tree, live: LiveScripts, msg: RuntimeDebug | RuntimeError_) -> dict[str, Any]:
    """Who spoke, as far as any reference the viewer sent resolves (`attribute`): the item's ids
    and path, else its object's, else what the viewer sent; `scope` says which."""
    who = attribute(tree, live, object_id=msg.object_id, prim_id=msg.prim_id, item_id=msg.item_id,
                    script_id=msg.script_id, ref=msg.item)
    fields: dict[str, Any] = {"scope": who.scope, "object_id": msg.object_id, "prim_id": msg.prim_id,
                              "item_id": msg.item_id, "object_name": clean(msg.object_name, 200)}
    if msg.script_id:
        fields["script_id"] = clean(msg.script_id, 64)
    if who.item is not None and who.item.folder is not None:
        fields.update(item_id=who.item.uuid, prim_id=who.item.folder.uuid, path=tree.path_of(who.item),
                      item_name=clean(who.item.info.name, 200))
    if who.obj is not None:  # names are residents' text too: they lead the lines of the logs
        fields.update(object_id=who.obj.uuid, object_name=clean(who.obj.link_name, 200))
        fields.setdefault("path", tree.path_of(who.obj))
    return fields
