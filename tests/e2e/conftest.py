"""The end-to-end fixtures: a real slfs mount (daemon subprocess) over an in-process simulated
viewer (implementation: tests/support/mount.py). Every test here is marked `fuse`, so
`pytest -m "not fuse"` is the suite without a mount.

    async def test_x(mount_factory):
        m = await mount_factory()                 # sample world, `slfs mount -f` subprocess
        out = await m.out("ls", "-l", m.mnt / "Hello Cube")
        assert (await m.status())["state"] == "connected"

    async def test_y(mounted):                    # the same, with defaults
        ...

The sim runs in the test's trio nursery, so anything touching the mount must not block the trio
thread: use `m.run(...)` (a subprocess) or `m.thread(fn, ...)` (a worker thread).
Every test that uses these fixtures runs once per selected viewer (`viewer_version`, tests/conftest.py).
The viewer is the default of every `start_sim` of the mount, a restart included;
`sim_kwargs={"viewer_version": N}` overrides it.

Teardown always unmounts (SIGTERM, then `fusermount3 -u -z`, then SIGKILL) and fails the test if
the daemon logged a traceback (unless `allow_traceback=True`). In CI (`$CI` set) a missing tool or
/dev/fuse fails instead of skipping.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from support.mount import Mount, MountFactory, open_mounts
from support.writes import write_mount

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.fuse)


@pytest.fixture
async def mount_factory(nursery: trio.Nursery, tmp_path: Path, viewer_version: int,
                        viewer_generation: str | None) -> AsyncIterator[MountFactory]:
    """`await mount_factory(world=None, sim=True, sim_kwargs={}, args=(), env={}, wait_state=...,
    allow_traceback=False, start=True)` -> Mount."""
    async with open_mounts(nursery, tmp_path, viewer_version, viewer_generation) as make:
        yield make


@pytest.fixture
async def mounted(mount_factory: MountFactory) -> Mount:
    """The sample world, mounted with `slfs mount -f`, connected."""
    return await mount_factory()


@pytest.fixture
async def wm(mount_factory: MountFactory) -> Mount:
    """The write world (support.writes.write_world), mounted for the write tests."""
    return await write_mount(mount_factory)
