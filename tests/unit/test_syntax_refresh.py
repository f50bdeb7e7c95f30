"""A refresh of the syntax files that the viewer's drop cuts is redone at the next `connected`:
logged at info, not as a warning, even before the session says it is down (model/syntax.py)."""

from __future__ import annotations

import errno
import logging
from typing import Any

import pytest

from slfs.model.syntax import SyntaxFiles
from slfs.world.fs_errors import CallCut, FsError


class FailingCalls:
    def __init__(self, exc: FsError, connected: bool) -> None:
        self.exc = exc
        self.connected = connected

    async def call(self, *_args: Any, **_kwargs: Any) -> Any:
        raise self.exc


@pytest.mark.parametrize(("exc", "connected", "level"), [
    (CallCut(errno.EIO, "syntax: not connected to the viewer (Connection closed)"), True, "INFO"),
    (FsError(errno.EIO, "syntax: not connected to the viewer"), False, "INFO"),
    (FsError(errno.ETIMEDOUT, "syntax: viewer timed out"), True, "WARNING"),
])
async def test_a_refresh_cut_by_a_drop_is_info(exc: FsError, connected: bool, level: str,
                                               caplog: pytest.LogCaptureFixture) -> None:
    files = SyntaxFiles(FailingCalls(exc, connected), lambda *_a: None)  # type: ignore[arg-type]
    files.files = {"old.yaml": b"kept"}
    caplog.set_level(logging.INFO, "slfs.model.syntax")
    await files.refresh()
    assert [r.levelname for r in caplog.records if "not refreshed" in r.getMessage()] == [level]
    assert files.files == {"old.yaml": b"kept"}  # the old set stays
