"""The simulated viewer's methods: what a client calls, validated and answered as the viewer does.

`MethodHandlers` is a mixin of `SimViewer` (server.py). It owns the method table (`_method_table`:
JSON-RPC method name -> handler) and the system.*, language.syntax*, object.list, object.request
and object.unpublish handlers; the item and content methods and the validators they all share are
item_methods.py's, script.* live_sync.py's, command.* commands.py's. A handler takes the call's params
and its `CallContext`, returns the result or raises `RpcError`, and queues what the viewer does
after answering in `ctx.after` (`_later`). Framing, dispatch and sending are transport.py's; world
edits and the notifications about them are world_control.py's.
"""

from __future__ import annotations

import json
import time
from typing import Any

from slfs.protocol.rpc_errors import (
    INTERNAL_ERROR,
    RpcError,
)

from . import syntax
from .connection import CallContext, Handler, denied, id_param, invalid
from .item_methods import ItemMethods, _int32


class MethodHandlers(ItemMethods):
    """The methods half of SimViewer; the attributes annotated below (and in ItemMethods) are
    SimViewer's."""

    viewer_version_string: str
    publish_delay: float
    _handlers: dict[str, Handler]

    # LiveSync's (live_sync.py): script.subscribe, script.unsubscribe, script.list
    _m_subscribe: Handler
    _m_unsubscribe: Handler
    _m_script_list: Handler
    # CommandMethods' (commands.py): command.list, command.execute
    _m_command_list: Handler
    _m_command_execute: Handler

    def _method_table(self) -> dict[str, Handler]:
        table = self._full_method_table()
        # viewer-source.md §2: G1 has no command.*, object.list, object.script.set_running/reset;
        # the JSON-RPC layer answers them -32601 like any unknown method
        for name in self.profile.missing_methods:
            table.pop(name, None)
        return table

    def _full_method_table(self) -> dict[str, Handler]:
        return {
            "system.ping": self._m_ping,
            "system.getVersion": self._m_get_version,
            "system.status": self._m_status,
            "system.listMethods": self._m_list_methods,
            "language.syntax.id": self._m_syntax_id,
            "language.syntax": self._m_syntax,
            "language.syntax.cache": self._m_syntax_cache,
            "language.syntax.get": self._m_syntax_get,
            "script.subscribe": self._m_subscribe,
            "script.unsubscribe": self._m_unsubscribe,
            "script.list": self._m_script_list,
            "object.list": self._m_object_list,
            "object.request": self._m_object_request,
            "object.unpublish": self._m_object_unpublish,
            "object.content.get": self._m_content_get,
            "object.content.save": self._m_content_save,
            "object.item.create": self._m_item_create,
            "object.item.delete": self._m_item_delete,
            "object.item.modify": self._m_item_modify,
            "object.modify": self._m_object_modify,
            "object.script.set_running": self._m_set_running,
            "object.script.reset": self._m_reset,
            "command.list": self._m_command_list,
            "command.execute": self._m_command_execute,
        }

    # ============================================================================================
    # methods
    # ============================================================================================

    async def _m_ping(self, params: dict[str, Any], ctx: CallContext) -> Any:
        stamp = params.get("timestamp", 0)
        return {"pong": "pong", "timestamp": stamp, "server_time": _int32(int(time.time() * 1000))}

    async def _m_get_version(self, params: dict[str, Any], ctx: CallContext) -> Any:
        return {"client_name": "Second Life Simulated", "client_version": self.viewer_version_string}

    async def _m_status(self, params: dict[str, Any], ctx: CallContext) -> Any:
        return {"status": "OK"}

    async def _m_list_methods(self, params: dict[str, Any], ctx: CallContext) -> Any:
        return sorted(self._handlers)

    async def _m_syntax_id(self, params: dict[str, Any], ctx: CallContext) -> Any:
        return {"id": self.syntax_id}

    async def _m_syntax(self, params: dict[str, Any], ctx: CallContext) -> Any:
        kind = params.get("kind")
        if not isinstance(kind, str) or not kind:
            raise invalid("No syntax category specified")
        defs = {"defs.lsl": syntax.LSL_DEFS, "defs.lua": syntax.LUA_DEFS}.get(kind)
        if defs is None:
            raise invalid("Unknown syntax category requested")
        return {"id": self.syntax_id, "defs": defs, "success": True}

    async def _m_syntax_cache(self, params: dict[str, Any], ctx: CallContext) -> Any:
        return {"files": sorted(syntax.CACHE_FILES), "success": True}

    async def _m_syntax_get(self, params: dict[str, Any], ctx: CallContext) -> Any:
        name = params.get("filename")
        if not isinstance(name, str) or not name:
            raise invalid("No filename specified")
        text = syntax.CACHE_FILES.get(name)
        if text is None:
            raise invalid("Requested syntax cache file not found")
        if params.get("as_json") is True:
            try:
                return {"content": json.loads(text), "success": True}
            except ValueError:
                raise RpcError.standard(
                    INTERNAL_ERROR, "Failed to load and format syntax cache file."
                ) from None
        return {"content": text, "success": True}

    async def _m_object_list(self, params: dict[str, Any], ctx: CallContext) -> Any:
        return {"objects": [self._wire_object(o) for o in self.world.objects.values() if o.published]}

    async def _m_object_request(self, params: dict[str, Any], ctx: CallContext) -> Any:
        object_id = id_param(params, "object_id")
        if object_id is None:
            raise invalid("No object_id specified")
        obj = self.world.objects.get(object_id)
        if obj is None:
            raise invalid("Object not found")
        if not obj.root.permissions.can_modify:
            raise denied("Permission denied")
        oid = obj.object_id

        async def do_publish() -> None:
            if oid in self.world.objects:
                await self.publish(oid)

        self._later(ctx, self.publish_delay, do_publish)
        return {"success": True}

    async def _m_object_unpublish(self, params: dict[str, Any], ctx: CallContext) -> Any:
        object_id = id_param(params, "object_id")
        if object_id is None:
            raise invalid("No object_id specified")
        obj = self.world.objects.get(object_id)
        if obj is None or not obj.published:
            raise invalid("Object is not published")
        obj.published = False
        note = {"object_id": obj.object_id, "reason": "manual"}
        if self.v2:
            await self.broadcast("object.unpublish", note)
        else:

            async def after() -> None:
                await self.broadcast("object.unpublish", note)

            ctx.after.append(after)
        return {"success": True, "object_id": obj.object_id}
