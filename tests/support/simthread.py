"""A simulated viewer that outlives one test: it runs in its own thread, in its own trio loop, so that
a module's tests can share one mount (tests/support/shared.py) although pytest-trio gives every test
a trio loop of its own.

A test reaches it through `SimBridge`, which stands in for the `SimViewer` of a private mount: an
async method of the sim runs in the sim's loop and the test awaits its result in its own loop; a
plain method runs in the sim's loop too, while the calling thread waits (they are short: no sim
method waits on the test); any other attribute (`calls`, `world`, `profile`, ...) is read as it
is, which is safe for what tests read (lists appended to, dicts of the world) once they have
synchronised with the sim (`quiesce`).
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import trio
import trio.lowlevel

from slfs.sim import SimViewer, World

CALL_TIMEOUT = 60.0  # a bridged call never waits longer (tests are bounded at 120 s)


class SimThread:
    """One SimViewer serving `port` in a daemon thread until `stop()`."""

    def __init__(self, world: World, port: int, **sim_kwargs: Any) -> None:
        self.port = port
        self.sim = SimViewer(world, **sim_kwargs)
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name=f"sim:{port}", daemon=True)

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the simulated viewer did not start on port {self.port} within {timeout} s")
        if self._error is not None:
            raise RuntimeError(f"the simulated viewer did not start on port {self.port}: {self._error!r}")

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:
            self._error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for _ in range(50):  # the port may linger briefly after a stop
                try:
                    await nursery.start(self.sim.serve, self.port)
                    break
                except OSError:
                    await trio.sleep(0.1)
            else:
                raise OSError(f"could not listen on port {self.port}")
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def stop(self, timeout: float = 10.0) -> None:
        """End the sim's loop (its connections close) and wait for the thread."""
        if self._token is not None and self._stop is not None and self._thread.is_alive():
            try:
                self._token.run_sync_soon(self._stop.set)
            except trio.RunFinishedError:
                pass
        self._thread.join(timeout)

    # --- calls from another thread (a test's trio loop) -----------------------------------------

    def call_sync(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a plain function in the sim's loop; the calling thread waits for it."""
        assert self._token is not None
        done = threading.Event()
        box: list[Any] = []

        def run() -> None:
            try:
                box.append((True, fn(*args, **kwargs)))
            except BaseException as exc:
                box.append((False, exc))
            done.set()

        self._token.run_sync_soon(run)
        if not done.wait(CALL_TIMEOUT):
            raise TimeoutError(f"the simulated viewer did not run {fn!r} within {CALL_TIMEOUT} s")
        ok, value = box[0]
        if not ok:
            raise value
        return value

    async def call_async(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Await a coroutine function in the sim's loop from another trio loop."""
        assert self._token is not None and self._nursery is not None
        caller = trio.lowlevel.current_trio_token()
        finished = trio.Event()
        box: list[Any] = []

        async def run() -> None:
            try:
                box.append((True, await fn(*args, **kwargs)))
            except BaseException as exc:
                box.append((False, exc))
            try:
                caller.run_sync_soon(finished.set)
            except trio.RunFinishedError:
                pass

        nursery = self._nursery
        self._token.run_sync_soon(lambda: nursery.start_soon(run))
        with trio.fail_after(CALL_TIMEOUT):
            await finished.wait()
        ok, value = box[0]
        if not ok:
            raise value
        return value


class SimBridge:
    """What a test on a shared mount gets as `m.sim` (see the module docstring)."""

    def __init__(self, thread: SimThread) -> None:
        object.__setattr__(self, "_thread", thread)

    def __getattr__(self, name: str) -> Any:
        thread: SimThread = object.__getattribute__(self, "_thread")
        value = getattr(thread.sim, name)
        if inspect.iscoroutinefunction(value):
            async def bridged_async(*args: Any, **kwargs: Any) -> Any:
                return await thread.call_async(value, *args, **kwargs)
            return bridged_async
        if inspect.ismethod(value):
            def bridged(*args: Any, **kwargs: Any) -> Any:
                return thread.call_sync(value, *args, **kwargs)
            return bridged
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        thread: SimThread = object.__getattribute__(self, "_thread")
        thread.call_sync(setattr, thread.sim, name, value)
