"""The simulator's explicit sync points: sync() (what the clients sent has been read and dispatched),
idle() (what the sim received has been handled and what it deferred has run), mark/calls_since."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from slfs.session import ViewerSession
from slfs.session.listener import NullListener
from slfs.sim import SimViewer, SyncError


class Unpublishes(NullListener):
    def __init__(self) -> None:
        self.unpublished: list[str] = []

    def on_unpublish(self, msg: Any) -> None:
        self.unpublished.append(msg.object_id)


def ids(sim: SimViewer, name: str) -> dict[str, str]:
    for obj in sim.world.objects.values():
        for prim in obj.prims():
            for item in prim.inventory:
                if item.name == name:
                    return {"prim_id": prim.prim_id, "item_id": item.item_id}
    raise KeyError(name)


async def answer_ping(c: Any) -> dict[str, Any]:
    """Read up to the sim's system.ping request (other frames stay unread) and answer it."""
    msg = await c._take(lambda m: m.get("method") == "system.ping" and "id" in m)
    await c.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"pong": "pong"}})
    return msg


async def test_sync_is_a_barrier_for_frames_sent_before_the_answer(start_sim, connect) -> None:
    with trio.fail_after(10):
        # Handlers that take long: sync waits for the frames to be read and dispatched, not handled.
        sim = await start_sim(method_latency_ms={"system.status": 2000, "system.getVersion": 2000})
        async with connect(sim) as c:
            mark = sim.mark()
            done: list[int] = []

            async def run_sync() -> None:
                done.append(await sim.sync())

            async with trio.open_nursery() as nursery:
                nursery.start_soon(run_sync)
                ping = await c._take(lambda m: m.get("method") == "system.ping" and "id" in m)
                assert ping["id"].startswith("rpc_") and isinstance(ping["params"]["timestamp"], int)
                # Sent after the ping went out and before its answer: all of them are covered.
                await c.request("system.status")
                await c.send({"jsonrpc": "2.0", "method": "system.getVersion"})  # a notification
                await c.request("language.syntax.id")
                await trio.testing.wait_all_tasks_blocked(0.01)  # the sim has read all that
                assert not done  # no answer yet: sync waits
                await c.send({"jsonrpc": "2.0", "id": ping["id"], "result": {"pong": "pong"}})
            assert done == [1]
            assert [m for m, _ in sim.calls_since(mark)] == ["system.status", "system.getVersion",
                                                              "language.syntax.id"]
            assert sim.calls_since(mark, "system.status") == [("system.status", {})]
            # The sim's own ping is neither a client call nor one of the periodic pings.
            assert sim.client_pings == []
            # The slow handlers have started, not finished: idle() waits for them.
            with pytest.raises(SyncError, match=r"system\.status"):
                await sim.idle(timeout=0.2)
            await sim.idle()
            assert (await c.response(1))["result"] == {"status": "OK"}


async def test_sync_refuses_without_clients_and_reports_silence(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        with pytest.raises(SyncError, match="0 authenticated"):
            await sim.sync()
        assert await sim.sync(min_clients=0) == 0
        async with connect(sim, login=False) as c:  # not authenticated: not synced
            await c.recv()
            assert await sim.sync(min_clients=0) == 0
        async with connect(sim) as c:
            with pytest.raises(SyncError, match=r"did not answer system\.ping within 0\.2 s"):
                await sim.sync(timeout=0.2)


async def test_sync_counts_a_connection_that_closes_as_done(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        mark = sim.mark()
        async with trio.open_nursery() as nursery, connect(sim) as c:
            result: list[int] = []

            async def run_sync() -> None:
                result.append(await sim.sync())

            nursery.start_soon(run_sync)
            await c._take(lambda m: m.get("method") == "system.ping")
            await c.request("system.status")
            # closed without answering: what it sent was read before the close
        assert result == [0]
        assert sim.calls_since(mark) == [("system.status", {})]


async def test_sync_covers_every_client(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as a, connect(sim) as b:
            mark = sim.mark()
            async with trio.open_nursery() as nursery:
                result: list[int] = []

                async def run_sync() -> None:
                    result.append(await sim.sync(min_clients=2))

                nursery.start_soon(run_sync)
                for c, method in ((a, "system.status"), (b, "language.syntax.id")):
                    await c.request(method)
                    await answer_ping(c)
            assert result == [2]
            assert sorted(m for m, _ in sim.calls_since(mark)) == ["language.syntax.id", "system.status"]


async def test_idle_waits_for_deferred_actions(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(apply_delay=0.3, publish_delay=0.3)
        target = ids(sim, "Notes/Todo")
        lamp = next(o.object_id for o in sim.world.objects.values() if o.name == "Unpublished Lamp")
        async with connect(sim) as c:
            await sim.idle()  # nothing pending: at once
            await c.result("object.item.modify", {**target, "name": "Renamed"})
            await c.result("object.request", {"object_id": lamp})
            assert sim.item(target["item_id"]).name == "Notes/Todo"  # applied later
            await sim.idle()
            # The modify has been applied and its update sent, the object published.
            assert sim.item(target["item_id"]).name == "Renamed"
            methods = [m for m, _ in sim.notifications_sent]
            assert "object.update" in methods and "object.publish" in methods
            # idle() is quiet now: an empty name is dropped, and no update follows
            sent = len(sim.notifications_sent)
            await c.result("object.item.modify", {**target, "name": "|||"})
            await sim.idle()
            assert sim.item(target["item_id"]).name == "Renamed"
            assert len(sim.notifications_sent) == sent


async def test_idle_waits_for_deferred_properties(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2, properties_delay=0.2)
        house = next(o.object_id for o in sim.world.objects.values() if o.name == "House")
        sim.world.objects[house].deferred_properties = True
        async with connect(sim):
            await sim.publish(house)
            assert sim.world.objects[house].deferred_properties
            await sim.idle()
            assert not sim.world.objects[house].deferred_properties


async def test_sync_with_the_slfs_session(start_sim) -> None:
    """Against the real client: its reader has handled the frames sent before the ping (listener
    callbacks run in the reader), and a call it had started sending is recorded."""
    with trio.fail_after(10):
        sim = await start_sim(method_latency_ms={"system.status": 1000})
        rec = Unpublishes()
        async with trio.open_nursery() as nursery:
            session = ViewerSession(rec, "127.0.0.1", sim.port, backoff_min=0.02, backoff_max=0.1)
            await nursery.start(session.run)
            await session.wait_connected(5)
            oid = next(o.object_id for o in sim.world.objects.values() if o.published)
            await sim.unpublish(oid, reason="user")
            assert await sim.sync() == 1
            assert rec.unpublished == [oid]
            mark = sim.mark()
            nursery.start_soon(session.call, "system.status", {})
            assert await sim.sync() == 1
            assert sim.calls_since(mark) == [("system.status", {})]
            nursery.cancel_scope.cancel()


async def test_quiesce_covers_deferred_work_and_the_clients_reaction(start_sim) -> None:
    """quiesce(): the save's deferred inventory update has gone out, the slfs session has handled
    it, and a call the client made in reaction (here: from the listener, in a task) is recorded."""
    with trio.fail_after(10):
        sim = await start_sim(apply_delay=0.2)
        reacted: list[str] = []

        class Reacting(NullListener):
            def on_update(self, msg: Any) -> None:
                reacted.append(msg.object_id)
                nursery.start_soon(session.call, "system.status", {})

        async with trio.open_nursery() as nursery:
            session = ViewerSession(Reacting(), "127.0.0.1", sim.port, backoff_min=0.02, backoff_max=0.1)
            await nursery.start(session.run)
            await session.wait_connected(5)
            target = ids(sim, "Hello")
            await session.call("object.content.save", {**target, "content": "default { state_entry() { } }"})
            mark = sim.mark()
            await sim.quiesce()
            assert reacted  # the deferred update went out and was handled
            assert ("system.status", {}) in sim.calls_since(mark)
            nursery.cancel_scope.cancel()
