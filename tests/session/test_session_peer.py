"""The session refuses a listener on the viewer's port owned by another uid, and takes our own."""

from __future__ import annotations

import logging
import os
import socket
from contextlib import AsyncExitStack

import attrs
import pytest
import trio
from support.fakeviewer import FakeViewer
from support.foreign import NOBODY, Impostor, foreign_listener
from support.recorder import Recorder

from slfs.session import ViewerSession, peer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_foreign_listener_is_refused_then_our_viewer_is_taken(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="slfs.session")
    checks = 0
    real_check = peer.check_listener

    async def counting(host: str, port: int) -> str | None:
        nonlocal checks
        checks += 1
        return await real_check(host, port)

    monkeypatch.setattr(peer, "check_listener", counting)
    port = free_port()
    want = f"the listener on 127.0.0.1:{port} belongs to uid {NOBODY}, not to us (uid {os.geteuid()}); not connecting"
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            session = ViewerSession(Recorder(), "127.0.0.1", port, backoff_min=0.02, backoff_max=0.1)
            async with foreign_listener(port) as impostor:
                await nursery.start(session.run)
                while checks < 4:  # refused, and retried with backoff
                    await trio.sleep(0.01)
                assert session.state == "connecting"
                assert session.state_detail == f"{want}; retrying"
                assert session.last_error == want
                assert [r.getMessage() for r in caplog.records].count(want) == 1  # logged once, not per retry
            assert impostor.report == {"connections": 0, "bytes": 0}  # not a byte was sent to it
            # The real viewer comes later, on the same port, as us: it is connected to.
            fake = FakeViewer()
            fake.port = port
            await nursery.start(fake.serve)
            info = await session.wait_connected(10)
            assert info.endpoint == f"127.0.0.1:{port}"
            nursery.cancel_scope.cancel()


async def test_port_taken_between_the_check_and_the_connect_gets_not_a_byte(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The race: the look before connecting sees our own listener, then another uid takes the port
    and accepts the connection. The session judges the connection itself and closes it before a
    byte is sent (not even the HTTP upgrade), says so, and backs off."""
    caplog.set_level(logging.WARNING, logger="slfs.session")
    port = free_port()
    ours = socket.socket()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ours.bind(("127.0.0.1", port))
    ours.listen(1)
    checks = 0
    real_check = peer.check_listener
    impostors: list[Impostor] = []
    async with AsyncExitStack() as stack:

        async def racing(host: str, p: int) -> str | None:
            nonlocal checks
            checks += 1
            if checks == 1:
                assert await real_check(host, p) is None  # ours, truly
                ours.close()  # ... and now another uid's takes the port
                impostors.append(await stack.enter_async_context(foreign_listener(port)))
            return None  # every later look "saw ours" too: the race lost each time

        monkeypatch.setattr(peer, "check_listener", racing)
        want = (f"the connection to 127.0.0.1:{port} is served by uid {NOBODY}, not by us (uid {os.geteuid()}); "
                "not talking to it")
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                session = ViewerSession(Recorder(), "127.0.0.1", port, backoff_min=0.02, backoff_max=0.1)
                await nursery.start(session.run)
                while checks < 4:  # refused, and retried with backoff
                    await trio.sleep(0.01)
                assert session.state == "connecting"
                assert session.last_error == want
                assert session.state_detail == f"{want}; retrying"
                assert [r.getMessage() for r in caplog.records].count(want) == 1  # logged once, not per retry
                nursery.cancel_scope.cancel()
        report = await impostors[0].stop()
        assert report["connections"] >= 3  # it was connected to: only the connection's check stopped it
        assert report["bytes"] == 0  # and not a byte was sent to it
    ours.close()


async def test_the_connection_is_judged_from_the_table_read_after_connecting(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our own viewer listens, but the table read after connecting shows the connection's other end
    owned by another uid (as when another uid's socket took the port): refused before the upgrade,
    while every table read before the connection existed would have passed."""
    fake = FakeViewer()
    reads: list[bool] = []  # per read: whether the connection was already in the table
    real_read = peer.read_sockets

    def taken(proc: str = "/proc") -> list[peer.TcpSocket] | None:
        sockets = real_read(proc)
        assert sockets is not None
        connected = any(s.local_port == fake.port and s.state != peer.LISTEN for s in sockets)
        reads.append(connected)
        return [attrs.evolve(s, uid=NOBODY) if s.local_port == fake.port and s.state != peer.LISTEN else s
                for s in sockets]

    monkeypatch.setattr(peer, "read_sockets", taken)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(fake.serve)
            session = ViewerSession(Recorder(), "127.0.0.1", fake.port, backoff_min=0.02, backoff_max=0.1)
            await nursery.start(session.run)
            while len(reads) < 6:
                await trio.sleep(0.01)
            assert "is served by uid 65534" in session.last_error
            assert session.state == "connecting"
            assert fake.requests == [] and fake.conns == []  # no upgrade reached it
            assert True in reads  # the judging read came after the connect
            monkeypatch.setattr(peer, "read_sockets", real_read)
            await session.wait_connected(10)  # the same viewer, judged truly: ours
            nursery.cancel_scope.cancel()


async def test_an_unseen_other_end_is_said_and_the_challenge_relied_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither the connection's other end nor a listener on the port in /proc/net/tcp (a viewer on
    another host, or in another network namespace): not a refusal; the status says the challenge is
    what vouches for the viewer."""
    def unseen(proc: str = "/proc") -> list[peer.TcpSocket]:
        return []

    monkeypatch.setattr(peer, "read_sockets", unseen)
    fake = FakeViewer()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            await nursery.start(fake.serve)
            session = ViewerSession(Recorder(), "127.0.0.1", fake.port, backoff_min=0.02, backoff_max=0.1)
            await nursery.start(session.run)
            await session.wait_connected(10)
            assert session.state_detail.endswith(
                "; the viewer's end of the connection is not in /proc/net/tcp; relying on the challenge")
            nursery.cancel_scope.cancel()
