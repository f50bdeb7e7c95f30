"""Blocking client calls from the server's async tools: each runs in a worker thread under a bound,
and is abandoned (with `cancel` called, which ends a wait on the daemon at once) when the bound
passes or the client cancels the request (notifications/cancelled cancels the tool's scope). The
server never waits on the daemon without a bound, and never blocks its own event loop."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver.exceptions import ToolError

from ..client import ClientError
from .results import fail

T = TypeVar("T")

CALL_TIMEOUT = 30.0  # one ordinary request of the daemon, or one file operation on the mount
SAVE_TIMEOUT = 120.0  # a save: the viewer's store and compile (the mount bounds its own retries)
BUILD_TIMEOUT = 300.0  # a build saves every preprocessed script under a folder, one by one


async def blocking(fn: Callable[..., T], /, *args: Any, timeout: float = CALL_TIMEOUT, what: str = "the call",
                   cancel: Callable[[], None] | None = None, mountpoint: str | None = None, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a worker thread, at most `timeout` s; a ClientError becomes a tool error."""
    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), abandon_on_cancel=True)
    except TimeoutError:
        if cancel is not None:
            cancel()
        raise ToolError(f"{what}: no answer within {timeout:g} s (the mount goes on with it; "
                        "check slfs_status and slfs_diagnostics)") from None
    except anyio.get_cancelled_exc_class():
        if cancel is not None:
            cancel()
        raise
    except ClientError as exc:
        raise fail(exc, mountpoint) from None
