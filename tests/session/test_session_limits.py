"""The session against newer viewers' transport rules and field types (fake viewer, real sockets)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
from support.fakeviewer import FakeConn, FakeViewer
from support.sessions import running

from slfs.protocol.types import ContentGetResponse
from slfs.session import MessageTooLarge
from slfs.session.connection import PREAUTH_SEND_LIMIT, SEND_LIMIT


async def test_unexpected_optional_field_logged_once_per_method_and_field(caplog: Any) -> None:
    fake = FakeViewer(v2=True)
    caplog.set_level(logging.WARNING)
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            for n in range(5):
                item = {"item_id": f"{n:08d}-0000-0000-0000-000000000000", "name": f"s{n}", "type": "script",
                        "vm": {"odd": True}, "running": "yes"}
                await fake.conn.notify("object.publish", {"object": {
                    "object_id": f"{n:08d}-1111-1111-1111-111111111111", "object_name": f"Box {n}",
                    "inventory": [item], "can_save_back": "sometimes"}})
            await rec.wait_for(lambda: len(rec.of("publish")) == 5)
    published = rec.of("publish")
    assert [o.object_name for o in published] == [f"Box {n}" for n in range(5)]
    assert all(o.inventory[0].vm is None and o.inventory[0].running is None for o in published)
    warnings = [r.getMessage() for r in caplog.records if "unexpected type" in r.getMessage()]
    assert sorted(w.split(" field ")[1].split(" ")[0] for w in warnings) == [
        "object.can_save_back", "object.inventory[].running", "object.inventory[].vm"]


async def test_result_with_a_count_of_embedded_items() -> None:
    async def content_get(conn: FakeConn, params: Any) -> Any:
        return {"success": True, "content": "text", "embedded_items": 2, "encoding": "utf-8"}

    fake = FakeViewer(v2=True, methods={"object.content.get": content_get})
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            got = await session.call_typed("object.content.get", {"prim_id": "p", "item_id": "i"},
                                           ContentGetResponse)
    assert got.embedded_items == 2 and got.content == "text"


async def test_oversized_message_is_refused_locally() -> None:
    fake = FakeViewer(v2=True)
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            with pytest.raises(MessageTooLarge) as info:
                await session.call("object.content.save", {"content": "x" * (SEND_LIMIT + 1)})
            assert info.value.code == -32006 and str(SEND_LIMIT) in info.value.message
            assert not any(m == "object.content.save" for m, _ in fake.calls)
            assert session.state == "connected"  # nothing was sent, the connection lives on
            await session.call("object.list", {})


async def test_preauth_limit_applies_before_session_ok() -> None:
    fake = FakeViewer(v2=True)
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            conn = session._conn
            assert conn is not None
            conn.session_ok = False  # as before authentication: 64 KB
            with pytest.raises(MessageTooLarge, match=str(PREAUTH_SEND_LIMIT)):
                await conn.send("x" * (PREAUTH_SEND_LIMIT + 1))
            conn.session_ok = True


async def test_close_1009_is_logged_with_the_last_message_size(caplog: Any) -> None:
    fake = FakeViewer(v2=True)

    async def save(conn: FakeConn, params: Any) -> Any:
        await conn.close(1009, "Message too big")
        return None

    fake.methods["object.content.save"] = save
    caplog.set_level(logging.INFO)
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            with pytest.raises(Exception):  # noqa: B017 - NotConnected, the connection went away
                await session.call("object.content.save", {"content": "y" * 5000})
            await rec.wait_for(lambda: bool(rec.of("disconnected")))
    lines = [r.getMessage() for r in caplog.records if "1009" in r.getMessage()]
    assert any("last message we sent was" in line for line in lines)
    size = int(next(line for line in lines if "last message" in line).rsplit("was ", 1)[1].split(" ")[0])
    assert 5000 < size < 5200


async def test_websocket_pings_are_answered() -> None:
    """Newer viewers ping a quiet connection (150 s) and drop one silent for 300 s."""
    fake = FakeViewer(v2=True)
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            with trio.fail_after(2):
                await fake.conn.ws.ping(b"are you there")  # returns when the pong arrives
            assert session.state == "connected"
