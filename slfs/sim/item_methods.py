"""The simulated viewer's item and content methods, and the validators every method shares.

`ItemMethods` is a mixin of `SimViewer` (server.py), under MethodHandlers (methods.py), which owns
the method table: object.content.get/save, object.item.create/delete/modify, object.modify and
object.script.set_running/reset, the validators (the documented precondition order: params, prim,
published, region, item, type, permissions), the viewer's name correction and limits, and the
default contents of created items. A handler takes the call's params and its `CallContext`,
returns the result or raises `RpcError`, and queues what the viewer does after answering in
`ctx.after` (`_later`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from slfs.protocol.rpc_errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    REQUEST_TIMEOUT,
    SERVICE_UNAVAILABLE,
    RpcError,
)

from .compile_output import parse_line, raw_lines
from .compiler import compile_source
from .connection import CallContext, denied, id_param, invalid
from .generation import Generation
from .runtime_output import ScriptOutput
from .world import (
    SCRIPT_VMS,
    SUBTYPE_LSL,
    SUBTYPE_LUAU,
    Item,
    Perms,
    Prim,
    SimObject,
)
from .world_control import NOTECARD_LIMIT, cut_bytes

NAME_LIMIT = 63
DESCRIPTION_LIMIT = 127
# Exact texts of the newer protocol document (AlchemyViewer/Alchemy doc/external-editor-json-rpc.md).
REGION_DOWN = "The object's region is not connected"
EMBEDDED_ITEMS_REFUSED = (
    "The notecard holds embedded items, which saving its text would lose; edit it in the viewer"
)
COMPILE_FAILURES = ("stoi", "nul")


def correct_name(name: str, limit: int = NAME_LIMIT) -> str:
    """The viewer's inventory name correction (bytes < 32 except LF, non-ASCII, '|' -> space)."""
    raw = name.encode("utf-8")
    fixed = bytes(0x20 if (b < 32 and b != 10) or b >= 128 or b == 0x7C else b for b in raw).decode("ascii")
    return fixed.strip()[:limit]


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= (1 << 31) else value


def _apply_properties(target: Any, name: Any, description: Any) -> tuple[bool, bool]:
    """Apply a modify call's name and description the way the viewer does (name correction,
    description cut at its limit; an empty or unchanged name is dropped). Returns what changed."""
    name_changed = desc_changed = False
    if isinstance(name, str):
        fixed = correct_name(name)
        if fixed and fixed != target.name:
            target.name = fixed
            name_changed = True
    if isinstance(description, str):
        fixed = cut_bytes(description, DESCRIPTION_LIMIT)
        if fixed != target.description:
            target.description = fixed
            desc_changed = True
    return name_changed, desc_changed


class ItemMethods(ScriptOutput):
    """Item, content and script-state methods, and the shared validators; the attributes annotated
    below are SimViewer's."""

    tmpdir: str
    apply_delay: float
    create_delay: float
    compile_failure: str | None
    profile: Generation
    internal_error: Callable[[str], RpcError]
    _creating: set[str]

    # Transport's (annotation only, no stub)
    _later: Callable[[CallContext, float, Callable[[], Awaitable[None]]], None]

    # ============================================================================================
    # validation
    # ============================================================================================

    def _published_prim(self, prim_id: str) -> tuple[SimObject, Prim]:
        """Steps 2 and 3 of every validator: the prim exists, its object is published."""
        found = self.world.find_prim(prim_id)
        if found is None:
            raise invalid("Prim not found")
        obj, prim = found
        if not obj.published:
            raise denied("Object is not published")
        return obj, prim

    def _common(
        self, params: dict[str, Any], *, write: bool, read_script: bool = False, property_check: bool = False
    ) -> tuple[SimObject, Prim, Item]:
        """The shared item validator, in the documented order."""
        prim_id, item_id = id_param(params, "prim_id"), id_param(params, "item_id")
        if prim_id is None or item_id is None:
            raise invalid("prim_id and item_id are required")
        if property_check and not any(k in params for k in ("name", "description", "permissions")):
            raise invalid("At least one property (name, description, or permissions) must be specified")
        obj, prim = self._published_prim(prim_id)
        self._check_region(obj)  # step 4 of the newer document's common preconditions
        item = prim.find(item_id)
        if item is None:
            raise invalid("Item not found in prim inventory")
        if item.type not in ("script", "notecard"):
            raise invalid("Item is not a script or notecard")
        # Scripts need copy+modify to be read; G1 asked the same of notecards (viewer-source.md §2)
        strict = item.is_script or (item.type == "notecard" and self.profile.notecard_read_needs_copy_modify)
        if read_script and strict and not (item.permissions.can_copy and item.permissions.can_modify):
            raise denied("Insufficient permissions")
        if write:
            if not item.permissions.can_modify:
                raise denied("Insufficient permissions")
            if not prim.permissions.can_modify:
                raise denied("No modify permission on object")
        return obj, prim, item

    def _script_target(self, params: dict[str, Any]) -> tuple[SimObject, Prim, Item]:
        """set_running / reset: their own validator."""
        prim_id, item_id = id_param(params, "prim_id"), id_param(params, "item_id")
        if prim_id is None or item_id is None:
            raise invalid("prim_id and item_id are required")
        obj, prim = self._published_prim(prim_id)
        item = prim.find(item_id)
        if item is None:
            raise invalid("Script not found in prim inventory")
        if not item.is_script:
            raise invalid("Item is not a script")
        if not item.permissions.can_modify:
            raise denied("No modify permission on script")
        # The newer document's set_running/reset error table lists the region check last, after
        # the permission check (unlike the common validator, where it precedes the item lookup).
        self._check_region(obj)
        return obj, prim, item

    def _check_region(self, obj: SimObject) -> None:
        if self.profile.newer_doc_errors and not obj.region_connected:
            raise RpcError(SERVICE_UNAVAILABLE, REGION_DOWN)

    # ============================================================================================
    # item and content methods
    # ============================================================================================

    async def _m_content_get(self, params: dict[str, Any], ctx: CallContext) -> Any:
        _obj, prim, item = self._common(params, write=False, read_script=True)
        content = item.content.split("\x00", 1)[0] if item.is_script else item.content
        out: dict[str, Any] = {
            "success": True,
            "prim_id": prim.prim_id,
            "item_id": item.item_id,
            "content": content,
        }
        if self.profile.content_encoding:  # viewer-source.md §2: "encoding from G2"
            out["encoding"] = "utf-8"
        if self.profile.newer_doc_errors and item.type == "notecard":  # G4 / V2
            # Newer document, ObjectContentGetResponse: `embedded_items?: number`, how many
            # inventory items the notecard holds beside its text. (The older one has no field.)
            out["embedded_items"] = item.embedded_items
        return out

    async def _m_content_save(self, params: dict[str, Any], ctx: CallContext) -> Any:
        profile = self.profile
        content = params.get("content")
        if profile.empty_content_rejected and (not isinstance(content, str) or not content):
            # viewer-source.md §2: "G1-G3 reject an empty content with -32602 'Invalid params:
            # content is required' (checked first, before the item checks)"
            raise invalid("content is required")
        obj, prim, item = self._common(params, write=True)
        if not isinstance(content, str):
            raise invalid("content is required")
        vm = params.get("vm")
        running = params.get("running")
        if profile.newer_doc_errors and item.is_script and vm is not None and vm not in SCRIPT_VMS:
            raise invalid("vm must be 'luau', 'mono', or 'lsl2'")
        if item.type == "notecard":
            if profile.newer_doc_errors and item.embedded_items:
                # Newer document, ObjectContentSave "Notecards with embedded items": refused, as
                # the text alone would be saved without them. Nothing is stored.
                raise denied(EMBEDDED_ITEMS_REFUSED)
            if profile.newer_doc_errors and len(content.encode("utf-8")) > NOTECARD_LIMIT:
                raise invalid(f"Notecard is too large (more than {NOTECARD_LIMIT} bytes)")
            self._store_content(item, content)
            # V1: the older document is silent, and the viewer saved the text alone: the embedded
            # items are lost.
            item.embedded_items = 0
            await self.send_inventory_update(obj, prim)
            return {"success": True, "prim_id": prim.prim_id, "item_id": item.item_id}
        if isinstance(vm, str) and vm in SCRIPT_VMS and item.subtype != SUBTYPE_LUAU:
            item.vm = vm  # a native Luau script always targets luau
        self._store_content(item, content)
        diagnostics = compile_source(item.content, item.language)
        out: dict[str, Any] = {
            "success": True,
            "prim_id": prim.prim_id,
            "item_id": item.item_id,
            "compiled": not diagnostics,
        }
        item_id = item.item_id
        if diagnostics and item.language == "lsl" and self.compile_failure == "stoi":
            # newer-viewers research: "Some viewer builds answer a failed LSL compile with -32603
            # 'Internal error: stoi' instead of diagnostics". The source was stored all the same,
            # and the inventory update follows as for any save.
            # G1/G2 append the exception text, G3 answers a bare "Internal error" (viewer-source.md §3)
            self._later(ctx, self.apply_delay, lambda: self._send_item_update(item_id))
            raise self.internal_error("stoi")
        lines = raw_lines(diagnostics, item.name, item.language)
        if diagnostics and item.language == "lsl" and self.compile_failure == "nul":
            # "... one answered with NUL bytes": a compiler line of NUL characters, which the viewer
            # cannot parse (row 0, column 0; the documents' viewers say format "lsl", the
            # generations' content.save path gives no format, viewer-source.md §3).
            message = "\x00" * max(1, len(diagnostics[0]["message"]))
            lines = [message]
            diagnostics = [{"row": 0, "column": 0, "level": "ERROR", "message": message, "format": "lsl"}]
        if diagnostics and profile.failed_save_shape == "errors":
            # viewer-source.md §3: "G1 explorer (1d7ee10e, 3a4fed47) -> compiled:false, errors:[raw strings]"
            out["errors"] = lines
        elif diagnostics and profile.save_diagnostics == "parsed":
            # G2-G4: each raw line converted by the §3 rules (content.save path: no format for an
            # unparsed line)
            luau = item.language == "luau"
            out["diagnostics"] = [parse_line(line, luau=luau, live=False) for line in lines]
        elif diagnostics:
            out["diagnostics"] = diagnostics
        else:
            item.compiled_content = item.content
            item.faulted = False
            if isinstance(running, bool):
                item.running = running
            elif profile.save_running == "stop":
                # viewer-source.md §2: "G1 uploads with running forced false (a save through the
                # explorer stops the script)"; G2+ keep the current state unless running is given
                item.running = False
        restart = not diagnostics and item.running

        async def after() -> None:
            await trio.sleep(self.apply_delay)
            found = self.world.find_item(item_id)
            if found is None:
                return
            await self.send_inventory_update(found[0], found[1])
            if restart:
                await self.run_script(item_id)

        ctx.after.append(after)
        return out

    async def _m_item_create(self, params: dict[str, Any], ctx: CallContext) -> Any:
        kind = params.get("type")
        if kind not in ("script", "notecard"):
            raise invalid(f"Unsupported item type: {kind if isinstance(kind, str) else ''}")
        prim_id = id_param(params, "prim_id")
        if prim_id is None:
            raise invalid("prim_id is required")
        found = self.world.find_prim(prim_id)
        if found is None:
            raise invalid("Prim not found")
        obj, prim = found
        name = params.get("name")
        if not isinstance(name, str) or not name:
            raise invalid("name is required")
        vm = params.get("vm")
        if kind == "script" and vm not in SCRIPT_VMS:
            raise invalid("vm must be 'luau', 'mono', or 'lsl2'")
        if not obj.published:
            raise denied("Object is not published")
        if self.profile.newer_doc_errors:
            # The newer document's error table, in its order: modify on the prim, then the region.
            if not prim.permissions.can_modify:
                raise denied("No modify permission on prim")
            self._check_region(obj)
        if prim.prim_id in self._creating:
            raise RpcError.standard(INVALID_REQUEST, "An item.create is already in flight for this prim")
        self._creating.add(prim.prim_id)
        try:
            await trio.sleep(self.create_delay)
            refusals = self._refuse_create.get(prim.prim_id)
            if refusals:
                reason = refusals.pop(0)
                if self.profile.newer_doc_errors:
                    raise RpcError.standard(INTERNAL_ERROR, f"Item creation failed: {reason}")
                raise RpcError(REQUEST_TIMEOUT, "Timed out waiting for item creation")
            taken = {i.name for i in prim.inventory}
            final = name
            n = 1
            while final in taken:
                final = f"{name} {n}"
                n += 1
            item = Item(
                item_id=str(uuid.uuid4()),
                name=final,
                type=kind,
                permissions=Perms(),
                creator_id=self.world.agent_id,
                revision=self.world.next_revision(),
            )
            if kind == "script":
                item.vm = vm
                item.subtype = SUBTYPE_LUAU if vm == "luau" else SUBTYPE_LSL
                item.content = DEFAULT_LUAU if vm == "luau" else DEFAULT_LSL
                item.compiled_content = item.content
                item.running = True
            else:
                text = params.get("text")
                item.content = cut_bytes(text, NOTECARD_LIMIT) if isinstance(text, str) else ""
            prim.inventory.append(item)
        finally:
            self._creating.discard(prim.prim_id)
        await self.send_inventory_update(obj, prim)
        out = item.to_wire(revision=self.profile.revision)
        if not self.v2:  # older viewers answer without the run state and revision
            for key in ("running", "faulted", "revision"):
                out.pop(key, None)
        out["prim_id"] = prim.prim_id
        return out

    async def _m_item_delete(self, params: dict[str, Any], ctx: CallContext) -> Any:
        obj, prim, item = self._common(params, write=True)
        prim.inventory.remove(item)
        await self.send_inventory_update(obj, prim)  # before the response, as viewers do
        return {"success": True, "prim_id": prim.prim_id, "item_id": item.item_id}

    async def _m_item_modify(self, params: dict[str, Any], ctx: CallContext) -> Any:
        _obj, prim, item = self._common(params, write=True, property_check=True)
        name = params.get("name")
        description = params.get("description")
        perms = params.get("permissions")
        item_id = item.item_id

        async def apply() -> None:
            found = self.world.find_item(item_id)
            if found is None:
                return
            o, p, it = found
            changed = any(_apply_properties(it, name, description))
            if isinstance(perms, dict) and isinstance(perms.get("next_owner"), int):
                it.permissions.next_owner = perms["next_owner"]
                changed = True
            if changed:
                await self.send_inventory_update(o, p)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True, "prim_id": prim.prim_id, "item_id": item.item_id}

    async def _m_object_modify(self, params: dict[str, Any], ctx: CallContext) -> Any:
        prim_id = id_param(params, "prim_id")
        if prim_id is None:
            raise invalid("prim_id is required")
        if not any(k in params for k in ("name", "description", "permissions")):
            raise invalid("At least one property (name, description, or permissions) must be specified")
        obj, prim = self._published_prim(prim_id)
        if not prim.permissions.can_modify:
            raise denied("No modify permission on object")
        name = params.get("name")
        description = params.get("description")
        perms = params.get("permissions")

        async def apply() -> None:
            name_changed, desc_changed = _apply_properties(prim, name, description)
            if isinstance(perms, dict) and isinstance(perms.get("next_owner"), int):
                prim.permissions.next_owner = perms["next_owner"]  # no update shape carries this
            await self.send_name_update(obj, prim, name=name_changed, description=desc_changed)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True, "prim_id": prim.prim_id}

    async def _m_set_running(self, params: dict[str, Any], ctx: CallContext) -> Any:
        _obj, _prim, item = self._script_target(params)
        running = params.get("running") is True  # missing means stop
        item_id = item.item_id

        async def apply() -> None:
            found = self.world.find_item(item_id)
            if found is None:
                return
            o, p, it = found
            if it.running != running or not self.profile.suppress_identical_inventory:
                it.running = running
                await self.send_inventory_update(o, p)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True}

    async def _m_reset(self, params: dict[str, Any], ctx: CallContext) -> Any:
        _obj, _prim, item = self._script_target(params)
        item_id = item.item_id

        async def apply() -> None:
            found = self.world.find_item(item_id)
            if found is None:
                return
            o, p, it = found
            if it.faulted:
                it.faulted = False
                await self.send_inventory_update(o, p)
            await self.run_script(item_id)

        self._later(ctx, self.apply_delay, apply)
        return {"success": True}


DEFAULT_LSL = """default
{
    state_entry()
    {
        llSay(0, "Hello, Avatar!");
    }

    touch_start(integer total_number)
    {
        llSay(0, "Touched.");
    }
}
"""

DEFAULT_LUAU = """-- New Luau script
ll.Say(0, "Hello, Avatar!")

function touch_start(total_number)
    ll.Say(0, "Touched.")
end
"""
