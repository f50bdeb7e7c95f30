"""sim.send_raw: frames sent exactly as given, to every authenticated connection only."""

from __future__ import annotations

import trio


async def test_send_raw_reaches_authenticated_connections_as_is(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim = await start_sim()
        async with connect(sim) as a, connect(sim) as b, connect(sim, login=False) as stranger:
            assert await sim.send_raw("{not json") == 2
            assert await sim.send_raw(b"\xff\x00binary") == 2
            for c in (a, b):
                assert await c.ws.get_message() == "{not json"
                assert await c.ws.get_message() == b"\xff\x00binary"
            # Nothing was recorded as a call or a notification; the sim still answers.
            assert sim.calls == [] and sim.notifications_sent == []
            assert (await a.result("system.status"))["status"]
            # The unauthenticated connection got its handshake and nothing else.
            assert (await stranger.recv())["method"] == "session.handshake"
            with trio.move_on_after(0.2) as scope:
                await stranger.ws.get_message()
            assert scope.cancelled_caught
