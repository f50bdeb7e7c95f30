"""Requests with typed params: the session sends a params object as codec.to_json encodes it."""

from __future__ import annotations

from typing import Any

import trio
from support.fakeviewer import FakeConn, FakeViewer
from support.recorder import Recorder
from support.sessions import FAST, running

from slfs.protocol.types import (
    ContentGetResponse,
    ContentSaveParams,
    ItemAddress,
    ItemModifyParams,
    NextOwnerPermissions,
    SetRunningParams,
)
from slfs.session import ViewerSession


async def test_params_objects_are_sent_as_json_without_none_fields() -> None:
    async def content_get(conn: FakeConn, params: Any) -> Any:
        return {"success": True, "content": f"text of {params['item_id']}"}

    async def ok(conn: FakeConn, params: Any) -> Any:
        return {"success": True}

    fake = FakeViewer(methods={"object.content.get": content_get, "object.script.set_running": ok,
                               "object.content.save": ok, "object.item.modify": ok})
    with trio.fail_after(10):
        async with running(fake) as (session, _rec, _):
            await session.wait_connected(5)
            await session.call("object.script.set_running", SetRunningParams(prim_id="p", item_id="i", running=False))
            got = await session.call_typed("object.content.get", ItemAddress(prim_id="p", item_id="i"),
                                           ContentGetResponse)
            await session.call("object.content.save", ContentSaveParams(prim_id="p", item_id="i", content="x"))
            await session.call("object.item.modify", ItemModifyParams(
                prim_id="p", item_id="i", permissions=NextOwnerPermissions(next_owner=0x82000)))
            await session.call("object.content.save", {"prim_id": "p", "item_id": "i", "content": "y"})  # a dict too
    assert got.content == "text of i"
    sent = [(m, p) for m, p in fake.calls if m.startswith("object.")]
    assert sent[-5:] == [
        ("object.script.set_running", {"prim_id": "p", "item_id": "i", "running": False}),
        ("object.content.get", {"prim_id": "p", "item_id": "i"}),
        ("object.content.save", {"prim_id": "p", "item_id": "i", "content": "x"}),
        ("object.item.modify", {"prim_id": "p", "item_id": "i", "permissions": {"next_owner": 0x82000}}),
        ("object.content.save", {"prim_id": "p", "item_id": "i", "content": "y"}),
    ]


async def test_ping_and_goodbye_are_typed() -> None:
    fake = FakeViewer()
    rec = Recorder()
    with trio.fail_after(10):
        async with trio.open_nursery() as outer:
            port = await outer.start(fake.serve)
            session = ViewerSession(rec, "127.0.0.1", port, **FAST, ping_interval=0.02, ping_timeout=0.5)
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as inner:
                    await inner.start(session.run)
                    await session.wait_connected(5)
                    await rec.wait_for(lambda: any(m == "system.ping" for m, _p in fake.calls))
                    scope.cancel()
            notes = fake.conn.notifications
            await rec.wait_for(lambda: any(m["method"] == "session.disconnect" for m in notes))
            outer.cancel_scope.cancel()
    ping = next(p for m, p in fake.calls if m == "system.ping")
    assert set(ping) == {"timestamp"} and isinstance(ping["timestamp"], int)
    bye = next(m for m in notes if m["method"] == "session.disconnect")
    assert bye["params"] == {"reason": 1, "message": "Editor closed"}
