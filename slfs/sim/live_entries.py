"""The simulated viewer's live-sync subscription entries, as a client sees them: script.subscribe,
script.unsubscribe and script.list, where script.compiled and a subscriber's runtime output go, and
what a connection's end does to the entries it held.

`LiveSubscriptions` is a mixin of `SimViewer` (server.py), under LiveSync (live_sync.py), which owns
the viewer's side: its script editor, the temp file and the file watcher. The rules and where
each comes from are in live_sync.py's docstring and README.md, "Live sync".
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from slfs.protocol.constants import NULL_UUID

from .compile_output import parse_line, raw_lines
from .connection import CallContext, Connection
from .world import Item, Prim, SimObject, script_id_for
from .world_control import WorldControl

log = logging.getLogger(__name__)

# ScriptSubscribeResponse.status and its fixed message (protocol document, both revisions).
SUBSCRIBE_OK = 0
SUBSCRIBE_INVALID_EDITOR = 1
SUBSCRIBE_NO_ENTRY = 2
SUBSCRIBE_TAKEN = 3
SUBSCRIBE_INTERNAL = 4
SUBSCRIBE_MESSAGES = {
    SUBSCRIBE_OK: "OK",
    SUBSCRIBE_INVALID_EDITOR: "Invalid editor handle",
    SUBSCRIBE_NO_ENTRY: "No subscription found for script",
    SUBSCRIBE_TAKEN: "Script already subscribed",
    SUBSCRIBE_INTERNAL: "Internal server error",
}
EDITOR_CLOSED_REASON = 1  # SessionDisconnect.reason 1: "Editor closed"
EDITOR_CLOSED_MESSAGE = "Editor closed"


@attrs.define(eq=False)
class LiveEditor:
    """The viewer's script editor for one script, its temp file and watcher, and the subscription
    entry (`tracked`) with its holder."""

    script_id: str
    prim_id: str  # NULL_UUID for a script in the agent's inventory
    item_id: str
    path: str
    panel_alive: bool = True  # False: the panel is gone but the entry stays (subscribe: status 1)
    tracked: bool = True  # the subscription entry exists (script.list; subscribe finds it)
    holder: Connection | None = None
    fail_next_subscribe: int = 0  # subscribes still to be answered status 4
    # the file watcher (LLLiveFile): whether the file existed at the last check, the whole-second
    # st_mtime it had then, and the one of the last version loaded
    last_exists: bool = False
    last_stat: int = 0
    last_mod: int = 0
    ignore_next: bool = True  # LLLiveLSLFile's ignoreNextUpdate: the viewer's own write
    changes: int = 0  # changes the watcher has handled (ignored, unreadable or compiled)
    outcomes: list[str] = attrs.Factory(list)  # per change: "ignored" | "vanished" | "compiled" | "failed" | "gone"
    scope: trio.CancelScope | None = None
    lock: trio.Lock = attrs.Factory(trio.Lock)
    seen: trio.Event = attrs.Factory(trio.Event)

    @property
    def live_holder(self) -> Connection | None:
        # not closed; authenticated where the viewer has an auth gate, as it was to subscribe
        # (G1/G2 serve script.subscribe before session.ok: viewer-source.md §6)
        h = self.holder
        return h if h is not None and not h.closed else None


class LiveSubscriptions(WorldControl):
    """The subscription entries of SimViewer's script editors; the attributes annotated below are
    SimViewer's (or LiveSync's: `_editors`, `directed_notifications`)."""

    tmpdir: str
    viewer_path: Callable[[str], str]
    # A hostile viewer's knob (tests only): script.list names this temp_dir instead of the one it
    # writes to ("" names none, as a viewer answering without it). None: faithful.
    listed_temp_dir: str | None = None
    _editors: dict[str, LiveEditor]
    directed_notifications: list[tuple[int, str, dict[str, Any]]]

    # Transport's (annotations only, so that no stub shadows them)
    _notify: Callable[[Connection, str, Any], Awaitable[None]]
    _disconnect: Callable[[Connection, int, str], Awaitable[None]]

    # ============================================================================================
    # compile results
    # ============================================================================================

    async def _send_to(self, conn: Connection, method: str, params: dict[str, Any]) -> None:
        self.directed_notifications.append((conn.number, method, params))
        await self._notify(conn, method, params)

    async def _send_compiled(
        self, obj: SimObject | None, prim: Prim | None, item: Item, diagnostics: list[dict[str, Any]]
    ) -> None:
        """script.compiled for a compile made in the viewer (never for object.content.save).

        V1 (older document, CompilationResult: "routed only to the connection subscribed to that
        script"; "produced only while the viewer's script editor for that script is open"): to the
        holder of the script's entry while its editor is open, else to nobody.
        V2 (newer document, CompilationResult "Delivery": "to the connection subscribed to that
        script when there is one; otherwise, when the script's object is published, broadcast"),
        with `object_id` (root) and `prim_id` for a script in an object and `item_id` always.
        `diagnostics` only for a failed compile (the document: "if any occurred")."""
        prim_id = prim.prim_id if prim is not None else NULL_UUID
        sid = script_id_for(prim_id, item.item_id)
        ed = self._editors.get(sid)
        holder = ed.live_holder if ed is not None and ed.tracked else None
        note: dict[str, Any] = {"script_id": sid, "success": not diagnostics, "running": item.running}
        profile = self.profile
        if profile.is_generation:
            # viewer-source.md §3: the raw compiler lines converted on the live-sync path (an
            # unparsed LSL line keeps format "lsl"); G1 needs exactly one space in the Luau pattern
            luau = item.language == "luau"
            lines = raw_lines(diagnostics, item.name, item.language)
            strict = profile.compiled_shape == "errors"
            diagnostics = [parse_line(x, luau=luau, live=True, strict_luau=strict) for x in lines]
        if profile.compiled_shape == "errors":
            if diagnostics:
                note["errors"] = diagnostics  # G1: `errors:[Diagnostic]`, not `diagnostics`
        elif diagnostics or profile.compiled_diagnostics_always:
            note["diagnostics"] = diagnostics  # G4: always (empty on success); else when any
        if not profile.compiled_ids_and_broadcast:
            if holder is not None and ed is not None and ed.panel_alive:
                await self._send_to(holder, "script.compiled", note)
            return
        if obj is not None and prim is not None:
            note["object_id"] = obj.object_id
            note["prim_id"] = prim.prim_id
        note["item_id"] = item.item_id
        if holder is not None:
            await self._send_to(holder, "script.compiled", note)
        elif obj is not None and obj.published:
            await self.broadcast("script.compiled", note)

    def _runtime_subscriber(self, prim_id: str, item_id: str) -> tuple[str, Connection] | None:
        """G1 runtime output (viewer-source.md §4): the live-sync subscription of the speaking prim
        and its holder; the script's own when it is subscribed, else the prim's first."""
        held = [
            ed for ed in self._editors.values() if ed.tracked and ed.prim_id == prim_id and ed.live_holder is not None
        ]
        held.sort(key=lambda ed: ed.item_id != item_id)
        if not held:
            return None
        holder = held[0].live_holder
        assert holder is not None
        return held[0].script_id, holder

    def _is_subscribed(self, prim_id: str, item_id: str) -> bool:
        ed = self._editors.get(script_id_for(prim_id, item_id))
        return ed is not None and ed.tracked and ed.live_holder is not None

    # ============================================================================================
    # entries and connections
    # ============================================================================================

    def _untrack(self, ed: LiveEditor) -> Connection | None:
        """The entry goes (the editor may stay); its holder, if it had a live one."""
        holder = ed.live_holder
        ed.tracked = False
        ed.holder = None
        if not ed.panel_alive:
            self._editors.pop(ed.script_id, None)  # nothing of it is left in the viewer
        return holder

    async def _editor_closed(self, holder: Connection | None) -> None:
        """V1: a connection that has just lost its last subscription is sent session.disconnect
        {1, "Editor closed"} and closed (older viewers; V2 keeps it)."""
        if not self.profile.editor_closed_disconnect or holder is None or holder.closed:
            return
        if any(e.tracked and e.holder is holder for e in self._editors.values()):
            return
        await self._disconnect(holder, EDITOR_CLOSED_REASON, EDITOR_CLOSED_MESSAGE)

    def _on_connection_closed(self, conn: Connection) -> None:
        """A closed connection's subscriptions end; the entries stay, for a client that reconnects
        (the viewer's unsubscribeConnection)."""
        for ed in self._editors.values():
            if ed.holder is conn:
                ed.holder = None

    # ============================================================================================
    # methods
    # ============================================================================================

    async def _m_subscribe(self, params: dict[str, Any], ctx: CallContext) -> Any:
        """script.subscribe: attach the calling connection to an existing entry. Checked in the
        viewer's order: the entry (2), its editor (1, and the entry is dropped), the connection
        (4), another live holder (3). The holder itself subscribing again gets 0 (the document's
        3 is "another connection is already subscribed")."""
        raw = params.get("script_id")
        sid = raw if isinstance(raw, str) else ""
        ed = self._editors.get(sid)
        if ed is None or not ed.tracked:
            status = SUBSCRIBE_NO_ENTRY
        elif not ed.panel_alive:
            status = SUBSCRIBE_INVALID_EDITOR
        elif ed.fail_next_subscribe:
            ed.fail_next_subscribe -= 1
            status = SUBSCRIBE_INTERNAL
        elif ed.live_holder is not None and ed.live_holder is not ctx.conn:
            status = SUBSCRIBE_TAKEN
        else:
            status = SUBSCRIBE_OK
        out: dict[str, Any] = {
            "script_id": sid,
            "success": status == SUBSCRIBE_OK,
            "status": status,
            "message": SUBSCRIBE_MESSAGES[status],
        }
        if status == SUBSCRIBE_INVALID_EDITOR and ed is not None:
            lost = self._untrack(ed)

            async def after() -> None:
                await self._editor_closed(lost)

            ctx.after.append(after)
        if status == SUBSCRIBE_OK and ed is not None:
            ed.holder = ctx.conn
            found = self.world.find_prim(ed.prim_id) if ed.prim_id != NULL_UUID else None
            # ScriptSubscribeResponse: object_id is the prim holding the script; root_id the
            # linkset's root, "set equal to object_id" when the prim cannot be resolved (an
            # inventory script: the null UUID for both).
            out["object_id"] = ed.prim_id
            out["root_id"] = found[0].object_id if found is not None else ed.prim_id
            out["item_id"] = ed.item_id
        return out

    async def _m_unsubscribe(self, params: dict[str, Any], ctx: CallContext) -> Any:
        """script.unsubscribe from a client: "The viewer drops the subscription only when the
        calling connection owns it. The call is idempotent" (protocol document). The viewer drops
        the entry itself (its handleScriptUnsubscribe -> unsubscribeEditor); the editor and its
        temp file stay. V1: losing its last subscription, the caller is sent session.disconnect
        {1, "Editor closed"} and closed, after the null answer."""
        raw = params.get("script_id")
        ed = self._editors.get(raw) if isinstance(raw, str) else None
        if ed is not None and ed.tracked and ed.live_holder is ctx.conn:
            lost = self._untrack(ed)

            async def after() -> None:
                await self._editor_closed(lost)

            ctx.after.append(after)
        return None

    async def _m_script_list(self, params: dict[str, Any], ctx: CallContext) -> Any:
        """script.list: the temp directory and the ids of every entry, held or not.

        Every entry, not only the held ones: the ScriptList section opens "Requests the list of all
        scripts currently open and tracked by the viewer ... without going through the full
        script.subscribe flow", and the Launch URI's post-connection sequence calls script.list
        *before* script.subscribe to find the temp file of `script=<id>`, which only works if an
        entry nobody holds is listed. (Its field line, "for all currently subscribed scripts",
        uses "subscription" as the viewer does: the entry the editor creates; status 2 "No
        subscription found" likewise means no entry.) The viewer's own handler lists every entry of
        its subscription map."""
        ids = [sid for sid, ed in self._editors.items() if ed.tracked]
        temp_dir = self.viewer_path(self.tmpdir) if self.listed_temp_dir is None else self.listed_temp_dir
        return {"temp_dir": temp_dir, "script_ids": ids, "success": True}


def write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def log_text(item: Item, diagnostics: list[dict[str, Any]]) -> str:
    """`<temp file>.log` (its format is not documented; chosen here): empty after a good compile,
    else one line per diagnostic as the compilers print them (LSL `(row, col) : LEVEL : message`,
    0-based; Luau `<name>:<row>: message`)."""
    lines = []
    for d in diagnostics:
        if item.language == "luau":
            lines.append(f"{item.name}:{d['row']}: {d['message']}")
        else:
            lines.append(f"({max(0, d['row'] - 1)}, {max(0, d['column'] - 1)}) : {d['level']} : {d['message']}")
    return "".join(line + "\n" for line in lines)
