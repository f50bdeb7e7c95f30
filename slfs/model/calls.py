"""Calls to the viewer: every failure an FsError, transient errors retried, a call made while the
session reconnects after a drop waits for it (bounded), and the regions that answered "down".

The sink (workspace.py) tells this module when a session is up (`connected_again`) and when it
dropped (`dropped`); a call cut by a drop the session has not reported yet marks the drop too.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from typing import Any

import trio

from ..backoff import Backoff
from ..protocol.codec import RequestParams, encode_params
from ..protocol.rpc_errors import RpcError
from ..session import CONNECTED, NotConnected, ViewerSession
from ..world.fs_errors import CallCut, from_rpc, region_down
from ..world.tree import Folder, Tree
from .options import Options

log = logging.getLogger(__name__)


class Calls:
    """The viewer's methods, called for the model and the layers above."""

    def __init__(self, session: ViewerSession, tree: Tree, options: Options, note_error: Callable[[str], None]) -> None:
        self.session = session
        self.tree = tree
        self.options = options
        self.note_error = note_error
        # Objects whose region answered "not connected" to the last call about them: id -> name.
        self.regions_down: dict[str, str] = {}
        self._dropped_at: float | None = None  # trio clock of the last drop of a ready session
        self._was_up = False  # a session was up once: a call cut by a drop may wait for the next

    @property
    def connected(self) -> bool:
        return self.session.state == CONNECTED

    def connected_again(self) -> None:
        """A session is up (the sink's on_connected)."""
        self._was_up = True
        self._dropped_at = None

    def dropped(self) -> None:
        """The session dropped (the sink's on_disconnected): calls wait for the next, bounded."""
        self._dropped_at = trio.current_time()

    async def call(self, what: str, method: str, params: RequestParams, result_type: type[Any] | None = None,
                   *, timeout: float | None = None, retries: int = 0,
                   transient: Callable[[RpcError], bool] = lambda _e: False, idempotent: bool = False) -> Any:
        """Call the viewer; every failure becomes an FsError with a clear errno and message.

        An error `transient` says will pass is retried up to `retries` times, with jittered
        exponential backoff. A region that stays down is named in `.slfs/status`."""
        about = self._object_of(params)
        # Reconnecting right after a drop: wait (bounded) rather than fail at once. A call the
        # drop interrupts is not sent again (a create might then happen twice).
        await self.await_viewer()
        backoff = Backoff(0.1, 2.0)
        resent = False
        for attempt in range(retries + 2):  # one more for a read resent after a reconnect
            try:
                if result_type is None:
                    result = await self.session.call(method, params, timeout=timeout)
                else:
                    result = await self.session.call_typed(method, params, result_type, timeout=timeout)
                if about is not None:
                    self.regions_down.pop(about.uuid, None)
                return result
            except NotConnected as exc:
                if self._dropped_at is None and self._was_up:
                    self._dropped_at = trio.current_time()  # the drop, before the session reports it
                if idempotent and not resent and await self.await_viewer():
                    resent = True  # cut by a drop and the session is back: asking again is safe
                    continue
                raise CallCut(errno.EIO, f"{what}: not connected to the viewer ({exc.message})") from None
            except RpcError as exc:
                if attempt >= retries or not transient(exc):
                    err = from_rpc(exc, what)
                    if region_down(exc) and about is not None:
                        self.regions_down[about.uuid] = about.name or about.uuid
                        self.note_error(err.message)
                    raise err from None
                delay = backoff.delay()
                log.info("%s: %s; retrying in %.2f s", what, exc.message, delay)
                await trio.sleep(delay)
        raise AssertionError("unreachable")

    async def await_viewer(self) -> bool:
        """Whether the session is up, waiting for it while it reconnects after a drop: at most
        `reconnect_wait` seconds from the drop (a viewer gone for longer fails calls at once)."""
        if self.session.ready:
            return True
        if self._dropped_at is None:
            return False
        left = self._dropped_at + self.options.reconnect_wait - trio.current_time()
        if left <= 0:
            return False
        with trio.move_on_after(left):
            await self.session.wait_ready()
            return True
        return False

    def _object_of(self, params: RequestParams) -> Folder | None:
        """The object folder a call is about (by its prim_id), for status lines."""
        wire = encode_params(params) or {}
        node = self.tree.find(str(wire.get("prim_id") or wire.get("object_id") or ""))
        return node.object_folder if isinstance(node, Folder) else None

    def status(self) -> dict[str, Any]:
        return {"region_unavailable": ", ".join(sorted(self.regions_down.values())) or "none"}
