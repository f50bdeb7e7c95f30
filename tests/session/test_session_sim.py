"""ViewerSession against the simulated viewer (slfs.sim) over real sockets."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from support.recorder import Recorder

from slfs.protocol.rpc_errors import RpcError
from slfs.protocol.types import ContentGetResponse
from slfs.session import CallTimeout, NotConnected, ViewerSession

sim_mod = pytest.importorskip("slfs.sim")
SimViewer = sim_mod.SimViewer
sample_world = sim_mod.sample_world

FAST: dict[str, Any] = {"backoff_min": 0.02, "backoff_max": 0.1}


def published_ids(sim: Any) -> set[str]:
    return {o.object_id for o in sim.world.objects.values() if o.published}


class Serving:
    """Runs sim.serve in a cancel scope of its own so a test can stop and restart the viewer."""

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.scope = trio.CancelScope()

    async def _serve(self, port: int, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        self.scope = trio.CancelScope()
        with self.scope:
            await self.sim.serve(port, task_status=task_status)

    async def start(self, nursery: trio.Nursery, port: int = 0) -> int:
        return int(await nursery.start(self._serve, port))

    def stop(self) -> None:
        self.scope.cancel()


def modifiable_id(sim: Any) -> str:
    return next(o.object_id for o in sim.world.objects.values()
                if o.published and o.root.permissions.can_modify)


def some_item(sim: Any) -> tuple[str, str]:
    for obj in sim.world.objects.values():
        if obj.published:
            for prim in obj.prims():
                for item in prim.explorable():
                    if item.type == "script":
                        return prim.prim_id, item.item_id
    raise AssertionError("no script in the sample world")


@asynccontextmanager
async def with_sim(
    version: int = 1, sim_kw: dict[str, Any] | None = None, **kw: Any
) -> AsyncIterator[tuple[Any, ViewerSession, Recorder, trio.Nursery]]:
    sim = SimViewer(sample_world(), viewer_version=version, **(sim_kw or {}))
    rec = Recorder()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(sim.serve, 0)
        session = ViewerSession(rec, "127.0.0.1", port, **{**FAST, **kw})
        await nursery.start(session.run)
        try:
            yield sim, session, rec, nursery
        finally:
            nursery.cancel_scope.cancel()


async def test_connect_and_object_list(viewer_version: int) -> None:
    with trio.fail_after(10):
        async with with_sim(viewer_version) as (sim, session, rec, _):
            info = await session.wait_connected(5)
            assert info.agent_id == sim.world.agent_id
            assert info.agent_name == sim.world.agent_name
            assert info.viewer_name == "Second Life Simulated"
            (_info, objects), = rec.of("connected")
            assert {o.object_id for o in objects} == published_ids(sim)
            assert sim.connections == 1  # the simulator answers 403 to an Origin header
            assert all(not os.path.exists(p) for p in sim.challenge_files)


async def test_publish_unpublish_and_calls() -> None:
    with trio.fail_after(10):
        async with with_sim(2) as (sim, session, rec, _):
            await session.wait_connected(5)
            oid = modifiable_id(sim)
            await sim.unpublish(oid, reason="user")
            await rec.wait_for(lambda: "unpublish" in rec.names())
            assert rec.of("unpublish")[0].object_id == oid
            assert await session.call("object.request", {"object_id": oid}) == {"success": True}
            await rec.wait_for(lambda: "publish" in rec.names())
            assert rec.of("publish")[0].object_id == oid
            prim_id, item_id = some_item(sim)
            got = await session.call_typed(
                "object.content.get", {"prim_id": prim_id, "item_id": item_id}, ContentGetResponse)
            assert isinstance(got.content, str)
            sim.fail_next("object.content.get", RpcError(-32003, "Access denied"))
            with pytest.raises(RpcError) as info:
                await session.call("object.content.get", {"prim_id": prim_id, "item_id": item_id})
            assert info.value.code == -32003
            with pytest.raises(RpcError) as info:
                await session.call("object.request", {})
            assert info.value.code == -32602


async def test_wrong_challenge_reconnects(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ViewerSession, "read_challenge", lambda self, path: "not-the-uuid")
    with trio.fail_after(10):
        async with with_sim(1) as (_sim, session, rec, _):
            await rec.wait_for(lambda: [s for s, _ in rec.states].count("disconnected") >= 2)
            assert "Invalid challenge response" in session.last_error
            assert "connected" not in rec.names()
            monkeypatch.undo()
            await session.wait_connected(5)


async def test_viewer_absent_then_started() -> None:
    sim = SimViewer(sample_world())
    rec = Recorder()
    serving = Serving(sim)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serving.start(nursery)
            serving.stop()  # found a free port; now nothing listens on it
            await trio.sleep(0.05)
            session = ViewerSession(rec, "127.0.0.1", port, **FAST)
            await nursery.start(session.run)
            with trio.fail_after(5):  # its first attempt failed (a fixed wait missed it on a loaded machine)
                while "cannot reach" not in session.last_error:
                    await trio.sleep(0.01)
            assert session.state == "connecting"
            await serving.start(nursery, port)
            await session.wait_connected(5)
            nursery.cancel_scope.cancel()


async def test_viewer_restart() -> None:
    sim = SimViewer(sample_world())
    rec = Recorder()
    serving = Serving(sim)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            port = await serving.start(nursery)
            session = ViewerSession(rec, "127.0.0.1", port, **FAST)
            await nursery.start(session.run)
            await session.wait_connected(5)
            serving.stop()
            await rec.wait_for(lambda: "disconnected" in rec.names())
            lamp = next(o for o in sim.world.objects.values() if not o.published)
            lamp.published = True  # the restarted viewer has a different published state
            await serving.start(nursery, port)
            await rec.wait_for(lambda: len(rec.of("connected")) == 2)
            assert [n for n in rec.names() if n in ("connected", "disconnected")] == [
                "connected", "disconnected", "connected"]
            assert lamp.object_id in {o.object_id for o in rec.of("connected")[1][1]}
            nursery.cancel_scope.cancel()


async def test_disconnect_all_reconnects() -> None:
    with trio.fail_after(10):
        async with with_sim(2) as (sim, session, rec, _):
            await session.wait_connected(5)
            await sim.disconnect_all(1001)
            await rec.wait_for(lambda: len(rec.of("connected")) == 2)
            assert "1001" in rec.of("disconnected")[0]


async def test_call_timeout() -> None:
    with trio.fail_after(10):
        async with with_sim(1, {"method_latency_ms": {"object.content.get": 500}}) as (sim, session, _r, _):
            await session.wait_connected(5)
            prim_id, item_id = some_item(sim)
            with pytest.raises(CallTimeout):
                params = {"prim_id": prim_id, "item_id": item_id}
                await session.call("object.content.get", params, timeout=0.1)
            await trio.sleep(0.6)
            assert session.state == "connected"
            assert await session.call("system.status") == {"status": "OK"}


async def test_pending_calls_fail_on_drop() -> None:
    errors: list[BaseException] = []

    async def caller(session: ViewerSession, prim_id: str, item_id: str) -> None:
        try:
            await session.call("object.content.get", {"prim_id": prim_id, "item_id": item_id})
        except RpcError as exc:
            errors.append(exc)

    with trio.fail_after(10):
        async with with_sim(1, {"method_latency_ms": {"object.content.get": 5000}}) as (sim, session, rec, n):
            await session.wait_connected(5)
            prim_id, item_id = some_item(sim)
            n.start_soon(caller, session, prim_id, item_id)
            n.start_soon(caller, session, prim_id, item_id)
            await rec.wait_for(lambda: sum(1 for m, _ in sim.calls if m == "object.content.get") == 2)
            await sim.disconnect_all()
            await rec.wait_for(lambda: len(errors) == 2)
            assert all(isinstance(e, NotConnected) for e in errors)


async def test_runtime_notifications() -> None:
    with trio.fail_after(10):
        async with with_sim(2) as (sim, session, rec, _):
            await session.wait_connected(5)
            _prim, item_id = some_item(sim)
            await sim.emit_debug(item_id, "hello")
            await sim.emit_error(item_id, "boom", 3, 1)
            await sim.send_syntax_change()
            await rec.wait_for(lambda: "syntax" in rec.names())
            assert rec.of("debug")[0].message == "hello"
            assert rec.of("error")[0].item_id == item_id


@pytest.mark.parametrize(("version", "generation"), [(1, None), (2, None), (1, "G1"), (1, "G2"), (1, "G3"),
                                                     (2, "G4")])
async def test_every_viewers_challenge_file_is_answered(version: int, generation: str | None) -> None:
    """Each generation's own challenge file (its name, its mode: G1/G2's default permissions are
    world-readable) passes every check, so the viewer gets the right answer and says session.ok."""
    with trio.fail_after(10):
        async with with_sim(version, {"generation": generation}) as (sim, session, _rec, _):
            await session.wait_connected(5)
            (path,) = sim.challenge_files
            name = os.path.basename(path)
            assert name.startswith("sl_script_challenge") and name.endswith(".tmp")
            assert sim.client_handshakes[0]["challenge_response"]
