"""Conformance of the simulated viewer with what newer viewers do (viewer_version=2).

Each test follows a point of /work/shared/research/newer-viewers.md and the newer protocol document
(AlchemyViewer/Alchemy doc/external-editor-json-rpc.md); V1 counterparts follow the older document.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from slfs.protocol.constants import NULL_UUID
from slfs.sim import SimViewer
from slfs.sim.live_sync import script_id_for
from slfs.sim.world import AGENT_RIGHTS, item_from_json, world_from_json

MISSING = "00000000-0000-4000-8000-000000000000"
REGION_DOWN = (-32005, "The object's region is not connected")
EMBEDDED = "The notecard holds embedded items, which saving its text would lose; edit it in the viewer"


def obj_id(sim: SimViewer, name: str, n: int = 0) -> str:
    return [o.object_id for o in sim.world.objects.values() if o.name == name][n]


def ids(sim: SimViewer, item_name: str) -> dict[str, str]:
    for obj in sim.world.objects.values():
        for prim in obj.prims():
            for item in prim.inventory:
                if item.name == item_name:
                    return {"prim_id": prim.prim_id, "item_id": item.item_id}
    raise KeyError(item_name)


def inv_item(update: dict[str, Any], item_id: str) -> dict[str, Any]:
    return next(i for i in update["inventory"] if i["item_id"] == item_id)


# --- 1. embedded_items is a number ------------------------------------------------------------------


async def test_v2_content_get_embedded_items_is_a_count(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        note = ids(sim, "Notes/Todo")
        sim.item(note["item_id"]).embedded_items = 3
        async with connect(sim) as c:
            res = await c.result("object.content.get", note)
            # "embedded_items is a number, the count of inventory items embedded in the notecard"
            assert res["embedded_items"] == 3 and res["encoding"] == "utf-8"
            plain = await c.result("object.content.get", ids(sim, "x.lsl"))
            assert plain["embedded_items"] == 0
            script = await c.result("object.content.get", ids(sim, "Hello"))
            assert "embedded_items" not in script  # notecards only


async def test_v1_content_get_has_no_embedded_items(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1)
        note = ids(sim, "Notes/Todo")
        sim.item(note["item_id"]).embedded_items = 3
        async with connect(sim) as c:
            res = await c.result("object.content.get", note)
            assert "embedded_items" not in res and "encoding" not in res  # the older document has neither


def test_world_embedded_items_roundtrip() -> None:
    world = world_from_json({})
    item = item_from_json({"item_id": "A", "name": "n", "type": "notecard", "embedded_items": 2}, world)
    assert item.embedded_items == 2 and item.to_world()["embedded_items"] == 2
    again = item_from_json(item.to_world(), world)
    assert again.embedded_items == 2
    # a script carries none; a malformed count is ignored
    assert item_from_json({"item_id": "B", "type": "script", "embedded_items": 2}, world).embedded_items == 0
    assert item_from_json({"item_id": "C", "type": "notecard", "embedded_items": []}, world).embedded_items == 0


# --- 2. a notecard holding embedded items cannot be saved (V2) ---------------------------------------


async def test_v2_save_of_notecard_with_embedded_items_refused(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        note = ids(sim, "Notes/Todo")
        item = sim.item(note["item_id"])
        item.embedded_items = 1
        before = (item.content, item.revision)
        async with connect(sim) as c:
            assert (await c.error("object.content.save", {**note, "content": "new"})) == (-32003, EMBEDDED)
            await c.drain(sim)
            assert (item.content, item.revision, item.embedded_items) == (*before, 1)  # nothing stored
            assert not c.received("object.update")


async def test_v1_save_of_notecard_with_embedded_items_loses_them(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1)
        note = ids(sim, "Notes/Todo")
        item = sim.item(note["item_id"])
        item.embedded_items = 2
        async with connect(sim) as c:
            assert (await c.result("object.content.save", {**note, "content": "new"}))["success"] is True
            assert item.content == "new" and item.embedded_items == 0


# --- 3. placeholder names and deferred properties (V2) -----------------------------------------------


async def test_v2_deferred_properties_placeholders_then_updates(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2, properties_delay=None)
        house = obj_id(sim, "House")
        obj = sim.world.objects[house]
        obj.deferred_properties = True
        async with connect(sim) as c:
            listed = next(o for o in (await c.result("object.list"))["objects"] if o["object_id"] == house)
            # "object_name is 'Object' and a child's link_name is 'Link #<link_number>'"
            assert listed["object_name"] == "Object"
            assert [lo["link_name"] for lo in listed["linked_objects"]] == [
                f"Link #{lo['link_number']}" for lo in listed["linked_objects"]
            ]
            # "permissions.owner is derived from the agent's rights, next_owner is absent, owner_id
            # absent or the null UUID, can_save_back may be false"
            assert listed["permissions"] == {"owner": obj.root.permissions.owner & AGENT_RIGHTS}
            assert all("next_owner" not in lo["permissions"] for lo in listed["linked_objects"])
            assert "owner_id" not in listed and listed["can_save_back"] is False
            await sim.publish(house)  # a publish while deferred carries the same placeholders
            pub = (await c.notification("object.publish"))["object"]
            assert pub["object_name"] == "Object" and "next_owner" not in pub["permissions"]

            await sim.deliver_properties(house)
            root = await c.notification("object.update")
            # "root prim properties = any subset of object_name, object_description, owner_id,
            # permissions, can_save_back"; "an object.update then carries the full permissions and
            # the real owner_id"
            assert root == {
                "object_id": house,
                "object_name": "House",
                "object_description": obj.root.description,
                "owner_id": sim.world.agent_id,
                "permissions": obj.root.permissions.to_json(),
                "can_save_back": True,
            }
            for child in obj.children:
                upd = await c.notification("object.update")
                # "child prim properties = link_id with any subset of link_name, link_description,
                # permissions"
                assert upd == {
                    "object_id": house,
                    "changes": {
                        "linked_objects": {
                            "modified": [
                                {
                                    "link_id": child.prim_id,
                                    "link_name": child.name,
                                    "link_description": child.description,
                                    "permissions": child.permissions.to_json(),
                                }
                            ]
                        }
                    },
                }
            assert not obj.deferred_properties
            again = next(o for o in (await c.result("object.list"))["objects"] if o["object_id"] == house)
            assert again["object_name"] == "House" and again["owner_id"] == sim.world.agent_id
            await sim.deliver_properties(house)  # delivered already: nothing more
            await c.drain(sim)
            assert len(c.received("object.update")) == 1 + len(obj.children)


async def test_v2_deferred_properties_arrive_after_delay(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2, properties_delay=0.1, deferred_owner_id="null")
        lamp = obj_id(sim, "Unpublished Lamp")
        no_mod = obj_id(sim, "No Modify Object")
        sim.world.objects[lamp].deferred_properties = True
        sim.world.objects[no_mod].deferred_properties = True
        async with connect(sim) as c:
            await c.result("object.request", {"object_id": lamp})
            pub = (await c.notification("object.publish"))["object"]
            assert pub["object_name"] == "Object" and pub["owner_id"] == NULL_UUID
            # the world-published one had its properties delivered after the first session.ok
            upd = await c.notification("object.update")
            assert upd["object_id"] == no_mod and upd["object_name"] == "No Modify Object"
            assert upd["permissions"] == {"owner": 0x8A000, "next_owner": 0x82000}
            upd = await c.notification("object.update")
            assert upd["object_id"] == lamp and upd["object_name"] == "Unpublished Lamp"
            assert upd["owner_id"] == sim.world.agent_id and "next_owner" in upd["permissions"]


async def test_v1_ignores_deferred_properties(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1, properties_delay=0.01)
        house = obj_id(sim, "House")
        sim.world.objects[house].deferred_properties = True
        async with connect(sim) as c:
            listed = next(o for o in (await c.result("object.list"))["objects"] if o["object_id"] == house)
            assert listed["object_name"] == "House" and "next_owner" in listed["permissions"]
            await sim.publish(house)
            await c.notification("object.publish")
            await c.drain(sim)
            assert not c.received("object.update")


def test_world_deferred_and_region_roundtrip() -> None:
    data = {
        "objects": [
            {"object_id": "A", "object_name": "a", "deferred_properties": True, "region_connected": False},
            {"object_id": "B", "object_name": "b"},
        ]
    }
    world = world_from_json(data)
    assert world.objects["a"].deferred_properties and not world.objects["a"].region_connected
    assert not world.objects["b"].deferred_properties and world.objects["b"].region_connected
    out = world.to_json()["objects"]
    assert out[0]["deferred_properties"] is True and out[0]["region_connected"] is False
    assert "deferred_properties" not in out[1] and "region_connected" not in out[1]
    assert world_from_json(world.to_json()).to_json() == world.to_json()


# --- 4. a region that is not connected (V2) ----------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["object.content.get", "object.content.save", "object.item.delete", "object.item.modify"]
)
async def test_v2_region_down_common_validator(start_sim, connect, method: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        hello = ids(sim, "Hello")
        extra = {"content": "x", "name": "New"}
        sim.set_region_connected(obj_id(sim, "Hello Cube"), False)
        sim.set_region_connected(obj_id(sim, "Unpublished Lamp"), False)
        async with connect(sim) as c:
            assert (await c.error(method, {**hello, **extra})) == REGION_DOWN
            # "since it comes before the item lookup, a region that is down answers -32005 even
            # for an unknown item"
            assert (await c.error(method, {"prim_id": hello["prim_id"], "item_id": MISSING, **extra})) == REGION_DOWN
            # ... and after "object published" and "prim exists"
            assert (await c.error(method, {**ids(sim, "Lamp"), **extra})) == (-32003, "Object is not published")
            assert (await c.error(method, {"prim_id": MISSING, "item_id": MISSING, **extra}))[0] == -32602
            sim.set_region_connected(hello["prim_id"], True)  # any prim id of the object will do
            assert "error" not in await c.call(method, {**hello, **extra})


@pytest.mark.parametrize("method", ["object.script.set_running", "object.script.reset"])
async def test_v2_region_down_script_methods(start_sim, connect, method: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        x = ids(sim, "x")
        sim.set_region_connected(obj_id(sim, "Hello Cube"), False)
        sim.set_region_connected(obj_id(sim, "Locked Box"), False)
        async with connect(sim) as c:
            assert (await c.error(method, {**x, "running": True})) == REGION_DOWN
            # these validate on their own; the newer document lists the region check last in their
            # error table, after the script lookup and the permission check
            assert (await c.error(method, {"prim_id": x["prim_id"], "item_id": MISSING}))[0] == -32602
            assert (await c.error(method, ids(sim, "NoMod Script"))) == (-32003, "No modify permission on script")


async def test_v2_region_down_item_create(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        cube = obj_id(sim, "Hello Cube")
        no_mod = obj_id(sim, "No Modify Object")
        sim.set_region_connected(cube, False)
        sim.set_region_connected(no_mod, False)
        async with connect(sim) as c:
            params = {"name": "N", "type": "notecard"}
            assert (await c.error("object.item.create", {"prim_id": cube, **params})) == REGION_DOWN
            # the document's order: modify on the prim before the region
            assert (await c.error("object.item.create", {"prim_id": no_mod, **params})) == (
                -32003,
                "No modify permission on prim",
            )
            assert [i.name for i in sim.world.objects[cube].root.inventory].count("N") == 0


async def test_v1_region_down_changes_nothing(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1)
        hello = ids(sim, "Hello")
        sim.set_region_connected(hello["prim_id"], False)
        async with connect(sim) as c:
            assert (await c.result("object.content.get", hello))["success"] is True
            assert (await c.result("object.script.reset", hello)) == {"success": True}


# --- 5. saves made in the viewer ----------------------------------------------------------------------


async def test_v2_viewer_save_script_compiled_broadcast(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        hello = ids(sim, "Hello")
        cube = obj_id(sim, "Hello Cube")
        before = sim.item(hello["item_id"]).revision
        async with connect(sim) as a, connect(sim) as b:
            await sim.viewer_save(hello["item_id"], 'default { state_entry() { llOwnerSay("saved"); } }')
            for c in (a, b):  # no subscription: broadcast to every connection
                note = await c.notification("script.compiled")
                assert note == {
                    "script_id": script_id_for(hello["prim_id"], hello["item_id"]),  # md5 of prim_item
                    "success": True,
                    "running": True,
                    "object_id": cube,
                    "prim_id": hello["prim_id"],
                    "item_id": hello["item_id"],
                }
                upd = await c.notification("object.update")
                # "plus an object.update with that item's revision higher"
                assert inv_item(upd, hello["item_id"])["revision"] > before
                assert (await c.notification("runtime.debug"))["message"] == "saved"
            assert sim.item(hello["item_id"]).compiled_content == sim.item(hello["item_id"]).content

            await sim.viewer_save(hello["item_id"], "default { syntax error }")
            note = await a.notification("script.compiled")
            assert note["success"] is False and note["diagnostics"][0]["format"] == "lsl"
            assert note["running"] is True  # the previous version keeps running
            await a.notification("object.update")


async def test_v2_viewer_save_child_prim_and_notecard(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        light = ids(sim, "Light")
        config = ids(sim, "Config")
        sim.item(config["item_id"]).embedded_items = 2
        async with connect(sim) as c:
            await sim.viewer_save(light["item_id"], 'll.OwnerSay("x")\n', running=False)
            note = await c.notification("script.compiled")
            assert note["object_id"] == obj_id(sim, "House") and note["prim_id"] == light["prim_id"]
            assert note["running"] is False
            upd = await c.notification("object.update")
            assert upd["changes"]["linked_objects"]["modified"][0]["link_id"] == light["prim_id"]

            await sim.viewer_save(config["item_id"], "new config")
            upd = await c.notification("object.update")
            assert upd["changes"]["linked_objects"]["modified"][0]["link_id"] == config["prim_id"]
            assert sim.item(config["item_id"]).content == "new config"
            assert sim.item(config["item_id"]).embedded_items == 2  # the viewer's editor keeps them
            assert len(c.received("script.compiled")) == 1  # notecards are not compiled


async def test_viewer_save_unpublished_and_content_save_send_no_script_compiled(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        lamp = ids(sim, "Lamp")
        hello = ids(sim, "Hello")
        async with connect(sim) as c:
            await sim.viewer_save(lamp["item_id"], "default { state_entry() { } }")
            assert sim.item(lamp["item_id"]).content == "default { state_entry() { } }"
            # "object.content.save still answers inline; no script.compiled follows it"
            await c.result("object.content.save", {**hello, "content": "default { state_entry() { } }"})
            await c.notification("object.update")
            await c.drain(sim)
            assert not c.received("script.compiled")
            assert not [n for n in sim.notifications_sent if n[0] == "script.compiled"]


async def test_v1_viewer_save_sends_no_script_compiled(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1)
        hello = ids(sim, "Hello")
        async with connect(sim) as c:
            await sim.viewer_save(hello["item_id"], "default { state_entry() { } }")
            # the older document: script.compiled goes only to the connection subscribed to the
            # script, and the sim has no subscriptions; the inventory still changes
            upd = await c.notification("object.update")
            assert "revision" not in inv_item(upd, hello["item_id"])
            await c.drain(sim)
            assert not c.received("script.compiled")


# --- 6. the stoi and NUL answers to a failed LSL compile ---------------------------------------------

BAD_LSL = "default {\n    syntax error here\n}\n"


async def test_compile_failure_stoi(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2, compile_failure="stoi")
        hello = ids(sim, "Hello")
        item = sim.item(hello["item_id"])
        before = item.revision
        async with connect(sim) as c:
            # "answer a failed LSL compile with -32603 'Internal error: stoi' instead of diagnostics"
            assert (await c.error("object.content.save", {**hello, "content": BAD_LSL})) == (
                -32603,
                "Internal error: stoi",
            )
            assert item.content == BAD_LSL and item.revision > before  # stored all the same
            upd = await c.notification("object.update")
            assert inv_item(upd, hello["item_id"])["revision"] == item.revision
            # a good compile and a Luau failure are answered as usual
            res = await c.result("object.content.save", {**hello, "content": "default { state_entry() { } }"})
            assert res["compiled"] is True
            res = await c.result("object.content.save", {**ids(sim, "Counter"), "content": "if x\n"})
            assert res["compiled"] is False and res["diagnostics"]


async def test_compile_failure_nul(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2, compile_failure="nul")
        hello = ids(sim, "Hello")
        async with connect(sim) as c:
            res = await c.result("object.content.save", {**hello, "content": BAD_LSL})
            assert res["success"] is True and res["compiled"] is False
            (d,) = res["diagnostics"]
            assert d["row"] == 0 and d["column"] == 0
            assert d["message"] and set(d["message"]) == {"\x00"}  # "one answered with NUL bytes"
            assert sim.item(hello["item_id"]).content == BAD_LSL


def test_compile_failure_argument_checked() -> None:
    with pytest.raises(ValueError):
        SimViewer(world_from_json({}), compile_failure="segfault")


# --- 7. object.item.create errors (V2) ---------------------------------------------------------------


async def test_v2_item_create_no_modify_prim(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        no_mod = obj_id(sim, "No Modify Object")
        async with connect(sim) as c:
            params = {"prim_id": no_mod, "name": "N", "type": "script", "vm": "mono"}
            assert (await c.error("object.item.create", params)) == (-32003, "No modify permission on prim")
            # after "Object is not published" in the document's table
            lamp = obj_id(sim, "Unpublished Lamp")
            sim.world.objects[lamp].root.permissions.owner = 0x8A000
            assert (await c.error("object.item.create", {**params, "prim_id": lamp})) == (
                -32003,
                "Object is not published",
            )


async def test_v2_item_create_refused_by_simulator(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        cube = obj_id(sim, "Hello Cube")
        before = [i.item_id for i in sim.world.objects[cube].root.inventory]
        sim.refuse_next_create(cube, "Inventory is full")
        async with connect(sim) as c:
            params = {"prim_id": cube, "name": "Fresh", "type": "notecard"}
            assert (await c.error("object.item.create", params)) == (
                -32603,
                "Internal error: Item creation failed: Inventory is full",
            )
            assert [i.item_id for i in sim.world.objects[cube].root.inventory] == before  # nothing created
            assert not c.received("object.update")
            # no name left behind: the next create gets the very name, and is not refused
            assert (await c.result("object.item.create", params))["name"] == "Fresh"


async def test_v1_item_create_refused_times_out(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1)
        cube = obj_id(sim, "Hello Cube")
        sim.refuse_next_create(cube)
        async with connect(sim) as c:
            params = {"prim_id": cube, "name": "Fresh", "type": "notecard"}
            assert (await c.error("object.item.create", params)) == (-32001, "Timed out waiting for item creation")
            assert (await c.result("object.item.create", params))["name"] == "Fresh"


# --- 8. object.content.save: content required, vm checked first (V2) ---------------------------------


async def test_v2_content_save_content_and_vm(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        hello = ids(sim, "Hello")
        note = ids(sim, "Notes/Todo")
        item = sim.item(hello["item_id"])
        async with connect(sim) as c:
            assert (await c.error("object.content.save", hello)) == (-32602, "Invalid params: content is required")
            before = (item.content, item.revision, item.vm)
            # "an unknown vm is -32602 before anything is uploaded"
            assert (await c.error("object.content.save", {**hello, "content": "default{}", "vm": "jvm"})) == (
                -32602,
                "Invalid params: vm must be 'luau', 'mono', or 'lsl2'",
            )
            await c.drain(sim)
            assert (item.content, item.revision, item.vm) == before and not c.received("object.update")
            # "content is required (may be empty)"
            assert (await c.result("object.content.save", {**note, "content": ""}))["success"] is True
            assert sim.item(note["item_id"]).content == ""
            res = await c.result("object.content.save", {**hello, "content": ""})
            assert res["success"] is True and item.content == ""


# --- 9. teleport and camera focus stay inside published linksets (V2) --------------------------------


@pytest.mark.parametrize("command", ["viewer.teleport", "viewer.camera.focus"])
async def test_v2_teleport_and_focus_need_a_published_linkset(start_sim, connect, command: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        door = ids(sim, "Door Script")["prim_id"]
        async with connect(sim) as c:
            for target in (obj_id(sim, "Unpublished Lamp"), MISSING):
                code, _message = await c.error("command.execute", {"command": command, "params": {"object_id": target}})
                assert code == -32003
            # any prim of a published linkset will do
            res = await c.result("command.execute", {"command": command, "params": {"object_id": door}})
            assert res == {"success": True}


async def test_v1_teleport_to_unpublished_object(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1)
        lamp = obj_id(sim, "Unpublished Lamp")
        async with connect(sim) as c:
            res = await c.result("command.execute", {"command": "viewer.teleport", "params": {"object_id": lamp}})
            assert res == {"success": True}
