"""Conformance of the simulated viewer's transport with newer viewers (viewer_version=2).

Newer protocol document (AlchemyViewer/Alchemy doc/external-editor-json-rpc.md), Usage Flow 1 and
"Malformed messages"; /work/shared/research/newer-viewers.md, "Transport".
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack

import pytest
import trio
from trio_websocket import ConnectionClosed

from slfs.sim import SimViewer

UPGRADE = (
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def hello_id(sim: SimViewer) -> str:
    return next(
        i.item_id for o in sim.world.objects.values() for p in o.prims() for i in p.inventory if i.name == "Hello"
    )


async def test_v2_message_over_16mb_after_auth_closes_1009(start_sim, connect) -> None:
    with trio.fail_after(30):
        sim = await start_sim(viewer_version=2)
        async with connect(sim) as c:
            # "at most 64 KB before authentication, 16 MB after": a message of 16 MB is still served
            # (trio-websocket counts a text message in characters; these are ASCII)
            pad = "x" * (16 * 1024 * 1024 - 100)
            await c.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "system.status", "params": {"p": pad}}))
            assert (await c.response(1))["result"] == {"status": "OK"}
            # "larger ones close the connection with 1009"
            await c.send("y" * (16 * 1024 * 1024 + 1))
            with pytest.raises(ConnectionClosed) as info:
                while True:
                    await c.recv()
            assert info.value.reason.code == 1009


async def test_v2_64kb_before_auth_is_accepted(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with connect(sim, login=False) as c:
            await c.recv()  # the handshake request
            await c.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "pad": "a" * (64 * 1024 - 100)}))
            assert (await c.response(1))["error"]["code"] == -32002  # answered, connection kept


async def test_v2_fifth_unauthenticated_connection_closed_1013_before_handshake(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with AsyncExitStack() as stack:
            waiting = [await stack.enter_async_context(connect(sim, login=False)) for _ in range(4)]
            for c in waiting[1:]:
                await c.recv()
            while len(sim.challenge_files) < 4:  # the first one's handshake is sent, left unread
                await trio.sleep(0.01)
            async with connect(sim, login=False) as c5:
                with pytest.raises(ConnectionClosed) as info:
                    await c5.recv()  # no handshake request comes first
                assert info.value.reason.code == 1013 and c5.frames == []
            # one that authenticates frees its place
            await waiting[0].login()
            async with connect(sim) as c6:
                assert (await c6.result("system.status")) == {"status": "OK"}


async def test_v1_has_no_unauthenticated_limit(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=1)
        async with AsyncExitStack() as stack:
            for _ in range(6):
                c = await stack.enter_async_context(connect(sim, login=False))
                assert (await c.recv())["method"] == "session.handshake"


async def test_v2_at_most_32_connections(start_sim, connect) -> None:
    with trio.fail_after(30):
        sim = await start_sim(viewer_version=2)
        async with AsyncExitStack() as stack:
            for _ in range(32):
                await stack.enter_async_context(connect(sim))
            assert sim.connections == 32
            # "The viewer takes 32 connections at most, and closes any more unanswered": the socket
            # is closed with no HTTP answer to the upgrade request
            stream = await trio.open_tcp_stream("127.0.0.1", sim.port)
            await stream.send_all(UPGRADE)
            assert await stream.receive_some(65536) == b""
            await stream.aclose()
            assert sim.connections == 32
        # with fewer, the same request is answered 101
        while sim.connections:
            await trio.sleep(0.01)
        stream = await trio.open_tcp_stream("127.0.0.1", sim.port)
        await stream.send_all(UPGRADE)
        assert (await stream.receive_some(65536)).startswith(b"HTTP/1.1 101")
        await stream.aclose()


async def test_v2_client_that_stops_reading_is_dropped(start_sim, connect) -> None:
    with trio.fail_after(60):
        sim = await start_sim(viewer_version=2)
        hello = hello_id(sim)
        # message_queue_size=1: once a frame waits unread, the client's socket is no longer read
        async with connect(sim, max_message_size=64 * 1024 * 1024, message_queue_size=1) as client:
            ws = client.ws
            # the client now stops reading; the sim keeps talking (1 MB lines), pausing between them
            for _ in range(200):  # the socket buffers take their share first (tcp_rmem may be 32 MB)
                await sim.emit_debug(hello, "x" * 1_000_000)
                await trio.sleep(0.002)
                if sim.connections == 0:
                    break
            # "A client that stops reading is dropped once 32 MB wait unsent to it"
            assert sim.connections == 0
            while sim.dropped_connections == 0:
                await trio.sleep(0.01)
            with pytest.raises(ConnectionClosed) as info:
                while True:
                    await ws.get_message()
            assert info.value.reason.code == 1006  # dropped, no close handshake


async def test_v2_client_that_reads_is_not_dropped(start_sim, connect) -> None:
    with trio.fail_after(60):
        sim = await start_sim(viewer_version=2)
        hello = hello_id(sim)
        async with connect(sim, max_message_size=64 * 1024 * 1024) as client:
            got = 0

            async def read() -> None:
                nonlocal got
                while got < 48:
                    if (await client.recv()).get("method") == "runtime.debug":
                        got += 1

            async with trio.open_nursery() as nursery:
                nursery.start_soon(read)
                for sent in range(48):  # 48 MB in all, more than the limit, but read as it comes
                    while got < sent - 8:  # at most ~8 MB in flight, whatever the machine's load
                        await trio.sleep(0.001)
                    await sim.emit_debug(hello, "x" * 1_000_000)
            assert got == 48 and sim.connections == 1 and sim.dropped_connections == 0


async def test_v2_malformed_requests_answered_invalid_request(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        async with connect(sim) as c:
            # "Malformed requests get -32600 (with their id, or null)"
            await c.send({"jsonrpc": "1.0", "id": 6, "method": "system.status"})
            assert (await c.recv())["id"] == 6
            await c.send({"jsonrpc": "2.0", "id": 7, "method": 3})
            msg = await c.recv()
            assert msg["id"] == 7 and msg["error"]["code"] == -32600
            await c.send({"jsonrpc": "2.0", "id": "s8", "method": "system.status", "params": None})
            assert (await c.recv())["id"] == "s8"
            await c.send({"jsonrpc": "2.0", "id": {"bad": 1}})
            msg = await c.recv()
            assert msg["id"] is None and msg["error"]["code"] == -32600
            # "malformed responses are dropped"
            await c.send({"jsonrpc": "2.0", "id": "rpc_1", "result": 1, "error": {"code": 1, "message": "x"}})
            await c.send({"jsonrpc": "1.0", "id": "rpc_2", "result": 1})
            rid = await c.request("system.status")
            assert (await c.recv())["id"] == rid


async def test_v2_async_method_as_notification_neither_run_nor_answered(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2)
        cube = next(o.object_id for o in sim.world.objects.values() if o.name == "Hello Cube")
        async with connect(sim) as c:
            params = {"prim_id": cube, "name": "N", "type": "notecard"}
            await c.send({"jsonrpc": "2.0", "method": "object.item.create", "params": params})
            rid = await c.request("system.status")
            assert (await c.recv())["id"] == rid
            await c.drain(sim)  # a create run anyway would have ended (create_delay) and sent its update
            assert "N" not in [i.name for i in sim.world.objects[cube].root.inventory]
            assert not c.received("object.update")
