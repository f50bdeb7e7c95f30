"""A large object.list: decoded off the trio thread and handed to the listener's load_objects
before the session says connected; later frames wait for it (arrival order)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from support.fakeviewer import FakeConn, FakeViewer, sample_objects
from support.recorder import Recorder
from support.sessions import running

from slfs.session import connection as connection_module
from slfs.session import session as session_module


@pytest.mark.parametrize("stepped", [False, True], ids=["", "every frame parsed in steps"])
async def test_large_object_list_is_loaded_before_connected(monkeypatch: pytest.MonkeyPatch, stepped: bool) -> None:
    monkeypatch.setattr(session_module, "BIG_LIST", 1)
    if stepped:
        monkeypatch.setattr(connection_module, "STEPPED_FRAME", 1)
    base = sample_objects()[0]
    outer: list[trio.Nursery] = []

    async def object_list(conn: FakeConn, params: Any) -> Any:
        async def publish_after_the_answer() -> None:
            await trio.sleep(0.05)
            await conn.notify("object.publish", {"object": dict(base, object_id="late", object_name="Late")})

        outer[0].start_soon(publish_after_the_answer)
        return {"objects": [base]}

    loads: list[tuple[list[str], str]] = []
    ticks: list[str] = []
    sessions: list[Any] = []

    async def load_objects(_rec: Recorder, objects: list[Any]) -> None:
        for _ in range(30):  # 0.3 s, checkpoints between steps as the workspace does
            await trio.sleep(0.01)
            ticks.append(sessions[0].state)
        loads.append(([o.object_id for o in objects], sessions[0].state))

    monkeypatch.setattr(Recorder, "load_objects", load_objects, raising=False)
    fake = FakeViewer(methods={"object.list": object_list})
    with trio.fail_after(10):
        async with trio.open_nursery() as n, running(fake) as (session, rec, _):
            outer.append(n)
            sessions.append(session)
            info = await session.wait_connected(5)
            assert info.viewer_name == "Fake Viewer"
            assert loads == [([base["object_id"]], "connecting")]  # before connected
            assert len(ticks) == 30  # the trio loop ran other tasks meanwhile
            await rec.wait_for(lambda: "publish" in rec.names())
            # The publish sent after the answer came while loading, and is delivered after it.
            assert rec.names()[-2:] == ["connected", "publish"]
            (_info, objects), = rec.of("connected")
            assert [o.object_id for o in objects] == [base["object_id"]]
            assert rec.of("publish")[0].object_id == "late"


async def test_large_object_list_without_load_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "BIG_LIST", 1)
    fake = FakeViewer()
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            (_info, objects), = rec.of("connected")
            assert [o.object_id for o in objects] == [o["object_id"] for o in fake.objects]


async def test_malformed_large_object_list_drops_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "BIG_LIST", 1)

    async def object_list(conn: FakeConn, params: Any) -> Any:
        return {"objects": [{"object_name": "no id"}]}

    fake = FakeViewer(methods={"object.list": object_list})
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await rec.wait_for(lambda: "malformed object.list result" in session.last_error)
            assert "connected" not in rec.names()


@pytest.mark.parametrize("big", [False, True], ids=["small list", "large list"])
async def test_listed_objects_decode_their_inventory_when_asked(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, big: bool) -> None:
    if big:
        monkeypatch.setattr(session_module, "BIG_LIST", 1)
    base = sample_objects()[0]
    odd = dict(base, object_id="odd", object_name="Odd",
               inventory=[dict(i, running="yes") for i in base["inventory"]])

    async def object_list(conn: FakeConn, params: Any) -> Any:
        return {"objects": [base, odd]}

    fake = FakeViewer(methods={"object.list": object_list})
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _):
            await session.wait_connected(5)
            (_info, objects), = rec.of("connected")
            assert [o.object_id for o in objects] == [base["object_id"], "odd"]
            assert "objects[].inventory[].running" not in caplog.text  # nothing of an inventory decoded yet
            assert [i.name for i in objects[0].full().inventory] == [i["name"] for i in base["inventory"]]
            full = objects[1].full()
            assert full.inventory and all(i.running is None and "running" in i.dropped for i in full.inventory)
            objects[1].full()
            assert caplog.text.count("field objects[].inventory[].running of an unexpected type") == 1
