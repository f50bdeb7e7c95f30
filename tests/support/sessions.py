"""A ViewerSession running against the fake viewer, for the session tier."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from slfs.session import ViewerSession

from .fakeviewer import FakeViewer
from .recorder import Recorder

FAST: dict[str, Any] = {"backoff_min": 0.02, "backoff_max": 0.1}


@asynccontextmanager
async def running(
    fake: FakeViewer, **kw: Any
) -> AsyncIterator[tuple[ViewerSession, Recorder, trio.Nursery]]:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(fake.serve)
        rec = Recorder()
        session = ViewerSession(rec, "127.0.0.1", port, **{**FAST, **kw})
        await nursery.start(session.run)
        try:
            yield session, rec, nursery
        finally:
            nursery.cancel_scope.cancel()
