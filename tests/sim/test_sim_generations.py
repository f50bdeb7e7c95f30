"""The simulated viewer as each generation of the viewer's shipped C++ (research viewer-source.md).

G1 .. G4 (`SimViewer(generation=...)`, `slfs sim --viewer-generation`): handshake, challenge file,
auth gate, methods, content.save, script.compiled, runtime output, names and commands as §1-§6 of
the digest say. Raw WebSocket clients (conftest.py).
"""

from __future__ import annotations

import os
import stat
from typing import Any

import pytest
import trio
from test_sim_newer_viewers import ids
from trio_websocket import ConnectionClosed

from slfs.protocol.constants import NULL_UUID
from slfs.sim import SimViewer, sample_world
from slfs.sim.cli import build_parser, build_sim
from slfs.sim.generation import G1, G2, G3, G4, V1, V2, profile_for
from slfs.sim.live_sync import script_id_for

MISSING = "00000000-0000-4000-8000-000000000000"
BAD_LSL = "default {\n    syntax error here\n}\n"
GOOD_LSL = 'default { state_entry() { llOwnerSay("saved"); } }\n'
FIVE = {"live_sync", "compilation", "syntax_cache", "commands", "unified_diagnostics"}


def obj_id(sim: SimViewer, name: str) -> str:
    return next(o.object_id for o in sim.world.objects.values() if o.name == name)


async def answer_handshake(c: Any, answer: str | None) -> dict[str, Any]:
    """Read session.handshake and answer it with `answer`; the handshake params."""
    msg = await c.recv()
    assert msg["method"] == "session.handshake", msg
    result: dict[str, Any] = {"client_name": "t", "client_version": "1", "protocol_version": "1.0"}
    if answer is not None:
        result["challenge_response"] = answer
    await c.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    return msg["params"]


# --- profiles and construction -------------------------------------------------------------------


def test_profiles_and_viewer_version() -> None:
    assert profile_for(1, None) is V1 and profile_for(2, None) is V2
    assert [profile_for(1, g) for g in ("G1", "G2", "G3")] == [G1, G2, G3] and profile_for(2, "G4") is G4
    world = sample_world()
    assert SimViewer(world, generation="G4").viewer_version == 2
    assert SimViewer(world, generation="G2").viewer_version == 1
    assert SimViewer(world).generation is None and SimViewer(world, generation="G3").generation == "G3"
    with pytest.raises(ValueError):
        SimViewer(world, viewer_version=2, generation="G1")
    with pytest.raises(ValueError):
        SimViewer(world, generation="G5")
    # handshake timeout: 30 s in G3/G4 (and V1/V2), none in G1/G2 (§5); an explicit one wins
    assert SimViewer(world, generation="G1").handshake_timeout is None
    assert SimViewer(world, generation="G2").handshake_timeout is None
    assert SimViewer(world, generation="G3").handshake_timeout == 30.0
    assert SimViewer(world, generation="G4").handshake_timeout == 30.0
    assert SimViewer(world).handshake_timeout == 30.0
    assert SimViewer(world, generation="G1", handshake_timeout=2).handshake_timeout == 2


def test_cli_viewer_generation() -> None:
    sim = build_sim(build_parser().parse_args(["--viewer-generation", "G4"]))
    assert sim.generation == "G4" and sim.viewer_version == 2 and sim.profile is G4
    assert build_sim(build_parser().parse_args([])).generation is None
    from slfs.sim.cli import main

    with pytest.raises(SystemExit):
        main(["--viewer-version", "2", "--viewer-generation", "G2"])


# --- handshake --------------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_handshake_features_and_agent(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        async with connect(sim) as c:
            params = c.handshake_params
            features = {k for k, v in params["features"].items() if v}
            if gen == "G1":
                assert features == {"live_sync", "compilation", "syntax_cache"}
            else:
                assert features == FIVE
            ok = next(m for m in c.frames if m.get("method") == "session.ok")
            if gen == "G4":
                assert "agent_id" not in params and "agent_name" not in params
                assert ok["params"] == {"agent_id": sim.world.agent_id, "agent_name": sim.world.agent_name}
            else:
                assert params["agent_id"] == sim.world.agent_id and params["agent_name"] == sim.world.agent_name
                assert "params" not in ok  # session.ok has no params in G1-G3
            assert all(not os.path.exists(p) for p in sim.challenge_files)  # deleted on the answer


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_challenge_file_naming_and_mode(start_sim, connect, tmp_path, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen, tmpdir=str(tmp_path))
        async with connect(sim, login=False) as c:
            msg = await c.recv()
            path = msg["params"]["challenge"]
            with open(path, encoding="ascii") as f:
                content = f.read()
            assert content == content.lower().strip() and len(content) == 36
            mode = stat.S_IMODE(os.stat(path).st_mode)
            name = os.path.basename(path)
            assert os.path.dirname(path) == str(tmp_path)
            if gen == "G1":
                assert name == "sl_script_challenge.tmp"
                assert mode == 0o666 & ~_umask()  # default permissions
            elif gen == "G2":
                assert name == f"sl_script_challenge_{content}.tmp"  # the path holds the answer
                assert mode == 0o666 & ~_umask()
            else:
                other = name.removeprefix("sl_script_challenge_").removesuffix(".tmp")
                assert len(other) == 36 and other != content
                assert mode == 0o600
            await c.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"challenge_response": content.upper()}})
            await c.notification("session.ok")  # compared as a UUID, case-insensitive
            assert not os.path.exists(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


async def test_g1_concurrent_handshakes_share_the_challenge_file(start_sim, connect, tmp_path) -> None:
    """§6: G1's fixed name: a second handshake overwrites the first one's secret."""
    with trio.fail_after(10):
        sim = await start_sim(generation="G1", tmpdir=str(tmp_path))
        async with connect(sim, login=False) as a:
            first = await a.recv()
            async with connect(sim, login=False) as b:
                second = await b.recv()
                assert first["params"]["challenge"] == second["params"]["challenge"]
                with open(first["params"]["challenge"], encoding="ascii") as f:
                    secret = f.read()  # the second's
                await a.send({"jsonrpc": "2.0", "id": first["id"], "result": {"challenge_response": secret}})
                assert await a.notification("session.disconnect") == {
                    "reason": 2,
                    "message": "Invalid challenge response",
                }


@pytest.mark.parametrize("gen", ["G3", "G4"])
async def test_g3_g4_unwritable_challenge_disconnects(start_sim, connect, tmp_path, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen, tmpdir=str(tmp_path / "missing"))
        async with connect(sim, login=False) as c:
            assert await c.notification("session.disconnect") == {
                "reason": 4,
                "message": "Unable to issue a challenge",
            }


async def test_g2_unwritable_challenge_accepts_any_answer(start_sim, connect, tmp_path) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G2", tmpdir=str(tmp_path / "missing"))
        async with connect(sim, login=False) as c:
            params = await answer_handshake(c, None)
            assert "challenge" not in params
            await c.notification("session.ok")


async def test_g3_handshake_timeout(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G3", handshake_timeout=0.1)
        async with connect(sim, login=False) as c:
            await c.recv()
            assert await c.notification("session.disconnect") == {"reason": 3, "message": "Handshake timed out"}


@pytest.mark.parametrize(("gen", "expected"), [("G2", "Invalid challenge response"), ("G3", "Handshake failed")])
async def test_error_answer_to_handshake(start_sim, connect, gen: str, expected: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        async with connect(sim, login=False) as c:
            msg = await c.recv()
            await c.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32000, "message": "no"}})
            assert (await c.notification("session.disconnect"))["message"] == expected


# --- auth gate ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_auth_gate(start_sim, connect, gen: str) -> None:
    """§6: G1/G2 serve requests and send explorer notifications before session.ok; G3/G4 answer
    -32002 and send nothing."""
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        hello = ids(sim, "Hello")
        async with connect(sim, login=False) as c:
            await c.recv()  # session.handshake, left unanswered
            await sim.emit_debug(hello["item_id"], "before auth")
            await sim.send_syntax_change()
            resp = await c.call("system.status")
            if gen in ("G1", "G2"):
                assert resp["result"] == {"status": "OK"}
                got = c.received("runtime.debug")
                if gen == "G2":  # G1 forwards runtime output only to a live-sync subscriber
                    assert [m["message"] for m in got] == ["before auth"]
                assert len(c.received("language.syntax.change")) == 1
            else:
                assert resp["error"]["code"] == -32002
                assert c.received("runtime.debug") == [] and c.received("language.syntax.change") == []


# --- JSON-RPC layer -------------------------------------------------------------------------------------


async def test_g1_batches_each_element(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G1")
        async with connect(sim) as c:
            await c.send([])
            resp = await c.recv()
            assert resp["id"] is None and resp["error"] == {"code": -32600, "message": "Invalid Request: Empty batch"}
            await c.send([{"jsonrpc": "2.0", "id": 7, "method": "system.status"},
                          {"jsonrpc": "2.0", "id": 8, "method": "language.syntax.id"}])
            assert (await c.response(7))["result"] == {"status": "OK"}
            assert (await c.response(8))["result"] == {"id": sim.syntax_id}


async def test_g2_refuses_batches(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G2")
        async with connect(sim) as c:
            await c.send([{"jsonrpc": "2.0", "id": 7, "method": "system.status"}])
            assert (await c.recv())["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("gen", "method", "answered"),
    [
        ("G1", "system.status", True),
        ("G1", "language.syntax.id", False),
        ("G2", "command.list", False),
        ("G2", "object.list", True),
        ("G3", "command.list", False),
        ("G3", "language.syntax.id", True),
        ("G4", "command.list", True),
    ],
)
async def test_async_methods_as_notifications(start_sim, connect, gen: str, method: str, answered: bool) -> None:
    """§2 "Dispatch": each generation's synchronous methods run silently as notifications; an
    async one gets -32600 "Invalid Request: Method X cannot be called as a notification", id null."""
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        async with connect(sim) as c:
            await c.send({"jsonrpc": "2.0", "method": method, "params": {}})
            await c.result("system.status")
            errors = [m for m in c.frames if "error" in m]
            if answered:
                assert errors == [{"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32600, "message": f"Invalid Request: Method {method} cannot be called as a notification"}}]
            else:
                assert errors == []


@pytest.mark.parametrize(
    "method", ["command.list", "command.execute", "object.list", "object.script.set_running", "object.script.reset"]
)
async def test_g1_lacks_methods(start_sim, connect, method: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G1")
        async with connect(sim) as c:
            assert await c.error(method, {}) == (-32601, f"Method not found: {method}")
            assert method not in await c.result("system.listMethods")


async def test_g2_has_explorer_and_commands(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G2")
        async with connect(sim) as c:
            assert len((await c.result("command.list"))["commands"]) == 5
            assert (await c.result("object.list"))["objects"]
            assert await c.result("object.script.reset", ids(sim, "Hello")) == {"success": True}


# --- object.content.* -----------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_empty_content(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        async with connect(sim) as c:
            bogus = {"prim_id": MISSING, "item_id": MISSING, "content": ""}
            notes = {**ids(sim, "Notes/Todo"), "content": ""}
            if gen == "G4":
                assert await c.error("object.content.save", bogus) == (-32602, "Invalid params: Prim not found")
                assert (await c.result("object.content.save", notes))["success"] is True
            else:  # checked first, before the item checks
                expected = (-32602, "Invalid params: content is required")
                assert await c.error("object.content.save", bogus) == expected
                assert await c.error("object.content.save", notes) == expected


@pytest.mark.parametrize(("gen", "running"), [("G1", False), ("G2", True), ("G3", True), ("G4", True)])
async def test_save_without_running(start_sim, connect, gen: str, running: bool) -> None:
    """§2: G1 uploads with running forced false unless `running` is given; G2+ keep the state."""
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        hello = ids(sim, "Hello")
        async with connect(sim) as c:
            out = await c.result("object.content.save", {**hello, "content": GOOD_LSL})
            assert out["compiled"] is True
            await c.drain(sim)
            assert sim.item(hello["item_id"]).running is running
            await c.result("object.content.save", {**hello, "content": GOOD_LSL, "running": True})
            await c.drain(sim)
            assert sim.item(hello["item_id"]).running is True


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_failed_compile_answer(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        async with connect(sim) as c:
            lsl = await c.result("object.content.save", {**ids(sim, "Hello"), "content": BAD_LSL})
            luau = await c.result("object.content.save", {**ids(sim, "Counter"), "content": "local x = (\n"})
            assert lsl["compiled"] is False and luau["compiled"] is False
            if gen == "G1":
                assert "diagnostics" not in lsl and "diagnostics" not in luau
                assert lsl["errors"] == ["(1, 4) : ERROR : Syntax error"]  # 0-based
                [line] = luau["errors"]
                assert line.startswith('[string "Counter"]:') and line.split(":")[1].isdigit()
            else:
                assert "errors" not in lsl
                assert lsl["diagnostics"] == [
                    {"row": 2, "column": 5, "level": "ERROR", "message": "Syntax error", "format": "lsl"}
                ]
                [d] = luau["diagnostics"]
                assert d["column"] == 0 and d["row"] >= 1 and "format" not in d and d["level"] == "ERROR"


@pytest.mark.parametrize(
    ("gen", "message"),
    [("G1", "Internal error: stoi"), ("G2", "Internal error: stoi"), ("G3", "Internal error"),
     ("G4", "Internal error: stoi")],
)
async def test_stoi_failure(start_sim, connect, gen: str, message: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen, compile_failure="stoi")
        async with connect(sim) as c:
            assert await c.error("object.content.save", {**ids(sim, "Hello"), "content": BAD_LSL}) == (
                -32603,
                message,
            )


@pytest.mark.parametrize("gen", ["G1", "G2"])
async def test_nul_failure(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen, compile_failure="nul")
        async with connect(sim) as c:
            out = await c.result("object.content.save", {**ids(sim, "Hello"), "content": BAD_LSL})
            nul = "\x00" * len("Syntax error")
            if gen == "G1":
                assert out["errors"] == [nul]
            else:  # an unparsed line in content.save: row 0, column 0, no format (§3)
                assert out["diagnostics"] == [{"row": 0, "column": 0, "level": "ERROR", "message": nul}]


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_content_get_by_generation(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        async with connect(sim) as c:
            resp = await c.call("object.content.get", ids(sim, "Read Me"))  # notecard without modify
            notes = await c.result("object.content.get", ids(sim, "Notes/Todo"))
            if gen == "G1":  # G1 asked copy+modify of notecards too
                assert resp["error"] == {"code": -32003, "message": "Insufficient permissions"}
                assert "encoding" not in notes
            else:
                assert resp["result"]["success"] is True and notes["encoding"] == "utf-8"
            assert ("embedded_items" in notes) is (gen == "G4")
            if gen != "G1":  # items carry `revision` only in G4
                inventory = (await c.result("object.list"))["objects"][0]["inventory"]
                assert ("revision" in inventory[0]) is (gen == "G4")


# --- live sync --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_script_compiled_shape(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen, live_poll_interval=None)
        hello = ids(sim, "Hello")
        sid, _path = await sim.open_script_editor(hello["item_id"])
        async with connect(sim) as c:
            assert (await c.result("script.subscribe", {"script_id": sid}))["status"] == 0
            await sim.viewer_save(hello["item_id"], BAD_LSL)
            bad = await c.notification("script.compiled")
            await sim.viewer_save(hello["item_id"], GOOD_LSL)
            good = await c.notification("script.compiled")
            diag = {"row": 2, "column": 5, "level": "ERROR", "message": "Syntax error", "format": "lsl"}
            assert bad["success"] is False and good["success"] is True
            if gen == "G1":
                assert bad["errors"] == [diag] and "diagnostics" not in bad
                assert "errors" not in good and "diagnostics" not in good
            else:
                assert bad["diagnostics"] == [diag] and "errors" not in bad
                if gen == "G4":
                    assert good["diagnostics"] == []
                else:
                    assert "diagnostics" not in good
            with_ids = {"object_id", "prim_id", "item_id"} <= set(good)
            assert with_ids is (gen == "G4")


@pytest.mark.parametrize("gen", ["G1", "G2", "G3", "G4"])
async def test_editor_closed_disconnect_only_g1(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen, live_poll_interval=None)
        hello = ids(sim, "Hello")
        sid, _path = await sim.open_script_editor(hello["item_id"])
        async with connect(sim) as c:
            await c.result("script.subscribe", {"script_id": sid})
            await c.result("object.content.get", ids(sim, "Notes/Todo"))  # also using the explorer
            await sim.close_script_editor(sid)
            assert await c.notification("script.unsubscribe") == {"script_id": sid}
            if gen == "G1":
                assert await c.notification("session.disconnect") == {"reason": 1, "message": "Editor closed"}
                with pytest.raises(ConnectionClosed):
                    while True:
                        await c.recv()
            else:
                assert (await c.result("system.status")) == {"status": "OK"}
                assert c.received("session.disconnect") == []


# --- runtime output ---------------------------------------------------------------------------------------


async def test_g1_runtime_only_to_the_prims_subscriber(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G1", live_poll_interval=None)
        door = ids(sim, "Door Script")
        async with connect(sim) as other, connect(sim) as c:
            await sim.emit_debug(door["item_id"], "nobody listens")
            sid, _ = await sim.open_script_editor(door["item_id"])
            await c.result("script.subscribe", {"script_id": sid})
            await sim.emit_debug(door["item_id"], "hi")
            await sim.emit_error(door["item_id"], "Script run-time error\nMath Error", 3, 2, error="Math Error")
            debug = await c.notification("runtime.debug")
            error = await c.notification("runtime.error")
            # object_id is the speaking prim (a child here), not the root
            assert debug == {"script_id": sid, "object_id": door["prim_id"], "object_name": "Door", "message": "hi"}
            assert error == {
                "script_id": sid,
                "object_id": door["prim_id"],
                "object_name": "Door",
                "message": "Script run-time error\nMath Error",
                "error": "",
                "line": 0,
                "stack": ["Math Error"],
            }
            await c.drain(sim)
            await other.result("system.status")
            assert other.received("runtime.debug") == [] and other.received("runtime.error") == []
            assert len(c.received("runtime.debug")) == 1  # "nobody listens" was lost


@pytest.mark.parametrize("gen", ["G2", "G4"])
async def test_workspace_runtime_shape(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        door = ids(sim, "Door Script")
        house = obj_id(sim, "House")
        async with connect(sim) as c:
            await sim.emit_debug(door["item_id"], "hi")
            await sim.emit_error(door["item_id"], "Script run-time error\nMath Error", 3, 2, error="Math Error")
            debug = await c.notification("runtime.debug")
            error = await c.notification("runtime.error")
            item = {"root_id": house, "prim_id": door["prim_id"], "item_id": door["item_id"],
                    "name": "Door Script", "language": "lsl"}
            assert debug == {
                "object_id": house, "prim_id": door["prim_id"], "item_id": door["item_id"],
                "object_name": "House", "message": "hi", "channel": "owner_say",
                "script_id": script_id_for(door["prim_id"], door["item_id"]), "item": item,
            }
            assert error["object_id"] == house and error["item"] == item and error["channel"] == "debug"
            assert (error["error"], error["line"], error["column"], error["stack"]) == ("Math Error", 3, 2, [])


async def test_workspace_runtime_of_subscribed_unpublished_script(start_sim, connect) -> None:
    """§4: G2-G4 deliver when the root is published or the script subscribed."""
    with trio.fail_after(10):
        sim = await start_sim(generation="G2", live_poll_interval=None)
        lamp = ids(sim, "Lamp")
        async with connect(sim) as c:
            await sim.emit_debug(lamp["item_id"], "lost")
            sid, _ = await sim.open_script_editor(lamp["item_id"])
            await c.result("script.subscribe", {"script_id": sid})
            await sim.emit_debug(lamp["item_id"], "heard")
            await c.drain(sim)
            assert [m["message"] for m in c.received("runtime.debug")] == ["heard"]


async def test_g3_runtime_plain_lines_have_no_script(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation="G3")
        hello = ids(sim, "Hello")
        cube = obj_id(sim, "Hello Cube")
        async with connect(sim) as c:
            await sim.emit_debug(hello["item_id"], "plain")
            await sim.emit_error(hello["item_id"], "Script run-time error\nStack-Heap Collision")
            debug = await c.notification("runtime.debug")
            error = await c.notification("runtime.error")
            assert debug["item_id"] == NULL_UUID and "script_id" not in debug
            assert debug["item"] == {"root_id": cube, "prim_id": hello["prim_id"], "item_id": NULL_UUID,
                                     "name": "", "language": "lsl"}
            assert debug["object_id"] == cube and debug["message"] == "plain"
            # an error's header names the script; LSL without a location: the first plain line
            assert error["item_id"] == hello["item_id"] and error["item"]["name"] == "Hello"
            assert error["script_id"] == script_id_for(hello["prim_id"], hello["item_id"])
            assert (error["error"], error["line"], error["column"]) == ("Stack-Heap Collision", 0, 0)


async def test_run_script_output_per_generation(start_sim, connect) -> None:
    """run_script speaks through the generation's shapes: a save of a running script."""
    with trio.fail_after(10):
        sim = await start_sim(generation="G3")
        hello = ids(sim, "Hello")
        async with connect(sim) as c:
            await c.result("object.content.save", {**hello, "content": GOOD_LSL})
            said = await c.notification("runtime.debug")
            assert said["message"] == "saved" and said["item_id"] == NULL_UUID


# --- names ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gen", ["G2", "G3", "G4"])
async def test_unknown_names(start_sim, connect, gen: str) -> None:
    """§2: the prim's UUID string (G2, G4) or "Object" / "Link #n" (G3 only) while unknown."""
    with trio.fail_after(10):
        world = sample_world()
        house = next(o for o in world.objects.values() if o.name == "House")
        house.deferred_properties = True
        sim = await start_sim(generation=gen, world=world, properties_delay=None)
        async with connect(sim) as c:
            objects = (await c.result("object.list"))["objects"]
            wire = next(o for o in objects if o["object_id"] == house.object_id)
            first = wire["linked_objects"][0]
            if gen == "G3":
                assert wire["object_name"] == "Object" and first["link_name"] == "Link #2"
            else:
                assert wire["object_name"] == house.object_id and first["link_name"] == first["link_id"]
            await sim.deliver_properties(house.object_id)
            update = await c.notification("object.update")
            assert update["object_name"] == "House"


# --- commands ------------------------------------------------------------------------------------------------


async def _command(c: Any, command: str, **params: Any) -> dict[str, Any]:
    return await c.call("command.execute", {"command": command, "params": params})


@pytest.mark.parametrize("gen", ["G2", "G3", "G4"])
async def test_commands_per_source(start_sim, connect, gen: str) -> None:
    with trio.fail_after(10):
        sim = await start_sim(generation=gen)
        house = obj_id(sim, "House")
        lamp = obj_id(sim, "Unpublished Lamp")
        door = ids(sim, "Door Script")["prim_id"]
        async with connect(sim) as c:
            assert (await _command(c, "viewer.teleport"))["error"]["message"] == "Invalid params: object_id is required"
            missing = await _command(c, "viewer.camera.focus", object_id=MISSING)
            unpublished = await _command(c, "viewer.teleport", object_id=lamp)
            if gen == "G4":
                assert missing["error"]["code"] == -32003 and unpublished["error"]["code"] == -32003
            else:  # any object in view
                assert missing["error"] == {"code": -32602, "message": "Invalid params: object_id not found"}
                assert unpublished["result"] == {"success": True}
            assert (await _command(c, "viewer.teleport", object_id=door))["result"] == {"success": True}
            assert (await _command(c, "viewer.object.save_back_to_contents", object_id=house))["result"] == {
                "success": True,
                "result": {"object_id": house},
            }
            assert (await _command(c, "viewer.object.save_back_to_contents", object_id=lamp))["error"] == {
                "code": -32602,
                "message": "Invalid params: Object is not published",
            }
            assert (await _command(c, "viewer.script.reset_all", object_id=door))["result"] == {
                "success": True,
                "object_id": door,
                "queued": True,
            }
            assert (await _command(c, "viewer.script.recompile_all", object_id=house, target="mono"))["result"] == {
                "success": True,
                "object_id": house,
                "target": "mono",
                "queued": True,
            }
            child = await _command(c, "viewer.script.recompile_all", object_id=door, target="auto")
            assert child["error"] == {"code": -32003, "message": "Object is not published"}
            bad = await _command(c, "viewer.script.recompile_all", object_id=house, target="x")
            assert bad["error"]["code"] == -32602
            await c.drain(sim)

