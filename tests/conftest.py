"""Shared fixtures for the end-to-end tests: a real slfs mount (daemon subprocess) over an
in-process simulated viewer (implementation: tests/e2e/harness.py).

    async def test_x(mount_factory):
        m = await mount_factory()                 # sample world, `slfs mount -f` subprocess
        out = await m.out("ls", "-l", m.mnt / "Hello Cube")
        assert (await m.status())["state"] == "connected"

    async def test_y(mounted):                    # the same, with defaults
        ...

The sim runs in the test's trio nursery, so anything touching the mount must not block the trio
thread: use `m.run(...)` (a subprocess) or `m.thread(fn, ...)` (a worker thread).
Teardown always unmounts (SIGTERM, then `fusermount3 -u -z`, then SIGKILL) and fails the test if
the daemon logged a traceback (unless `allow_traceback=True`). In CI (`$CI` set) a missing tool or
/dev/fuse fails instead of skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
from e2e.harness import Mount, MountFactory, free_port, is_mounted, new_mountpoint, require_fuse

from slfs.sim import World


@pytest.fixture
async def mount_factory(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[MountFactory]:
    """`await mount_factory(world=None, sim=True, sim_kwargs={}, args=(), env={}, wait_state=...,
    allow_traceback=False, start=True)` -> Mount."""
    require_fuse()
    mounts: list[Mount] = []

    async def make(
        world: World | None = None,
        *,
        sim: bool = True,
        sim_kwargs: dict[str, Any] | None = None,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        wait_state: str | None = "connected",
        allow_traceback: bool = False,
        start: bool = True,
        options: Sequence[str] = (),
    ) -> Mount:
        mnt = new_mountpoint()
        full_env = dict(os.environ)
        # Registry, logs and overlay stay inside the test's own directories.
        full_env.update(
            XDG_RUNTIME_DIR=str(tmp_path / f"run{len(mounts)}"),
            XDG_STATE_HOME=str(tmp_path / f"state{len(mounts)}"),
            XDG_DATA_HOME=str(tmp_path / f"data{len(mounts)}"),
            PYTHONUNBUFFERED="1",
        )
        os.makedirs(full_env["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
        full_env.update(env or {})
        logdir = tmp_path / f"logs{len(mounts)}"
        logdir.mkdir()
        m = Mount(nursery, None, mnt, free_port(), full_env, args, allow_traceback, logdir)
        mounts.append(m)
        if sim:
            await m.start_sim(world, **(sim_kwargs or {}))
        if start:
            await m.start_daemon(wait_state=wait_state if sim else (wait_state or None), options=options)
        return m

    try:
        yield make
    finally:
        problems = []
        with trio.CancelScope(shield=True):
            for m in mounts:
                await m.stop_daemon()
                if is_mounted(m.mnt):
                    problems.append(f"{m.mnt} still mounted")
                if not m.allow_traceback and "Traceback" in m.log_text():
                    problems.append(f"daemon logged a traceback:\n{m.log_text()}")
                if not is_mounted(m.mnt):
                    shutil.rmtree(m.mnt.parent, ignore_errors=True)
        if problems:
            pytest.fail("\n".join(problems))


@pytest.fixture
async def mounted(mount_factory: MountFactory) -> Mount:
    """The sample world, mounted with `slfs mount -f`, connected."""
    return await mount_factory()
