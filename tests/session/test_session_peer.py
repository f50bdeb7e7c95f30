"""The session refuses a listener on the viewer's port owned by another uid, and takes our own."""

from __future__ import annotations

import logging
import os
import socket

import pytest
import trio

from slfs.session import ViewerSession, peer

from .fakeviewer import FakeViewer
from .foreign import NOBODY, foreign_listener
from .recorder import Recorder


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
