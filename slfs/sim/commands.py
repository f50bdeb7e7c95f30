"""The simulated viewer's viewer commands: `command.list` and `command.execute`.

`CommandMethods` is a mixin of `SimViewer` (server.py). The list is what the newer document lists;
what each command does and answers follows the generations' C++ (viewer-source.md §5) or, for the
document viewers, the documents. G1 has neither method (generation.py drops them from the table).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from slfs.protocol.constants import RECOMPILE_TARGETS

from .compiler import compile_source
from .connection import CallContext, denied, id_param, invalid
from .generation import Generation
from .runtime_output import ScriptOutput
from .world import SUBTYPE_LUAU, SimObject


class CommandMethods(ScriptOutput):
    """The commands half of SimViewer; the attributes annotated below are SimViewer's."""

    apply_delay: float
    profile: Generation

    @property
    def v2(self) -> bool:
        raise NotImplementedError

    # Transport's (annotation only, no stub)
    _later: Callable[[CallContext, float, Callable[[], Awaitable[None]]], None]

    async def _m_command_list(self, params: dict[str, Any], ctx: CallContext) -> Any:
        oid = {"type": "string", "required": True, "description": "UUID of the in-world object"}
        return {
            "commands": [
                {
                    "command": "viewer.camera.focus",
                    "description": "Zoom camera to an in-world object.",
                    "params": {"object_id": oid},
                },
                {
                    "command": "viewer.object.save_back_to_contents",
                    "description": "Save an in-world object back to source object contents.",
                    "params": {"object_id": oid},
                },
                {
                    "command": "viewer.script.recompile_all",
                    "description": "Recompile all scripts in an in-world object using the selected target.",
                    "params": {
                        "object_id": oid,
                        "target": {
                            "type": "string",
                            "required": True,
                            "description": "luau, lsl2, mono or auto",
                        },
                    },
                },
                {
                    "command": "viewer.script.reset_all",
                    "description": "Reset all scripts in an in-world object.",
                    "params": {"object_id": oid},
                },
                {
                    "command": "viewer.teleport",
                    "description": "Teleport agent to an in-world object.",
                    "params": {"object_id": oid},
                },
            ]
        }

    async def _m_command_execute(self, params: dict[str, Any], ctx: CallContext) -> Any:
        command = params.get("command")
        if not isinstance(command, str) or not command:
            raise invalid("command is required")
        known = (
            "viewer.teleport",
            "viewer.camera.focus",
            "viewer.object.save_back_to_contents",
            "viewer.script.reset_all",
            "viewer.script.recompile_all",
        )
        if command not in known:
            raise invalid(f"Unknown command: {command}")
        args = params.get("params")
        args = args if isinstance(args, dict) else {}
        object_id = id_param(args, "object_id")
        if object_id is None:
            raise invalid("object_id is required")
        if self.profile.command_answers == "source":
            return await self._command_source(command, object_id, args, ctx)
        found = self.world.find_prim(object_id)
        # Newer document, known viewer commands: "an in-world object in a published linkset. Any
        # other object is refused with -32003" (no message given; this one is chosen here).
        outside = found is None or not found[0].published
        if self.v2 and command in ("viewer.teleport", "viewer.camera.focus") and outside:
            raise denied("Object is not in a published linkset")
        if found is None:
            raise invalid("Object not found")
        obj = found[0]
        if command == "viewer.script.recompile_all":
            target = args.get("target")
            if target not in RECOMPILE_TARGETS:
                raise invalid("target must be 'luau', 'lsl2', 'mono', or 'auto'")
            if not obj.root.permissions.can_modify:
                raise denied("Permission denied")
            oid = obj.object_id

            ctx.after.append(lambda: self._recompile_all(obj, oid, target))
            return {"success": True}
        if command == "viewer.script.reset_all":
            if not obj.root.permissions.can_modify:
                raise denied("Permission denied")
            ctx.after.append(lambda: self._reset_all(obj))
            return {"success": True}
        if command == "viewer.object.save_back_to_contents":
            if not obj.root.permissions.can_modify:
                raise denied("Permission denied")
            return {"success": True, "result": {"object_id": obj.object_id}}
        return {"success": True}

    async def _recompile_all(self, obj: SimObject, oid: str, target: str) -> None:
        await trio.sleep(self.apply_delay)
        for prim in obj.prims():
            touched = False
            for it in prim.inventory:
                if not it.is_script or not it.permissions.can_modify:
                    continue
                if target == "luau":
                    it.vm = "luau"
                elif target in ("lsl2", "mono") and it.subtype != SUBTYPE_LUAU:
                    it.vm = target
                if not compile_source(it.content, it.language):
                    it.compiled_content = it.content
                    it.faulted = False
                    it.running = True
                it.revision = self.world.next_revision()
                touched = True
            if touched and oid in self.world.objects:
                await self.send_inventory_update(obj, prim)

    async def _reset_all(self, obj: SimObject) -> None:
        await trio.sleep(self.apply_delay)
        for prim in obj.prims():
            for it in prim.inventory:
                if it.is_script and it.running:
                    await self.run_script(it.item_id)

    async def _command_source(self, command: str, object_id: str, args: dict[str, Any], ctx: CallContext) -> Any:
        """The viewer commands as the generations' C++ answers them (viewer-source.md §5; G2+)."""
        found = self.world.find_prim(object_id)
        if command in ("viewer.teleport", "viewer.camera.focus"):
            # "G2/G3: any object in view; G4: must be in a published linkset"
            if self.profile.teleport_needs_published and (found is None or not found[0].published):
                raise denied("Object is not in a published linkset")
            if found is None:
                raise invalid("object_id not found")
            return {"success": True}
        if command == "viewer.object.save_back_to_contents":
            # "{success, result:{object_id}}; not published -32602; not available -32003"
            if found is None or not found[0].published:
                raise invalid("Object is not published")
            obj = found[0]
            if self.profile.deferred_properties and obj.deferred_properties:
                # what the publish says (can_save_back false until the properties arrive); the
                # message is chosen here
                raise denied("Save back to contents is not available for this object")
            return {"success": True, "result": {"object_id": obj.object_id}}
        if command == "viewer.script.reset_all":
            # "{success, object_id, queued:true}; any prim of a published object; -32602 'Prim
            # contains no scripts', -32003 'No modify permission on prim'" (unpublished: chosen here)
            if found is None or not found[0].published:
                raise denied("Object is not published")
            obj, prim = found
            if not any(i.is_script for p in obj.prims() for i in p.inventory):
                raise invalid("Prim contains no scripts")
            if not prim.permissions.can_modify:
                raise denied("No modify permission on prim")

            async def reset_all() -> None:
                for p in obj.prims():
                    for it in p.inventory:
                        if it.is_script and it.faulted:
                            it.faulted = False
                            await self.send_inventory_update(obj, p)
                await self._reset_all(obj)

            ctx.after.append(reset_all)
            return {"success": True, "object_id": object_id, "queued": True}
        # viewer.script.recompile_all: "{object_id (must be the root), target luau|lsl2|mono|auto}
        # -> {success, object_id, target, queued:true}; a child id answers -32003 'Object is not
        # published'"
        target = args.get("target")
        if target not in RECOMPILE_TARGETS:
            raise invalid("target must be 'luau', 'lsl2', 'mono', or 'auto'")
        root = self.world.objects.get(object_id)
        if root is None or not root.published:
            raise denied("Object is not published")
        oid = root.object_id
        ctx.after.append(lambda: self._recompile_all(root, oid, str(target)))
        return {"success": True, "object_id": oid, "target": target, "queued": True}
