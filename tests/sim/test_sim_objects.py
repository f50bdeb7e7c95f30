"""Conformance of the simulated viewer: the object explorer methods, their errors and ordering."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from slfs.protocol.rpc_errors import RpcError
from slfs.sim import SimViewer

MISSING = "00000000-0000-4000-8000-000000000000"


def obj_id(sim: SimViewer, name: str, n: int = 0) -> str:
    return [o.object_id for o in sim.world.objects.values() if o.name == name][n]


def ids(sim: SimViewer, item_name: str, object_name: str | None = None) -> dict[str, str]:
    for obj in sim.world.objects.values():
        if object_name is not None and obj.name != object_name:
            continue
        for prim in obj.prims():
            for item in prim.inventory:
                if item.name == item_name:
                    return {"prim_id": prim.prim_id, "item_id": item.item_id}
    raise KeyError(item_name)


COMMON = [
    ({}, (-32602, "Invalid params: prim_id and item_id are required")),
    ({"prim_id": MISSING}, (-32602, "Invalid params: prim_id and item_id are required")),
    ({"prim_id": MISSING, "item_id": MISSING}, (-32602, "Invalid params: Prim not found")),
]


@pytest.mark.parametrize(
    "method", ["object.content.get", "object.content.save", "object.item.delete", "object.item.modify"]
)
async def test_common_preconditions(start_sim, connect, method: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        extra: dict[str, Any] = {"content": "x", "name": "New"}
        async with connect(sim) as c:
            for params, expected in COMMON:
                assert (await c.error(method, {**params, **extra})) == expected
            hello = ids(sim, "Hello")
            assert (await c.error(method, {"prim_id": hello["prim_id"], "item_id": MISSING, **extra})) == (
                -32602,
                "Invalid params: Item not found in prim inventory",
            )
            wood = ids(sim, "Wood")
            assert (await c.error(method, {**wood, **extra})) == (
                -32602,
                "Invalid params: Item is not a script or notecard",
            )
            lamp = ids(sim, "Lamp")  # in the unpublished object
            assert (await c.error(method, {**lamp, **extra})) == (-32003, "Object is not published")
            if method != "object.content.get":
                assert (await c.error(method, {**ids(sim, "NoMod Script"), **extra})) == (
                    -32003,
                    "Insufficient permissions",
                )
                assert (await c.error(method, {**ids(sim, "Info"), **extra})) == (
                    -32003,
                    "No modify permission on object",
                )


async def test_content_get_permissions(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            for name in ("NoMod Script", "NoCopy Script"):
                assert (await c.error("object.content.get", ids(sim, name))) == (
                    -32003,
                    "Insufficient permissions",
                )
            # no-modify notecards stay readable
            res = await c.result("object.content.get", ids(sim, "Read Me"))
            assert res["content"].startswith("You may read this")
            res = await c.result("object.content.get", ids(sim, "Notes/Todo"))
            assert res == {
                "success": True,
                **ids(sim, "Notes/Todo"),
                "content": sim.item(res["item_id"]).content,
            }


async def test_content_get_v2_extras(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with connect(sim) as c:
            note = await c.result("object.content.get", ids(sim, "Notes/Todo"))
            # a count of the items embedded beside the text (newer document), not a list
            assert note["encoding"] == "utf-8" and note["embedded_items"] == 0
            script = await c.result("object.content.get", ids(sim, "Hello"))
            assert script["encoding"] == "utf-8" and "embedded_items" not in script


async def test_publish_list_and_request(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            listed = (await c.result("object.list"))["objects"]
            names = sorted(o["object_name"] for o in listed)
            assert names.count("Twin") == 2 and "Unpublished Lamp" not in names
            house = next(o for o in listed if o["object_name"] == "House")
            assert [lo["link_number"] for lo in house["linked_objects"]] == list(range(2, 9))
            assert sorted(lo["link_name"] for lo in house["linked_objects"]).count("Object") == 6
            cube = next(o for o in listed if o["object_name"] == "Hello Cube")
            assert "linked_objects" not in cube
            assert "Wood" not in [i["name"] for i in cube["inventory"]]
            assert "revision" not in cube["inventory"][0]  # V1

            lamp = obj_id(sim, "Unpublished Lamp")
            rid = await c.request("object.request", {"object_id": lamp})
            first = await c.recv()
            assert first["id"] == rid and first["result"] == {"success": True}  # answer first
            pub = await c.notification("object.publish")
            assert pub["object"]["object_id"] == lamp
            assert sim.world.objects[lamp].published

            assert (await c.error("object.request", {})) == (-32602, "Invalid params: No object_id specified")
            assert (await c.error("object.request", {"object_id": MISSING})) == (
                -32602,
                "Invalid params: Object not found",
            )
            assert (await c.error("object.request", {"object_id": obj_id(sim, "No Modify Object")})) == (
                -32003,
                "Permission denied",
            )


async def test_republish_sends_unpublish_first(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            cube = obj_id(sim, "Hello Cube")
            await c.result("object.request", {"object_id": cube})
            note = await c.notification("object.unpublish")
            assert note == {"object_id": cube, "reason": "republish"}
            assert (await c.notification("object.publish"))["object"]["object_id"] == cube


async def test_unpublish(start_sim, connect, viewer_version: int) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=viewer_version)
        async with connect(sim) as c:
            cube = obj_id(sim, "Hello Cube")
            rid = await c.request("object.unpublish", {"object_id": cube})
            first, second = await c.recv(), await c.recv()
            note = {
                "jsonrpc": "2.0",
                "method": "object.unpublish",
                "params": {"object_id": cube, "reason": "manual"},
            }
            resp = {"jsonrpc": "2.0", "id": rid, "result": {"success": True, "object_id": cube}}
            # V2 (real viewers): notification before the response; V1 as documented: after it
            assert [first, second] == ([note, resp] if viewer_version == 2 else [resp, note])
            assert (await c.error("object.unpublish", {"object_id": cube})) == (
                -32602,
                "Invalid params: Object is not published",
            )
            assert (await c.error("object.content.get", ids(sim, "Hello"))) == (
                -32003,
                "Object is not published",
            )


async def test_item_delete_update_before_response(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            target = ids(sim, "Notes/Todo")
            rid = await c.request("object.item.delete", target)
            first, second = await c.recv(), await c.recv()
            assert first["method"] == "object.update"
            assert first["params"]["object_id"] == obj_id(sim, "Hello Cube")
            assert target["item_id"] not in [i["item_id"] for i in first["params"]["inventory"]]
            assert second == {"jsonrpc": "2.0", "id": rid, "result": {"success": True, **target}}


async def test_child_inventory_update_shape(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            target = ids(sim, "Config")
            await c.result("object.item.delete", target)
            upd = c.received("object.update")[-1]
            assert upd == {
                "object_id": obj_id(sim, "House"),
                "changes": {
                    "linked_objects": {"modified": [{"link_id": target["prim_id"], "inventory": []}]}
                },
            }


async def test_item_create(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        cube = obj_id(sim, "Hello Cube")
        async with connect(sim) as c:
            res = await c.result(
                "object.item.create", {"prim_id": cube, "name": "Hello", "type": "script", "vm": "mono"}
            )
            assert res["name"] == "Hello 1" and res["prim_id"] == cube and res["type"] == "script"
            assert res["subtype"] == 0 and res["vm"] == "mono"
            upd = c.received("object.update")[-1]
            assert res["item_id"] in [i["item_id"] for i in upd["inventory"]]
            res2 = await c.result(
                "object.item.create", {"prim_id": cube, "name": "Hello", "type": "notecard", "text": "hi"}
            )
            assert res2["name"] == "Hello 2"
            assert sim.item(res2["item_id"]).content == "hi"
            luau = await c.result(
                "object.item.create", {"prim_id": cube, "name": "L", "type": "script", "vm": "luau"}
            )
            assert luau["subtype"] == 1


async def test_item_create_errors(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        cube = obj_id(sim, "Hello Cube")
        lamp = obj_id(sim, "Unpublished Lamp")
        async with connect(sim) as c:
            cases = [
                (
                    {"prim_id": cube, "name": "n", "type": "texture"},
                    (-32602, "Invalid params: Unsupported item type: texture"),
                ),
                ({"name": "n", "type": "notecard"}, (-32602, "Invalid params: prim_id is required")),
                ({"prim_id": MISSING, "type": "notecard"}, (-32602, "Invalid params: Prim not found")),
                ({"prim_id": cube, "type": "notecard"}, (-32602, "Invalid params: name is required")),
                (
                    {"prim_id": cube, "name": "n", "type": "script"},
                    (-32602, "Invalid params: vm must be 'luau', 'mono', or 'lsl2'"),
                ),
                (
                    {"prim_id": cube, "name": "n", "type": "script", "vm": "java"},
                    (-32602, "Invalid params: vm must be 'luau', 'mono', or 'lsl2'"),
                ),
                ({"prim_id": lamp, "name": "n", "type": "notecard"}, (-32003, "Object is not published")),
            ]
            for params, expected in cases:
                assert (await c.error("object.item.create", params)) == expected, params


async def test_item_create_one_in_flight_per_prim(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        sim.create_delay = 0.2
        cube = obj_id(sim, "Hello Cube")
        async with connect(sim) as c:
            r1 = await c.request("object.item.create", {"prim_id": cube, "name": "A", "type": "notecard"})
            r2 = await c.request("object.item.create", {"prim_id": cube, "name": "B", "type": "notecard"})
            second = await c.response(r2)
            assert second["error"] == {
                "code": -32600,
                "message": "Invalid Request: An item.create is already in flight for this prim",
            }
            assert (await c.response(r1))["result"]["name"] == "A"


async def test_item_modify(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        target = ids(sim, "Notes/Todo")
        async with connect(sim) as c:
            # the property check comes before the prim lookup
            assert (await c.error("object.item.modify", {"prim_id": MISSING, "item_id": MISSING})) == (
                -32602,
                "Invalid params: At least one property (name, description, or permissions) must be specified",
            )
            res = await c.result("object.item.modify", {**target, "name": "  Bad|Name\tü  "})
            assert res == {"success": True, **target}
            assert sim.item(target["item_id"]).name == "Notes/Todo"  # applied later
            upd = await c.notification("object.update")
            assert sim.item(target["item_id"]).name == "Bad Name"
            assert "Bad Name" in [i["name"] for i in upd["inventory"]]
            # an empty result is silently dropped
            sent = len(sim.notifications_sent)
            await c.result("object.item.modify", {**target, "name": "|||"})
            await sim.idle()  # the modify's deferred apply has run
            assert sim.item(target["item_id"]).name == "Bad Name"
            assert len(sim.notifications_sent) == sent
            await c.result("object.item.modify", {**target, "name": "x" * 100})
            await c.notification("object.update")
            assert sim.item(target["item_id"]).name == "x" * 63


async def test_object_modify(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        house = obj_id(sim, "House")
        door = ids(sim, "Door Script")["prim_id"]
        async with connect(sim) as c:
            assert (await c.error("object.modify", {})) == (-32602, "Invalid params: prim_id is required")
            assert (await c.error("object.modify", {"prim_id": house})) == (
                -32602,
                "Invalid params: At least one property (name, description, or permissions) must be specified",
            )
            assert (await c.error("object.modify", {"prim_id": MISSING, "name": "x"})) == (
                -32602,
                "Invalid params: Prim not found",
            )
            assert (
                await c.error("object.modify", {"prim_id": obj_id(sim, "Unpublished Lamp"), "name": "x"})
            ) == (-32003, "Object is not published")
            assert (
                await c.error("object.modify", {"prim_id": obj_id(sim, "No Modify Object"), "name": "x"})
            ) == (-32003, "No modify permission on object")
            assert (await c.result("object.modify", {"prim_id": house, "name": "Home"})) == {
                "success": True,
                "prim_id": house,
            }
            assert (await c.notification("object.update")) == {"object_id": house, "object_name": "Home"}
            await c.result("object.modify", {"prim_id": door, "description": "Back door"})
            assert (await c.notification("object.update")) == {
                "object_id": house,
                "changes": {
                    "linked_objects": {"modified": [{"link_id": door, "link_description": "Back door"}]}
                },
            }


async def test_set_running_and_reset(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        target = ids(sim, "x")
        async with connect(sim) as c:
            for method in ("object.script.set_running", "object.script.reset"):
                extra = {"running": True}
                assert (await c.error(method, {"prim_id": target["prim_id"], **extra})) == (
                    -32602,
                    "Invalid params: prim_id and item_id are required",
                )
                assert (await c.error(method, {"prim_id": MISSING, "item_id": MISSING, **extra})) == (
                    -32602,
                    "Invalid params: Prim not found",
                )
                assert (await c.error(method, {**ids(sim, "Lamp"), **extra})) == (
                    -32003,
                    "Object is not published",
                )
                assert (
                    await c.error(method, {"prim_id": target["prim_id"], "item_id": MISSING, **extra})
                ) == (-32602, "Invalid params: Script not found in prim inventory")
                assert (await c.error(method, {**ids(sim, "x.lsl"), **extra})) == (
                    -32602,
                    "Invalid params: Item is not a script",
                )
                assert (await c.error(method, {**ids(sim, "Wood"), **extra})) == (
                    -32602,
                    "Invalid params: Item is not a script",
                )
                assert (await c.error(method, {**ids(sim, "NoMod Script"), **extra})) == (
                    -32003,
                    "No modify permission on script",
                )
            assert not sim.item(target["item_id"]).running
            assert (await c.result("object.script.set_running", {**target, "running": True})) == {
                "success": True
            }
            assert not sim.item(target["item_id"]).running  # dispatched, not applied
            upd = await c.notification("object.update")
            assert next(i for i in upd["inventory"] if i["item_id"] == target["item_id"])["running"] is True
            await c.result("object.script.set_running", target)  # running missing: stop
            await c.notification("object.update")
            assert sim.item(target["item_id"]).running is False


async def test_reset_emits_runtime_output(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        hello = ids(sim, "Hello")
        cube = obj_id(sim, "Hello Cube")
        async with connect(sim) as c:
            await c.result("object.script.reset", hello)
            dbg = await c.notification("runtime.debug")
            assert dbg == {
                "object_id": cube,
                "prim_id": hello["prim_id"],
                "item_id": hello["item_id"],
                "object_name": "Hello Cube",
                "message": "Hello from the cube!",
                "channel": "owner_say",
                "item": {
                    "root_id": cube,
                    "prim_id": hello["prim_id"],
                    "item_id": hello["item_id"],
                    "name": "Hello",
                    "language": "lsl",
                },
            }


async def test_runtime_error_marker(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        faulty = ids(sim, "Faulty")
        async with connect(sim) as c:
            await c.result("object.script.set_running", {**faulty, "running": True})
            await c.notification("object.update")
            await c.result("object.script.reset", faulty)
            assert (await c.notification("runtime.debug"))["message"] == "About to fail"
            err = await c.notification("runtime.error")
            assert err["error"] == "Math Error" and err["line"] == 6 and err["stack"] == []
            assert err["item"]["name"] == "Faulty"
            upd = await c.notification("object.update")
            assert next(i for i in upd["inventory"] if i["item_id"] == faulty["item_id"])["faulted"] is True


async def test_content_save_lsl_diagnostics(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        hello = ids(sim, "Hello")
        old = sim.item(hello["item_id"]).content
        async with connect(sim) as c:
            bad = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("x";\n    }\n}\n'
            res = await c.result("object.content.save", {**hello, "content": bad})
            assert res["success"] is True and res["compiled"] is False
            assert res["prim_id"] == hello["prim_id"] and res["item_id"] == hello["item_id"]
            (d,) = res["diagnostics"]
            assert d == {"row": 5, "column": 23, "level": "ERROR", "message": "Syntax error", "format": "lsl"}
            item = sim.item(hello["item_id"])
            assert item.content == bad and item.compiled_content == old  # the old version keeps running
            res = await c.result("object.content.save", {**hello, "content": "integer x;\n"})
            assert res["diagnostics"][0]["message"].endswith("missing default state")
            good = 'default { state_entry() { llOwnerSay("new version"); } }'
            res = await c.result("object.content.save", {**hello, "content": good})
            assert res == {"success": True, **hello, "compiled": True}
            await c.notification("object.update")
            assert (await c.notification("runtime.debug"))["message"] == "new version"


async def test_content_save_luau_diagnostics(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        counter = ids(sim, "Counter")
        async with connect(sim) as c:
            res = await c.result(
                "object.content.save", {**counter, "content": "function f()\n    return 1\n"}
            )
            assert res["compiled"] is False
            (d,) = res["diagnostics"]
            assert d["row"] == 3 and d["column"] == 0 and d["level"] == "ERROR" and "format" not in d
            assert "to close 'function' at line 1" in d["message"]
            res = await c.result("object.content.save", {**counter, "content": "if x\n    print(1)\nend\n"})
            assert res["diagnostics"][0]["message"].startswith("Expected 'then'")
            res = await c.result("object.content.save", {**counter, "content": 'll.OwnerSay("ok")\n'})
            assert res["compiled"] is True and "diagnostics" not in res


async def test_content_save_notecard_and_nul(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        note = ids(sim, "Notes/Todo")
        script = ids(sim, "x")
        async with connect(sim) as c:
            assert (await c.result("object.content.save", {**note, "content": "new text"})) == {
                "success": True,
                **note,
            }
            assert (await c.result("object.content.get", note))["content"] == "new text"
            await c.result(
                "object.content.save", {**script, "content": "default{state_entry(){}}\x00garbage"}
            )
            assert (await c.result("object.content.get", script))["content"] == "default{state_entry(){}}"
            await c.result("object.content.save", {**note, "content": "é" * 40000})
            assert len(sim.item(note["item_id"]).content.encode()) <= 65536


async def test_v2_revision_and_notecard_limit(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        note = ids(sim, "Notes/Todo")
        async with connect(sim) as c:
            cube = next(
                o for o in (await c.result("object.list"))["objects"] if o["object_name"] == "Hello Cube"
            )
            before = next(i for i in cube["inventory"] if i["item_id"] == note["item_id"])["revision"]
            await c.result("object.content.save", {**note, "content": "v2"})
            upd = await c.notification("object.update")
            after = next(i for i in upd["inventory"] if i["item_id"] == note["item_id"])["revision"]
            assert after > before
            code, message = await c.error("object.content.save", {**note, "content": "a" * 65537})
            assert code == -32602 and "65536" in message
            # revision survives unpublish / republish
            await sim.unpublish(obj_id(sim, "Hello Cube"))
            await sim.publish(obj_id(sim, "Hello Cube"))
            pub = await c.notification("object.publish")
            assert (
                next(i for i in pub["object"]["inventory"] if i["item_id"] == note["item_id"])["revision"]
                == after
            )
            await sim.set_content(note["item_id"], "edited in world")
            upd = await c.notification("object.update")
            assert next(i for i in upd["inventory"] if i["item_id"] == note["item_id"])["revision"] > after


async def test_v2_identical_update_suppressed(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        target = ids(sim, "Hello")  # already running
        async with connect(sim) as c:
            await c.result("object.script.set_running", {**target, "running": True})
            await c.drain(sim)
            assert not c.received("object.update")
            assert not [n for n in sim.notifications_sent if n[0] == "object.update"]


async def test_commands(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        cube = obj_id(sim, "Hello Cube")
        async with connect(sim) as c:
            names = [x["command"] for x in (await c.result("command.list"))["commands"]]
            assert "viewer.script.recompile_all" in names and "viewer.teleport" in names
            assert (await c.error("command.execute", {})) == (-32602, "Invalid params: command is required")
            assert (await c.error("command.execute", {"command": "viewer.fly"})) == (
                -32602,
                "Invalid params: Unknown command: viewer.fly",
            )
            assert (
                await c.result(
                    "command.execute", {"command": "viewer.teleport", "params": {"object_id": cube}}
                )
            ) == {"success": True}
            assert (
                await c.result(
                    "command.execute",
                    {"command": "viewer.object.save_back_to_contents", "params": {"object_id": cube}},
                )
            ) == {"success": True, "result": {"object_id": cube}}
            assert (
                await c.error(
                    "command.execute",
                    {
                        "command": "viewer.script.recompile_all",
                        "params": {"object_id": cube, "target": "java"},
                    },
                )
            )[0] == -32602
            assert (
                await c.result(
                    "command.execute",
                    {
                        "command": "viewer.script.recompile_all",
                        "params": {"object_id": cube, "target": "auto"},
                    },
                )
            ) == {"success": True}


async def test_latency_and_fail_next(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(method_latency_ms={"object.content.get": 150})
        hello = ids(sim, "Hello")
        async with connect(sim) as c:
            start = trio.current_time()
            await c.result("object.content.get", hello)
            assert trio.current_time() - start >= 0.15
            sim.fail_next(
                "object.content.save", RpcError.standard(-32602, "Item not found in prim inventory")
            )
            assert (await c.error("object.content.save", {**hello, "content": "x"})) == (
                -32602,
                "Invalid params: Item not found in prim inventory",
            )
            assert (await c.result("object.content.save", {**hello, "content": "default{}"}))[
                "success"
            ] is True
            assert [m for m, _ in sim.calls].count("object.content.save") == 2


async def test_link_and_unlink(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        house = obj_id(sim, "House")
        async with connect(sim) as c:
            door = ids(sim, "Door Script")["prim_id"]
            await sim.unlink(house, door)
            upd = await c.notification("object.update")
            assert sorted(upd) == ["linked_objects", "object_id"]
            assert [lo["link_number"] for lo in upd["linked_objects"]] == list(range(2, 8))
            assert door not in [lo["link_id"] for lo in upd["linked_objects"]]
            twin = obj_id(sim, "Twin")
            await sim.link(house, {"link_id": twin})
            assert (await c.notification("object.unpublish")) == {"object_id": twin, "reason": "linked"}
            upd = await c.notification("object.update")
            assert (
                upd["linked_objects"][-1]["link_id"] == twin and upd["linked_objects"][-1]["link_number"] == 8
            )
