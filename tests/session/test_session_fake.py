"""ViewerSession against a scriptable fake viewer over real sockets."""

from __future__ import annotations

import functools
import json
import logging
import socket
from typing import Any

import pytest
import trio
from support.fakeviewer import FakeConn, FakeViewer
from support.recorder import Recorder
from support.sessions import FAST, running

from slfs.protocol.rpc_errors import RpcError
from slfs.protocol.types import ObjectListResponse, SuccessResponse
from slfs.session import CallTimeout, NotConnected, ViewerSession
from slfs.session import connection as connection_module


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_handshake_and_object_list() -> None:
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            info = await session.wait_connected(5)
            assert info.viewer_name == "Fake Viewer"
            assert info.viewer_version == "7.0.0"
            assert info.agent_name == "Test Resident"
            assert info.agent_id == "44444444-4444-4444-4444-444444444444"
            assert info.syntax_id == "33333333-3333-3333-3333-333333333333"
            assert info.features == {"live_sync": True, "commands": True}
            assert info.endpoint == f"127.0.0.1:{fake.port}"
            assert session.endpoint == info.endpoint
            (got_info, objects), = rec.of("connected")
            assert got_info == info
            assert [o.object_id for o in objects] == ["11111111-1111-1111-1111-111111111111"]
            assert objects[0].full().inventory[0].name == "hello"  # decoded when first needed
            answer = fake.handshake_answers[0]
            assert answer["id"] == "rpc_1000"  # string ids are answered with the same id
            result = answer["result"]
            assert result["client_name"] == "slfs"
            assert result["client_version"] == "1.0"
            assert result["protocol_version"] == "1.0"
            assert result["languages"] == ["lsl", "luau"]
            assert result["features"] == {
                "object_publish": True, "error_reporting": True, "unified_diagnostics": True,
                "commands": True, "debugging": False, "breakpoints": False, "live_sync": False,
            }
            assert len(result["challenge_response"]) == 36
            assert fake.calls[0] == ("object.list", {})
            assert [s for s, _ in rec.states] == ["connecting", "connected"]
            # transport: no Origin header, no subprotocol, path "/"
            req = fake.requests[0]
            names = {k.lower() for k, _ in req.headers}
            assert b"origin" not in names
            assert b"sec-websocket-protocol" not in names
            assert req.path == "/"


async def test_v2_session_ok_carries_agent() -> None:
    fake = FakeViewer(v2=True)
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            info = await session.wait_connected(5)
            assert info.agent_name == "V2 Resident"
            assert info.agent_id == "55555555-5555-5555-5555-555555555555"


async def test_handshake_without_challenge() -> None:
    fake = FakeViewer(challenge=False)
    with trio.fail_after(10):
        async with running(fake, live_sync=True) as (session, _rec, _):
            await session.wait_connected(5)
            result = fake.handshake_answers[0]["result"]
            assert "challenge_response" not in result
            assert result["features"]["live_sync"] is True


async def test_served_methods() -> None:
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            c = fake.conn
            r = await c.call("system.ping", {"timestamp": 1234})
            assert r["result"]["pong"] == "pong"
            assert r["result"]["timestamp"] == 1234
            assert r["result"]["server_time"] > 1_600_000_000_000
            version = (await c.call("system.getVersion"))["result"]
            assert version == {"client_name": "slfs", "client_version": "1.0"}
            assert (await c.call("system.status"))["result"] == {"status": "OK"}
            methods = (await c.call("system.listMethods"))["result"]
            assert methods == sorted(methods)
            assert {"session.handshake", "system.ping", "command.execute", "command.list"} <= set(methods)
            cmds = (await c.call("command.list"))["result"]["commands"]
            assert {x["command"] for x in cmds} == {"editor.open_file", "editor.show_message"}
            r = await c.call("no.such.method", {}, rid=77)
            assert r["id"] == 77
            assert r["error"] == {"code": -32601, "message": "Method not found: no.such.method"}
            r = await c.call("command.execute", {"command": "editor.show_message",
                                                 "params": {"message": "hi", "level": "info"}})
            assert r["result"] == {"success": True}
            assert rec.of("command") == [("editor.show_message", {"message": "hi", "level": "info"})]
            r = await c.call("command.execute", {})
            assert r["error"]["message"] == "Invalid params: command is required"
            r = await c.call("command.execute", {"command": "viewer.teleport"})
            assert r["error"]["message"] == "Invalid params: Unknown command: viewer.teleport"
            r = await c.call("command.execute", {"command": "editor.open_file", "params": {}})
            assert r["error"]["code"] == -32602
            rec.raise_in.add("command")
            r = await c.call("command.execute", {"command": "editor.open_file", "params": {"path": "/x"}})
            assert r["error"]["code"] == -32603
            assert session.state == "connected"


async def test_calls_results_and_errors() -> None:
    async def fail(conn: FakeConn, params: Any) -> Any:
        raise RpcError(-32003, "Access denied")

    async def bad_shape(conn: FakeConn, params: Any) -> Any:
        return {"objects": "nope"}

    fake = FakeViewer(methods={"x.fail": fail, "x.bad": bad_shape})
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            with pytest.raises(RpcError) as info:
                await session.call("x.fail", {})
            assert (info.value.code, info.value.message) == (-32003, "Access denied")
            with pytest.raises(RpcError) as info:
                await session.call("x.unknown")
            assert info.value.code == -32601
            with pytest.raises(RpcError) as info:
                await session.call_typed("x.bad", {}, ObjectListResponse)
            assert info.value.code == -32603
            typed = await session.call_typed("object.list", {}, ObjectListResponse)
            assert len(typed.objects) == 1


async def test_result_omitted_is_none() -> None:
    async def omit(conn: FakeConn, params: Any) -> Any:
        return None

    fake = FakeViewer(methods={"script.unsubscribe": omit})

    # make the fake drop the "result" key entirely for this method
    orig = FakeConn.send

    async def send(self: FakeConn, obj: Any) -> None:
        if isinstance(obj, dict) and "result" in obj and obj["result"] is None:
            obj = {k: v for k, v in obj.items() if k != "result"}
        await orig(self, obj)

    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            fake.conn.send = send.__get__(fake.conn)  # type: ignore[method-assign]
            assert await session.call("script.unsubscribe", {"script_id": "x"}) is None


async def test_not_connected_is_immediate() -> None:
    rec = Recorder()
    session = ViewerSession(rec, "127.0.0.1", free_port(), **FAST)
    with trio.fail_after(2):
        with pytest.raises(NotConnected):
            await session.call("object.list")
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            await trio.sleep(0.05)
            assert session.state == "connecting"
            with pytest.raises(NotConnected):
                await session.call("object.list")
            nursery.cancel_scope.cancel()
    assert session.state == "disconnected"


async def test_viewer_absent_then_started() -> None:
    port = free_port()
    rec = Recorder()
    session = ViewerSession(rec, "127.0.0.1", port, **FAST)
    fake = FakeViewer()
    fake.port = port
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            await trio.sleep(0.3)
            assert session.state == "connecting"
            assert "cannot reach" in session.last_error
            assert "connected" not in rec.names()
            assert len(rec.states) == 2  # retries with the same failure are not re-announced
            await nursery.start(fake.serve)
            await session.wait_connected(5)
            assert [s for s, _ in rec.states][-1] == "connected"
            assert {s for s, _ in rec.states} == {"connecting", "connected"}
            nursery.cancel_scope.cancel()


async def test_viewer_restart() -> None:
    fake = FakeViewer()
    rec = Recorder()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(fake.serve)
            session = ViewerSession(rec, "127.0.0.1", port, **FAST)
            await nursery.start(session.run)
            await session.wait_connected(5)
            fake.stop()
            await session.wait_state("disconnected", 5)
            assert session.info is None
            with pytest.raises(NotConnected):
                await session.call("object.list", {})
            await rec.wait_for(lambda: "disconnected" in rec.names())
            fake.objects = []
            await nursery.start(fake.serve)
            await rec.wait_for(lambda: len(rec.of("connected")) == 2)
            names = [n for n in rec.names() if n in ("connected", "disconnected")]
            assert names == ["connected", "disconnected", "connected"]
            assert rec.of("connected")[1][1] == []
            states = [s for s, _ in rec.states]
            assert states[:4] == ["connecting", "connected", "disconnected", "connecting"]
            nursery.cancel_scope.cancel()


async def test_wrong_challenge_reconnects(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeViewer()
    monkeypatch.setattr(ViewerSession, "read_challenge", lambda self, path: "wrong")
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await rec.wait_for(lambda: len(fake.conns) >= 3)
            assert "connected" not in rec.names()
            assert "disconnected" not in rec.names()  # on_disconnected only after on_connected
            assert "Invalid challenge response" in session.last_error
            assert session.state != "connected"
            monkeypatch.undo()
            await session.wait_connected(5)


async def test_bad_challenge_file_answers_error() -> None:
    fake = FakeViewer()

    async def handshake(conn: FakeConn) -> bool:
        resp = await conn.call("session.handshake", {"challenge": "/nonexistent/sl_script_challenge_1.tmp"})
        fake.handshake_answers.append(resp)
        await conn.close()
        return False

    fake.handshake = handshake  # type: ignore[method-assign]
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await rec.wait_for(lambda: len(fake.handshake_answers) >= 2)
            err = fake.handshake_answers[0]["error"]
            assert err["code"] == -32002
            # The peer learns nothing about our files (not even whether the path exists).
            assert err["message"] == "Challenge file rejected"
            assert session.state != "connected"
            assert "does not exist" in session.last_error or "does not exist" in session.state_detail


async def test_impostor_with_a_key_file_is_refused_and_dropped(tmp_path: Any, caplog: Any) -> None:
    """Anyone can listen on the viewer's port while it is down. Such a peer names a 0600 file of ours
    shaped like an SSH key and sends session.ok whatever we answer: nothing of the file is sent or
    logged, the connection is closed, and reconnects back off."""
    secret = b"-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END OPENSSH PRIVATE KEY-----\n"
    key = tmp_path / "id_ed25519"
    key.write_bytes(secret)
    key.chmod(0o600)
    fake = FakeViewer()
    frames: list[str] = []

    async def handshake(conn: FakeConn) -> bool:
        resp = await conn.call("session.handshake", {"challenge": str(key)})
        fake.handshake_answers.append(resp)
        frames.append(json.dumps(resp))
        await conn.notify("session.ok")  # as if it had accepted us
        with trio.move_on_after(2):
            while not conn.closed:
                await trio.sleep(0.01)
        return False

    fake.handshake = handshake  # type: ignore[method-assign]
    caplog.set_level(logging.DEBUG)
    with trio.fail_after(15):
        async with running(fake, backoff_min=0.2, backoff_max=0.4) as (session, rec, _):
            await rec.wait_for(lambda: len(fake.handshake_answers) >= 3, timeout=10)
            # Each refused connection is closed by us (a later reconnect may still be in progress).
            await rec.wait_for(lambda: all(c.closed for c in fake.conns[:3]), timeout=5)
            assert session.state != "connected"
            assert "connected" not in rec.names()
    assert not any(method == "object.list" for method, _ in fake.calls)
    for answer in fake.handshake_answers:
        assert "result" not in answer and answer["error"]["code"] == -32002
    for part in (b"c2VjcmV0LWtleS1tYXRlcmlhbA==", b"OPENSSH"):
        assert part.decode() not in "".join(frames)
        assert part.decode() not in caplog.text
    # backoff: the reconnects are spread out, not a tight loop
    times = [r.created for r in caplog.records if "refusing the handshake" in r.getMessage()]
    assert len(times) >= 3 and times[2] - times[0] >= 0.15


async def test_malformed_handshake_params() -> None:
    fake = FakeViewer()

    async def handshake(conn: FakeConn) -> bool:
        resp = await conn.call("session.handshake", ["not", "an", "object"])
        fake.handshake_answers.append(resp)
        await conn.close()
        return False

    fake.handshake = handshake  # type: ignore[method-assign]
    with trio.fail_after(10):
        async with running(fake) as (_session, rec, _):
            await rec.wait_for(lambda: len(fake.handshake_answers) >= 1)
            assert fake.handshake_answers[0]["error"]["code"] == -32602


async def test_ping_failures_tear_down() -> None:
    fake = FakeViewer(answer_pings=False)
    with trio.fail_after(10):
        async with running(fake, ping_interval=0.05, ping_timeout=0.05) as (session, rec, _):
            await session.wait_connected(5)
            await rec.wait_for(lambda: "disconnected" in rec.names())
            assert "stopped answering pings" in rec.of("disconnected")[0]
            assert sum(1 for m, _ in fake.calls if m == "system.ping") >= 2
            await rec.wait_for(lambda: len(rec.of("connected")) == 2)


async def test_pings_answered_keep_session() -> None:
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake, ping_interval=0.02, ping_timeout=0.5) as (session, rec, _):
            await session.wait_connected(5)
            await rec.wait_for(lambda: sum(1 for m, _ in fake.calls if m == "system.ping") >= 5)
            assert "disconnected" not in rec.names()
            pings = [p for m, p in fake.calls if m == "system.ping"]
            assert all(isinstance(p["timestamp"], int) for p in pings)


async def test_call_timeout_and_late_answer(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="slfs.session")

    async def slow(conn: FakeConn, params: Any) -> Any:
        await trio.sleep(0.3)
        return {"success": True}

    fake = FakeViewer(methods={"object.request": slow})
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            with pytest.raises(CallTimeout) as info:
                await session.call("object.request", {"object_id": "x"}, timeout=0.05)
            assert info.value.code == -32001
            assert isinstance(info.value, RpcError)
            # The late answer arrives for an id nobody waits for: a call given up on, not a stranger's.
            while "late answer to object.request" not in caplog.text:
                await trio.sleep(0.02)
            assert "unknown id" not in caplog.text
            assert session.state == "connected"
            assert await session.call_typed("object.request", {"object_id": "x"}, SuccessResponse) == \
                SuccessResponse(success=True)


async def test_pending_calls_fail_on_drop() -> None:
    async def never(conn: FakeConn, params: Any) -> Any:
        await trio.sleep_forever()

    fake = FakeViewer(methods={"object.content.get": never})
    errors: list[BaseException] = []

    async def caller(session: ViewerSession) -> None:
        try:
            await session.call("object.content.get", {"prim_id": "a", "item_id": "b"})
        except RpcError as exc:
            errors.append(exc)

    with trio.fail_after(10):
        async with running(fake) as (session, rec, nursery):
            await session.wait_connected(5)
            for _ in range(3):
                nursery.start_soon(caller, session)
            await rec.wait_for(lambda: len([m for m, _ in fake.calls if m == "object.content.get"]) == 3)
            await fake.conn.close(1001, "going away")
            await rec.wait_for(lambda: len(errors) == 3)
            assert all(isinstance(e, NotConnected) and e.code == -32000 for e in errors)
            assert "Connection closed" in str(errors[0])


async def test_notification_before_response() -> None:
    async def request(conn: FakeConn, params: Any) -> Any:
        obj = dict(conn.viewer.objects[0], object_id=params["object_id"])
        await conn.notify("object.publish", {"object": obj})
        return {"success": True}

    fake = FakeViewer(methods={"object.request": request})
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            seen: list[int] = []
            rec_publish = rec.on_publish

            def on_publish(obj: Any) -> None:
                seen.append(len(rec.of("publish")))
                rec_publish(obj)

            rec.on_publish = on_publish  # type: ignore[method-assign]
            result = await session.call("object.request", {"object_id": "abc"})
            assert result == {"success": True}
            assert seen == [0]  # the publish was delivered before the call returned
            assert rec.of("publish")[0].object_id == "abc"


async def test_notifications_reach_listener() -> None:
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            c = fake.conn
            await c.notify("object.unpublish", {"object_id": "o", "reason": "user"})
            await c.notify("object.update", {"object_id": "o", "object_name": "New"})
            where = {"object_id": "o", "prim_id": "p", "item_id": "i"}
            await c.notify("runtime.debug", {**where, "message": "hi"})
            await c.notify("runtime.error", {**where, "message": "bad"})
            await c.notify("language.syntax.change", {"id": "s"})
            await c.notify("script.compiled", {"script_id": "x", "success": True})
            await rec.wait_for(lambda: "compiled" in rec.names())
            assert rec.names()[-6:] == ["unpublish", "update", "debug", "error", "syntax", "compiled"]
            assert rec.of("unpublish")[0].reason == "user"
            assert rec.of("update")[0].object_name == "New"


@pytest.mark.parametrize("stepped", [False, True], ids=["", "every frame parsed in steps"])
async def test_bad_input_survived(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
                                  stepped: bool) -> None:
    if stepped:
        monkeypatch.setattr(connection_module, "STEPPED_FRAME", 1)
    caplog.set_level(logging.INFO)
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            c = fake.conn
            await c.send("{not json")
            await c.send(b"\xff\xfe binary garbage")
            await c.send(json.dumps({"jsonrpc": "2.0", "method": "object.unpublish",
                                     "params": {"object_id": "bin"}}).encode())
            await c.send({"jsonrpc": "2.0", "id": 999999, "result": {"x": 1}})
            await c.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            await c.send({"jsonrpc": "2.0", "id": "weird", "result": 1})
            await c.send([{"jsonrpc": "2.0", "method": "x"}])
            await c.send({"jsonrpc": "1.0", "method": "x"})
            await c.notify("object.publish", {"object": {"object_name": 5}})
            await c.notify("object.publish", {"nope": 1})
            await c.notify("object.update", [1, 2])
            await c.notify("no.such.notification", {"a": 1})
            rec.raise_in.add("unpublish")
            await c.notify("object.unpublish", {"object_id": "boom"})
            await c.notify("session.ok")  # duplicate
            r = await c.call("system.status")
            assert r["result"] == {"status": "OK"}
            assert [u.object_id for u in rec.of("unpublish")] == ["bin", "boom"]
            assert rec.of("publish") == []
            assert session.state == "connected"
            assert await session.call("object.list", {}) == {"objects": fake.objects}
            assert "disconnected" not in rec.names()
    text = caplog.text
    assert "invalid frame" in text
    assert "unknown id" in text
    assert "malformed object.publish" in text
    assert "unknown notification no.such.notification" in text
    assert "listener on_unpublish raised" in text


@pytest.mark.parametrize("code", [1000, 1009, 1011, 1013])
async def test_close_codes_reconnect(code: int) -> None:
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            await fake.conn.close(code, "bye")
            await rec.wait_for(lambda: len(rec.of("connected")) == 2)
            assert f"code {code}" in rec.of("disconnected")[0]


async def test_close_during_handshake_reconnects() -> None:
    fake = FakeViewer()
    count = 0
    orig = fake.handshake

    async def handshake(conn: FakeConn) -> bool:
        nonlocal count
        count += 1
        if count <= 2:
            await conn.close(1013, "Try again later")
            return False
        return await orig(conn)

    fake.handshake = handshake  # type: ignore[method-assign]
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            assert count == 3
            assert [s for s, _ in rec.states].count("disconnected") == 2


async def test_session_disconnect_reason_reported() -> None:
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            await fake.conn.notify("session.disconnect", {"reason": 0, "message": "Viewer shutting down"})
            await fake.conn.close(1000)
            await rec.wait_for(lambda: "disconnected" in rec.names())
            assert "Viewer shutting down" in rec.of("disconnected")[0]


async def test_handshake_timeout() -> None:
    fake = FakeViewer()
    fake.auto_handshake = False
    with trio.fail_after(10):
        async with running(fake, handshake_timeout=0.1) as (session, rec, _):
            await rec.wait_for(lambda: len(fake.conns) >= 2)
            assert "did not complete the handshake" in session.last_error


async def test_a_port_that_never_answers_the_upgrade_is_left_and_tried_again() -> None:
    """Something that accepts the TCP connection and never answers the HTTP upgrade (a wedged
    program on the port): the opening ends after connect_timeout, the status says why, and the
    session tries again (trio-websocket alone would wait on that connection for as long as the
    peer holds it)."""
    held: list[trio.SocketStream] = []
    accepted = trio.Event()

    async def silent(stream: trio.SocketStream) -> None:
        held.append(stream)
        if len(held) >= 2:
            accepted.set()
        await trio.sleep_forever()

    rec = Recorder()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(functools.partial(trio.serve_tcp, silent, 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            session = ViewerSession(rec, "127.0.0.1", port, connect_timeout=0.2, **FAST)
            nursery.start_soon(session.run)
            await accepted.wait()
            assert session.state == "connecting"
            assert "did not open within 0.2 s" in session.last_error
            assert "did not open within 0.2 s" in session.state_detail
            nursery.cancel_scope.cancel()


async def test_object_list_failure_reconnects() -> None:
    n = 0

    async def object_list(conn: FakeConn, params: Any) -> Any:
        nonlocal n
        n += 1
        if n == 1:
            raise RpcError(-32603, "Internal error: boom")
        if n == 2:
            return {"objects": [{"bad": 1}]}
        return {"objects": []}

    fake = FakeViewer(methods={"object.list": object_list})
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            assert n == 3
            assert rec.of("connected")[0][1] == []


async def test_shutdown_says_goodbye() -> None:
    fake = FakeViewer()
    rec = Recorder()
    with trio.fail_after(10):
        async with trio.open_nursery() as outer:
            port = await outer.start(fake.serve)
            session = ViewerSession(rec, "127.0.0.1", port, **FAST)
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as inner:
                    await inner.start(session.run)
                    await session.wait_connected(5)
                    scope.cancel()
            assert session.state == "disconnected"
            assert rec.of("disconnected") == ["session stopped"]
            notes = fake.conn.notifications
            await rec.wait_for(lambda: any(m["method"] == "session.disconnect" for m in notes))
            outer.cancel_scope.cancel()


async def test_listener_failures_do_not_break_the_session() -> None:
    fake = FakeViewer()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(fake.serve)
            rec = Recorder()
            rec.raise_in.update({"connected", "state", "publish"})
            session = ViewerSession(rec, "127.0.0.1", port, **FAST)
            await nursery.start(session.run)
            await session.wait_connected(5)
            await fake.conn.notify("object.publish", {"object": fake.objects[0]})
            await rec.wait_for(lambda: "publish" in rec.names())
            assert session.state == "connected"
            assert await session.call("object.list", {}) == {"objects": fake.objects}
            nursery.cancel_scope.cancel()


def test_url_brackets_an_ipv6_address() -> None:
    rec = Recorder()
    assert ViewerSession(rec, "127.0.0.1", 9020).url == "ws://127.0.0.1:9020/"
    assert ViewerSession(rec, "::1", 9020).url == "ws://[::1]:9020/"
    assert ViewerSession(rec, "localhost", 9020).url == "ws://localhost:9020/"
