"""What scripts say at run time, as the simulated viewer sends it: runtime.debug and runtime.error
in the shape and to the connections of the generation played (viewer-source.md section 4), and what
a (re)started script says. A mixin of SimViewer (server.py) over WorldControl (world_control.py)."""

from __future__ import annotations

from typing import Any

from slfs.protocol.constants import NULL_UUID

from .compiler import runtime_events
from .world import Item, Prim, SimObject, script_id_for
from .world_control import WorldControl


class ScriptOutput(WorldControl):
    """Runtime output: emit_debug, emit_error (tests and demos), run_script (a start or reset)."""

    async def emit_debug(self, item_id: str, message: str, channel: str = "owner_say") -> None:
        """A line said by a script (runtime.debug), in the shape and to the connections of the
        generation played (see `_runtime`); lost when nobody is to hear it."""
        obj, prim, item = self._find(item_id)
        await self._runtime(obj, prim, item, message, channel, None)

    async def emit_error(
        self,
        item_id: str,
        message: str,
        line: int = 0,
        column: int = 0,
        *,
        error: str | None = None,
        stack: list[str] | None = None,
        channel: str = "debug",
    ) -> None:
        """A runtime error (runtime.error); same rules as emit_debug. `message` is the text the
        script's error says in chat (LSL "Script run-time error\n<error>"); `line` and `column` its
        place (1-based; 0: unknown)."""
        obj, prim, item = self._find(item_id)
        extra = {
            "error": error if error is not None else message,
            "line": line,
            "column": column,
            "stack": list(stack or []),
        }
        await self._runtime(obj, prim, item, message, channel, extra)

    async def _runtime(
        self,
        obj: SimObject,
        prim: Prim,
        item: Item,
        message: str,
        channel: str,
        error: dict[str, Any] | None,
    ) -> None:
        """Runtime output as the profile's `runtime_shape` says (viewer-source.md §4)."""
        shape = self.profile.runtime_shape
        method = "runtime.debug" if error is None else "runtime.error"
        if shape == "g1":
            await self._runtime_g1(prim, item, message)
            return
        if shape == "doc":
            # V1/V2: every connection, only while the object is published
            if not obj.published:
                return
            params = self._runtime_base(obj, prim, item, message, channel)
            if error is not None:
                params.update(error)
            await self.broadcast(method, params)
            return
        # G2-G4: "every connection (G2 including unauthenticated, G3/G4 only authenticated) when
        # the root is published or the script subscribed" (broadcast applies the auth gate)
        if not (obj.published or self._is_subscribed(prim.prim_id, item.item_id)):
            return
        params = self._runtime_base(obj, prim, item, message, channel)
        params["script_id"] = script_id_for(prim.prim_id, item.item_id)
        if shape == "aggregator" and error is None:
            # G3 (LL aggregator): "a plain debug/owner-say line has no script name, so item_id
            # and item.item_id are the null UUID, item.name "", language "lsl", script_id absent"
            params["item_id"] = NULL_UUID
            params["item"].update(item_id=NULL_UUID, name="", language="lsl")
            del params["script_id"]
        if error is not None:
            extra = dict(error)
            if item.language == "luau":
                extra["column"] = 0  # the Luau pattern has no column (§4: "row as is, column 0")
            if shape == "aggregator" and item.language == "lsl" and not extra["line"]:
                # G3: "LSL errors without location take the first plain line (e.g. "Math Error")
                # as error"
                lines = message.split("\n")
                if len(lines) > 1 and lines[1].strip():
                    extra["error"] = lines[1].strip()
            params.update(extra)
        await self.broadcast(method, params)

    def _runtime_base(
        self, obj: SimObject, prim: Prim, item: Item, message: str, channel: str
    ) -> dict[str, Any]:
        return {
            "object_id": obj.object_id,
            "prim_id": prim.prim_id,
            "item_id": item.item_id,
            "object_name": obj.name,
            "message": message,
            "channel": channel,
            "item": {
                "root_id": obj.object_id,
                "prim_id": prim.prim_id,
                "item_id": item.item_id,
                "name": item.name,
                "language": item.language,
            },
        }

    async def _runtime_g1(self, prim: Prim, item: Item, message: str) -> None:
        """G1 (viewer-source.md §4): forwarded only for a prim holding a live-sync subscription,
        only to that subscriber; fields script_id (the subscription; the script's own when it is
        subscribed, as the error header's script name re-picks it), object_id = the speaking prim,
        object_name, message. A text whose first line ends "Script run-time error" is a
        runtime.error with error "", line 0 and stack = the other lines (only if any); anything
        else is a runtime.debug. No prim_id, item_id, item, channel, column."""
        found = self._runtime_subscriber(prim.prim_id, item.item_id)
        if found is None:
            return
        script_id, conn = found
        params: dict[str, Any] = {
            "script_id": script_id,
            "object_id": prim.prim_id,
            "object_name": prim.name,
            "message": message,
        }
        lines = message.split("\n")
        if lines[0].rstrip().endswith("Script run-time error"):
            params.update(error="", line=0)
            if len(lines) > 1:
                params["stack"] = lines[1:]
            await self._send_to(conn, "runtime.error", params)
        else:
            await self._send_to(conn, "runtime.debug", params)

    async def run_script(self, item_id: str) -> None:
        """What a (re)started script says: owner-says and the SIM_RUNTIME_ERROR marker. A script
        deleted before it got to run (a create, then an rm) says nothing."""
        found = self.world.find_item(item_id)
        if found is None:
            return
        obj, prim, item = found
        if not item.is_script or not item.running or item.compiled_content is None:
            return
        for ev in runtime_events(item.compiled_content, item.language):
            if ev.kind == "debug":
                await self.emit_debug(item.item_id, ev.message, "owner_say")
                continue
            if item.language == "luau":
                message = f"{item.name}:{ev.line}: {ev.message}"
                stack = [f"{item.name}:{ev.line}"]
            else:
                message = f"Script run-time error\n{ev.message}"
                stack = []
            await self.emit_error(item.item_id, message, ev.line, 0, error=ev.message, stack=stack)
            if not item.faulted:
                item.faulted = True
                await self.send_inventory_update(obj, prim)
            break
