"""Conformance of the simulated viewer: transport, handshake and JSON-RPC quirks."""

from __future__ import annotations

import json
import os
import stat

import pytest
import trio
import trio.testing
from trio_websocket import ConnectionClosed, ConnectionRejected, HandshakeError, open_websocket_url

from slfs.sim import SimViewer


async def test_handshake_ok_v1(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim: SimViewer = await start_sim()
        async with connect(sim, login=False) as c:
            params = await c.recv()
            assert params["method"] == "session.handshake"
            assert params["id"].startswith("rpc_") and int(params["id"][4:]) >= 1000
            hs = params["params"]
            path = hs["challenge"]
            assert os.path.basename(path).startswith("sl_script_challenge_") and path.endswith(".tmp")
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            with open(path, encoding="ascii") as f:
                secret = f.read()
            assert len(secret) == 36 and secret == secret.lower() and "\n" not in secret
            assert hs["server_version"] == "1.0.0" and hs["protocol_version"] == "1.0"
            assert hs["agent_id"] == sim.world.agent_id and hs["agent_name"] == sim.world.agent_name
            assert hs["languages"] == ["lsl", "luau"]
            assert hs["features"]["commands"] is True and hs["features"]["live_sync"] is True
            await c.send(
                {
                    "jsonrpc": "2.0",
                    "id": params["id"],
                    "result": {
                        "client_name": "t",
                        "client_version": "1.0",
                        "protocol_version": "1.0",
                        "challenge_response": secret,
                        "languages": [],
                        "features": {},
                    },
                }
            )
            ok = await c.recv()
            assert ok == {"jsonrpc": "2.0", "method": "session.ok"}
            assert not os.path.exists(path)
            assert sim.connections == 1
            assert (await c.result("system.status")) == {"status": "OK"}


async def test_handshake_v2_agent_in_session_ok(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with connect(sim) as c:
            assert "agent_id" not in c.handshake_params
            assert c.session_ok == {"agent_id": sim.world.agent_id, "agent_name": sim.world.agent_name}


@pytest.mark.parametrize("answer", ["wrong", "", None])
async def test_wrong_challenge_disconnects(start_sim, connect, answer) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim, login=False) as c:
            hs = await c.handshake(answer if answer is not None else None, use_file=False)
            msg = await c.recv()
            assert msg == {
                "jsonrpc": "2.0",
                "method": "session.disconnect",
                "params": {"reason": 2, "message": "Invalid challenge response"},
            }
            with pytest.raises(ConnectionClosed) as info:
                await c.recv()
            assert info.value.reason.code == 1000
            assert not os.path.exists(hs["challenge"])
            assert sim.connections == 0


async def test_challenge_answer_with_newline_is_wrong(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim, login=False) as c:
            msg = await c.recv()
            with open(msg["params"]["challenge"], encoding="ascii") as f:
                secret = f.read()
            await c.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"challenge_response": secret + "\n"}})
            note = await c.notification("session.disconnect")
            assert note["reason"] == 2


async def test_v2_error_answer_is_handshake_failed(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with connect(sim, login=False) as c:
            msg = await c.recv()
            await c.send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": "nope"}})
            note = await c.notification("session.disconnect")
            assert note == {"reason": 2, "message": "Handshake failed"}
            assert not os.path.exists(msg["params"]["challenge"])


async def test_v2_no_answer_times_out(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2, handshake_timeout=0.2)
        async with connect(sim, login=False) as c:
            msg = await c.recv()
            note = await c.notification("session.disconnect")
            assert note["reason"] == 3
            assert not os.path.exists(msg["params"]["challenge"])


async def test_nothing_dispatched_before_session_ok(start_sim, connect, viewer_version) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=viewer_version)
        async with connect(sim, login=False) as c:
            await c.recv()  # the handshake request, left unanswered
            resp = await c.call("object.list")
            assert resp["error"] == {"code": -32002, "message": "Authentication required"}
            assert sim.calls == []
            # no broadcast goes to an unauthenticated connection
            await sim.unpublish(next(iter(sim.world.objects)))
            resp = await c.call("system.ping", {"timestamp": 1})
            assert resp["error"]["code"] == -32002
            assert not c.received("object.unpublish")


async def test_origin_header_rejected_403(start_sim) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        with pytest.raises(ConnectionRejected) as info:
            async with open_websocket_url(
                f"ws://127.0.0.1:{sim.port}/", extra_headers=[("Origin", "http://x")]
            ):
                pass
        assert info.value.status_code == 403


async def test_invalid_json_keeps_connection(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            await c.send("{not json")
            msg = await c.recv()
            assert msg["id"] is None and msg["error"]["code"] == -32700
            assert (await c.result("system.status")) == {"status": "OK"}


async def test_batch_rejected(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            await c.send([{"jsonrpc": "2.0", "id": 1, "method": "system.status"}])
            msg = await c.recv()
            assert msg == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "Invalid Request: Batch requests are not supported"},
            }


async def test_structurally_invalid_requests_dropped(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            await c.send({"jsonrpc": "2.0", "id": 5, "method": "system.status", "params": None})
            await c.send({"jsonrpc": "1.0", "id": 6, "method": "system.status"})
            await c.send({"jsonrpc": "2.0", "id": 7, "method": 3})
            rid = await c.request("system.status")
            msg = await c.recv()
            assert msg["id"] == rid  # the three bad ones got nothing


async def test_unknown_method_and_binary_frame(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            assert (await c.error("no.such", {})) == (-32601, "Method not found: no.such")
            await c.ws.send_message(
                json.dumps({"jsonrpc": "2.0", "id": 99, "method": "system.status"}).encode()
            )
            assert (await c.response(99))["result"] == {"status": "OK"}


async def test_keys_sorted_and_null_result_omitted(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            rid = await c.request("script.unsubscribe", {"script_id": "x"})
            raw = await c.ws.get_message()
            assert raw == json.dumps({"id": rid, "jsonrpc": "2.0"}, separators=(",", ":"))
            rid = await c.request("system.ping", {"timestamp": 5})
            raw = await c.ws.get_message()
            obj = json.loads(raw)
            assert list(obj) == sorted(obj) and list(obj["result"]) == sorted(obj["result"])
            assert obj["result"]["pong"] == "pong" and obj["result"]["timestamp"] == 5


async def test_system_methods(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            methods = await c.result("system.listMethods")
            assert methods == sorted(methods) and "object.content.save" in methods
            version = await c.result("system.getVersion")
            assert set(version) == {"client_name", "client_version"}
            sub = await c.result(
                "script.subscribe", {"script_id": "s", "script_name": "n", "script_language": "lsl"}
            )
            assert sub["status"] == 2 and sub["message"] == "No subscription found for script"
            assert (await c.result("script.list"))["script_ids"] == []


async def test_syntax_methods(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            sid = (await c.result("language.syntax.id"))["id"]
            info = await c.result("language.syntax", {"kind": "defs.lsl"})
            assert info["id"] == sid and info["success"] is True and "llOwnerSay" in info["defs"]["functions"]
            assert (await c.result("language.syntax", {"kind": "defs.lua"}))["success"] is True
            assert (await c.error("language.syntax", {})) == (
                -32602,
                "Invalid params: No syntax category specified",
            )
            assert (await c.error("language.syntax", {"kind": "x"})) == (
                -32602,
                "Invalid params: Unknown syntax category requested",
            )
            files = (await c.result("language.syntax.cache"))["files"]
            assert "secondlife.d.luau" in files and "builtins.txt" in files
            text = await c.result("language.syntax.get", {"filename": "builtins.txt"})
            assert isinstance(text["content"], str)
            parsed = await c.result(
                "language.syntax.get", {"filename": "secondlife.docs.json", "as_json": True}
            )
            assert isinstance(parsed["content"], dict)
            assert (await c.error("language.syntax.get", {})) == (
                -32602,
                "Invalid params: No filename specified",
            )
            assert (await c.error("language.syntax.get", {"filename": "nope"})) == (
                -32602,
                "Invalid params: Requested syntax cache file not found",
            )
            new = await sim.send_syntax_change()
            assert (await c.notification("language.syntax.change")) == {"id": new}


async def test_several_connections_get_broadcasts(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as a, connect(sim) as b:
            assert sim.connections == 2
            oid = next(o.object_id for o in sim.world.objects.values() if o.name == "Hello Cube")
            await sim.unpublish(oid, reason="user")
            for c in (a, b):
                assert (await c.notification("object.unpublish")) == {"object_id": oid, "reason": "user"}


async def test_disconnect_all_and_reconnect(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as c:
            await sim.disconnect_all()
            with pytest.raises(ConnectionClosed):
                await c.recv()
        async with connect(sim) as c:
            assert (await c.result("system.status"))["status"] == "OK"


async def test_stop_accepting_and_resume(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        sim.stop_accepting()
        await trio.testing.wait_all_tasks_blocked()  # the listener task has closed its socket
        with pytest.raises((OSError, HandshakeError)):
            async with connect(sim):
                pass
        await sim.resume()
        async with connect(sim) as c:
            assert (await c.result("system.status"))["status"] == "OK"


async def test_v2_message_size_limit_before_auth(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with connect(sim, login=False) as c:
            await c.recv()
            await c.send("x" * (64 * 1024 + 1))
            with pytest.raises(ConnectionClosed) as info:
                while True:
                    await c.recv()
            assert info.value.reason.code == 1009


async def test_v2_fifth_unauthenticated_connection_refused(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with (
            connect(sim, login=False) as c1,
            connect(sim, login=False) as c2,
            connect(sim, login=False) as c3,
            connect(sim, login=False) as c4,
        ):
            for c in (c1, c2, c3, c4):
                await c.recv()
            async with connect(sim, login=False) as c5:
                with pytest.raises(ConnectionClosed) as info:
                    await c5.recv()
                assert info.value.reason.code == 1013


async def test_sim_pings_client_when_asked(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(client_ping_interval=0.05)
        async with connect(sim) as c:
            msg = await c.recv()
            assert msg["method"] == "system.ping" and msg["id"].startswith("rpc_")
            assert isinstance(msg["params"]["timestamp"], int)
            await c.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"pong": "pong"}})
            while not sim.client_pings:
                await trio.sleep(0.01)
            assert sim.client_pings[0].result == {"pong": "pong"}
