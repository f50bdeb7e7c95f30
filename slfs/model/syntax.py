"""The viewer's syntax-definition files (language.syntax.cache / .get), for luau-lsp and selene."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from .. import event_types as ev
from ..protocol.types import SyntaxCacheFile, SyntaxCacheGetParams, SyntaxCacheList
from ..world.fs_errors import CallCut, FsError
from .calls import Calls

log = logging.getLogger(__name__)


class SyntaxFiles:
    def __init__(self, calls: Calls, spawn: Callable[..., None]) -> None:
        self.calls = calls
        self.spawn = spawn
        self.files: dict[str, bytes] = {}
        self.syntax_id = ""

    def on_event(self, event: ev.SlfsEvent) -> None:
        # The files change with the session and with the viewer's syntax.
        if isinstance(event, (ev.Connected, ev.SyntaxChange)):
            self.spawn(self.refresh)

    def status(self) -> dict[str, Any]:
        return {}

    async def refresh(self) -> None:
        """Fetch every file the viewer's cache lists; keep the old set if the viewer fails."""
        try:
            listing: SyntaxCacheList = await self.calls.call("syntax", "language.syntax.cache", {}, SyntaxCacheList)
            files: dict[str, bytes] = {}
            for name in listing.files:
                if "/" in name or name in ("", ".", ".."):
                    log.warning("ignoring syntax file with an unusable name %r", name)
                    continue
                got: SyntaxCacheFile = await self.calls.call(f"syntax {name}", "language.syntax.get",
                                                       SyntaxCacheGetParams(filename=name),
                                                       SyntaxCacheFile)
                content = got.content
                files[name] = (content if isinstance(content, str) else json.dumps(content, indent=2)).encode()
        except FsError as exc:
            # The session dropped meanwhile (the call was cut, maybe before the session says it is
            # down): its next `connected` refreshes.
            if isinstance(exc, CallCut) or not self.calls.connected:
                log.info("syntax files not refreshed (the session dropped; again when it is back): %s", exc.message)
            else:
                log.warning("syntax files not refreshed: %s", exc.message)
            return
        self.files = files
        log.info("syntax files: %d from the viewer", len(files))
