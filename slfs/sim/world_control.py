"""The simulated viewer's world-editing API and the notifications it sends about the world.

`WorldControl` is a mixin of `SimViewer` (server.py): what tests and demos do to the world from the
viewer's side (publish, in-world edits, saves in the viewer's own editor, region outages, ...) and
the object.publish / object.update notifications that follow. What scripts say at run time is in
runtime_output.py, the transport in transport.py, the handshake in handshake.py, the methods a
client calls in methods.py.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from slfs.protocol.constants import NULL_UUID

from .compiler import compile_source
from .generation import Generation
from .world import Item, Prim, SimObject, World, item_from_json, prim_from_json

NOTECARD_LIMIT = 65536


def dumps(obj: Any) -> str:
    """Viewer-style JSON: keys sorted, compact, UTF-8. A lone surrogate (a name a world file gives
    as the escape "\\ud800") cannot be UTF-8: it goes out as that escape, as a viewer's would."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return text


def cut_bytes(text: str, limit: int) -> str:
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


class WorldControl:
    """The world-editing half of SimViewer; the attributes below are SimViewer's."""

    world: World
    syntax_id: str
    properties_delay: float | None
    deferred_owner_id: str
    _nursery: trio.Nursery | None
    _last_inventory: dict[tuple[str, str], str]
    _refuse_create: dict[str, list[str]]
    _world_deferred_scheduled: bool
    profile: Generation

    @property
    def v2(self) -> bool:
        raise NotImplementedError

    # Transport's (annotations only, so that no stub shadows them whatever the order of the bases)
    broadcast: Callable[[str, dict[str, Any]], Awaitable[None]]
    _spawn_deferred: Callable[[Callable[[], Awaitable[None]], str], None]
    # LiveSync's (live_sync.py): the connection holding a live-sync subscription of a script (G1 runtime
    # output, viewer-source.md §4), whether a script is subscribed, and a directed notification
    _runtime_subscriber: Callable[[str, str], tuple[str, Any] | None]
    _is_subscribed: Callable[[str, str], bool]
    _send_to: Callable[[Any, str, dict[str, Any]], Awaitable[None]]
    # ScriptOutput's (runtime_output.py): what a (re)started script says
    run_script: Callable[[str], Awaitable[None]]
    # LiveSync's (live_sync.py): where a viewer-side compile's script.compiled goes
    _send_compiled: Callable[[SimObject | None, Prim | None, Item, list[dict[str, Any]]], Awaitable[None]]

    def _on_session_ok(self) -> None:
        """After each session.ok: objects the world file publishes with deferred properties (V2)
        get them properties_delay after the first client is in (a viewer publishes only while a
        client is connected)."""
        if self.profile.deferred_properties and not self._world_deferred_scheduled:
            self._world_deferred_scheduled = True
            for obj in self.world.objects.values():
                if obj.published and obj.deferred_properties:
                    self._schedule_properties(obj.object_id)

    def item(self, item_id: str) -> Item:
        """An item of any object, or of the agent's inventory."""
        return self._locate(item_id)[2]

    def prim_of(self, item_id: str) -> Prim:
        found = self.world.find_item(item_id)
        if found is None:
            raise KeyError(item_id)
        return found[1]

    def object_of(self, prim_or_item_id: str) -> SimObject:
        found = self.world.find_prim(prim_or_item_id)
        if found is not None:
            return found[0]
        item = self.world.find_item(prim_or_item_id)
        if item is None:
            raise KeyError(prim_or_item_id)
        return item[0]

    def _wire_object(self, obj: SimObject) -> dict[str, Any]:
        return obj.to_wire(
            revision=self.profile.revision,
            owner_id=self.world.agent_id,
            placeholders=self.profile.deferred_properties and obj.deferred_properties,
            placeholder_owner=NULL_UUID if self.deferred_owner_id == "null" else None,
            uuid_names=self.profile.name_fallback == "uuid",
        )

    def _remember_inventories(self, obj: SimObject) -> None:
        for prim in obj.prims():
            self._last_inventory[(obj.object_id, prim.prim_id)] = dumps(
                [i.to_wire(revision=self.profile.revision) for i in prim.explorable()]
            )

    async def publish(self, object_id: str) -> None:
        """Publish now (a republish sends object.unpublish {reason: republish} first)."""
        obj = self.world.objects[object_id.lower()]
        if obj.published:
            await self.broadcast("object.unpublish", {"object_id": obj.object_id, "reason": "republish"})
        obj.published = True
        self._remember_inventories(obj)
        await self.broadcast("object.publish", {"object": self._wire_object(obj)})
        if self.profile.deferred_properties and obj.deferred_properties:
            self._schedule_properties(obj.object_id)

    def _schedule_properties(self, object_id: str) -> None:
        if self.properties_delay is None or self._nursery is None:
            return
        delay = self.properties_delay

        async def later() -> None:
            await trio.sleep(delay)
            if object_id in self.world.objects:
                await self.deliver_properties(object_id)

        self._spawn_deferred(later, f"properties of {object_id}")

    async def deliver_properties(self, object_id: str) -> None:
        """V2: the prims' ObjectProperties arrive. Clears the object's `deferred_properties` and, if
        it is published, sends the documented property updates: one for the root (object_name,
        object_description, owner_id, full permissions, can_save_back), then one per child
        (changes.linked_objects.modified[{link_id, link_name, link_description, permissions}]).
        Does nothing for an object whose properties are not deferred."""
        obj = self.world.objects[object_id.lower()]
        if not obj.deferred_properties:
            return
        obj.deferred_properties = False
        if not (self.profile.deferred_properties and obj.published):
            return
        # Newer protocol document, ObjectUpdate: "Root prim properties changed: object_id, plus any
        # changed subset of object_name, object_description, owner_id, permissions, can_save_back";
        # "Deferred permission fields": the update carries the full owner/next_owner block and the
        # real owner_id.
        await self.broadcast(
            "object.update",
            {
                "object_id": obj.object_id,
                "object_name": obj.root.name,
                "object_description": obj.root.description,
                "owner_id": self.world.agent_id,
                "permissions": obj.root.permissions.to_json(),
                "can_save_back": True,
            },
        )
        for child in obj.children:
            mod = {
                "link_id": child.prim_id,
                "link_name": child.name,
                "link_description": child.description,
                "permissions": child.permissions.to_json(),
            }
            await self.broadcast(
                "object.update", {"object_id": obj.object_id, "changes": {"linked_objects": {"modified": [mod]}}}
            )

    def set_region_connected(self, object_id: str, connected: bool) -> None:
        """The region of an object (root or any prim id) goes down or comes back. V2 answers the
        object's item calls with -32005 "The object's region is not connected" while it is down;
        V1 (whose document has no such error) ignores it. No notification is sent."""
        self.object_of(object_id).region_connected = connected

    def refuse_next_create(self, prim_id: str, reason: str = "Inventory creation refused by the simulator") -> None:
        """The simulator refuses the next object.item.create in this prim: nothing is created. V2
        answers -32603 "Internal error: Item creation failed: <reason>"; V1 (whose document has no
        such error) sees no item arrive and answers -32001 "Timed out waiting for item creation"
        (at once here, where a viewer waits 30 s)."""
        self._refuse_create.setdefault(prim_id.lower(), []).append(reason)

    async def viewer_save(self, item_id: str, text: str, *, running: bool | None = None) -> None:
        """A save made in the viewer itself (its script editor, Script Studio, the compile queue).

        Stores the text with a new revision; a script is compiled (a failed compile keeps the old
        version running; `running` sets the run state after a good compile). Then, for a script,
        `script.compiled` as live_sync.py's `_send_compiled` routes it (V2: to the subscribed connection,
        else broadcast when the object is published; V1: only to the subscribed connection while
        the script's editor is open). Then the inventory update (in V2 the item's revision is
        higher), and a running script's runtime output. Notecards keep their embedded items (the
        viewer's editor carries them). Works for scripts in the agent's inventory too (no update,
        no runtime output: they are in no object)."""
        await self._viewer_side_save(item_id, text, running=running)

    async def _viewer_side_save(
        self, item_id: str, text: str, *, running: bool | None = None
    ) -> list[dict[str, Any]]:
        """viewer_save's work; also the save of a live-synced temp file (live_sync.py). The compile's
        diagnostics (empty: it compiled, or the item is no script)."""
        obj, prim, item = self._locate(item_id)
        self._store_content(item, text)
        diagnostics: list[dict[str, Any]] = []
        if item.is_script:
            diagnostics = compile_source(item.content, item.language)
            if not diagnostics:
                item.compiled_content = item.content
                item.faulted = False
                if running is not None:
                    item.running = running
            await self._send_compiled(obj, prim, item, diagnostics)
        if obj is not None and prim is not None:
            await self.send_inventory_update(obj, prim)
            if item.is_script and not diagnostics and item.running:
                await self.run_script(item.item_id)
        return diagnostics

    async def unpublish(self, object_id: str, reason: str = "user") -> None:
        obj = self.world.objects[object_id.lower()]
        if not obj.published:
            return
        obj.published = False
        await self.broadcast("object.unpublish", {"object_id": obj.object_id, "reason": reason})

    async def send_inventory_update(self, obj: SimObject, prim: Prim) -> None:
        """Root: {object_id, inventory}; child: changes.linked_objects.modified[{link_id, inventory}]."""
        if not obj.published:
            return
        inventory = [i.to_wire(revision=self.profile.revision) for i in prim.explorable()]
        key = (obj.object_id, prim.prim_id)
        text = dumps(inventory)
        if self.profile.suppress_identical_inventory and self._last_inventory.get(key) == text:
            return  # V2 / G4 suppress an update identical to the last one sent (viewer-source.md §2)
        self._last_inventory[key] = text
        if prim is obj.root:
            await self.broadcast("object.update", {"object_id": obj.object_id, "inventory": inventory})
        else:
            await self.broadcast(
                "object.update",
                {
                    "object_id": obj.object_id,
                    "changes": {
                        "linked_objects": {"modified": [{"link_id": prim.prim_id, "inventory": inventory}]}
                    },
                },
            )

    async def send_name_update(
        self, obj: SimObject, prim: Prim, *, name: bool = True, description: bool = False
    ) -> None:
        if not obj.published or not (name or description):
            return
        if prim is obj.root:
            params: dict[str, Any] = {"object_id": obj.object_id}
            if name:
                params["object_name"] = prim.name
            if description:
                params["object_description"] = prim.description
        else:
            mod: dict[str, Any] = {"link_id": prim.prim_id}
            if name:
                mod["link_name"] = prim.name
            if description:
                mod["link_description"] = prim.description
            params = {"object_id": obj.object_id, "changes": {"linked_objects": {"modified": [mod]}}}
        await self.broadcast("object.update", params)

    async def send_linkset_update(self, obj: SimObject) -> None:
        if not obj.published:
            return
        self._remember_inventories(obj)
        linked = obj.linked_wire(
            revision=self.profile.revision,
            placeholders=self.profile.deferred_properties and obj.deferred_properties,
            uuid_names=self.profile.name_fallback == "uuid",
        )
        await self.broadcast("object.update", {"object_id": obj.object_id, "linked_objects": linked})

    async def set_content(self, item_id: str, text: str) -> None:
        """An in-world edit by someone else: new content, new revision, an inventory update."""
        obj, prim, item = self._find(item_id)
        self._store_content(item, text)
        if item.is_script and not compile_source(item.content, item.language):
            item.compiled_content = item.content
        await self.send_inventory_update(obj, prim)

    async def rename_item(self, item_id: str, name: str) -> None:
        obj, prim, item = self._find(item_id)
        item.name = name
        await self.send_inventory_update(obj, prim)

    async def rename_prim(self, prim_id: str, name: str, description: str | None = None) -> None:
        found = self.world.find_prim(prim_id)
        if found is None:
            raise KeyError(prim_id)
        obj, prim = found
        prim.name = name
        if description is not None:
            prim.description = description
        await self.send_name_update(obj, prim, name=True, description=description is not None)

    async def add_item(
        self,
        prim_id: str,
        name: str,
        type: str = "notecard",
        *,
        content: str = "",
        subtype: int | None = None,
        vm: str | None = None,
        running: bool = False,
        permissions: dict[str, int] | None = None,
        item_id: str | None = None,
        description: str = "",
    ) -> Item:
        """Add an item in-world (no renaming); sends the inventory update. Returns the item."""
        found = self.world.find_prim(prim_id)
        if found is None:
            raise KeyError(prim_id)
        obj, prim = found
        data: dict[str, Any] = {
            "item_id": item_id or str(uuid.uuid4()),
            "name": name,
            "type": type,
            "content": content,
            "running": running,
            "description": description,
            "revision": self.world.next_revision(),
        }
        if subtype is not None:
            data["subtype"] = subtype
        if vm is not None:
            data["vm"] = vm
        if permissions is not None:
            data["permissions"] = permissions
        item = item_from_json(data, self.world)
        if item.is_script and not compile_source(item.content, item.language):
            item.compiled_content = item.content
        prim.inventory.append(item)
        await self.send_inventory_update(obj, prim)
        return item

    async def remove_item(self, item_id: str) -> None:
        obj, prim, item = self._find(item_id)
        prim.inventory.remove(item)
        await self.send_inventory_update(obj, prim)

    async def link(self, object_id: str, child: dict[str, Any]) -> Prim:
        """Link a prim (world-format dict: link_id, link_name, ...) as the last child.

        If `link_id` names an object of the world, that object is linked in (unpublished with
        reason "linked" and removed as an object)."""
        obj = self.world.objects[object_id.lower()]
        link_id = str(child["link_id"]).lower()
        other = self.world.objects.get(link_id)
        if other is not None and other is not obj:
            if other.published:
                await self.unpublish(link_id, reason="linked")
            del self.world.objects[link_id]
            obj.children.append(other.root)
            obj.children.extend(other.children)
            prim = other.root
        else:
            prim = prim_from_json(child, self.world, root=False)
            obj.children.append(prim)
        await self.send_linkset_update(obj)
        return prim

    async def unlink(self, object_id: str, link_id: str) -> SimObject:
        """Unlink a child; it becomes an unpublished object of its own. Links are renumbered."""
        obj = self.world.objects[object_id.lower()]
        prim = next(c for c in obj.children if c.prim_id == link_id.lower())
        obj.children.remove(prim)
        new = SimObject(prim, [], False)
        self.world.objects[prim.prim_id] = new
        await self.send_linkset_update(obj)
        return new

    async def send_syntax_change(self, syntax_id: str | None = None) -> str:
        self.syntax_id = syntax_id or str(uuid.uuid4())
        await self.broadcast("language.syntax.change", {"id": self.syntax_id})
        return self.syntax_id

    def _locate(self, item_id: str) -> tuple[SimObject | None, Prim | None, Item]:
        """An item of an object (with its object and prim) or of the agent's inventory (None, None)."""
        found = self.world.find_item(item_id)
        if found is not None:
            return found
        item = self.world.find_agent_item(item_id)
        if item is None:
            raise KeyError(item_id)
        return None, None, item

    def _find(self, item_id: str) -> tuple[SimObject, Prim, Item]:
        found = self.world.find_item(item_id)
        if found is None:
            raise KeyError(item_id)
        return found

    def _store_content(self, item: Item, text: str) -> None:
        if item.is_script:
            text = text.split("\x00", 1)[0]
        elif item.type == "notecard":
            text = cut_bytes(text, NOTECARD_LIMIT)
        item.content = text
        item.revision = self.world.next_revision()

    async def _send_item_update(self, item_id: str) -> None:
        found = self.world.find_item(item_id)
        if found is not None:
            await self.send_inventory_update(found[0], found[1])
