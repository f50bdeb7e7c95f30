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

`mounted` is shared by the tests of a module (one daemon per module and viewer, tests/support/shared.py):
a test gets it in the state a fresh mount would have, or says why it needs its own mount with
`@pytest.mark.own_mount("why")` (it restarts or stops the daemon or viewer, reads the mount's first
events, ...). `SLFS_TEST_SHARED=0` gives every test its own mount (to tell a sharing problem from a bug).

Teardown always unmounts (SIGTERM, then `fusermount3 -u -z`, then SIGKILL) and fails the test if
the daemon logged a WARNING, ERROR or traceback the test did not declare with
`@pytest.mark.allow_log(regex, ...)` (tests/support/logcheck.py). In CI (`$CI` set) a missing tool
or /dev/fuse fails instead of skipping.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio
from support import logcheck
from support.mount import Mount, MountFactory, open_mounts
from support.shared import SharedMounts
from support.writes import write_mount

from slfs.sim import sample_world

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.fuse)


@pytest.fixture
async def mount_factory(nursery: trio.Nursery, tmp_path: Path, viewer_version: int,
                        viewer_generation: str | None, request: pytest.FixtureRequest) -> AsyncIterator[MountFactory]:
    """`await mount_factory(world=None, sim=True, sim_kwargs={}, args=(), env={}, wait_state=...,
    allow_traceback=False, start=True)` -> Mount, the test's own."""
    async with open_mounts(nursery, tmp_path, viewer_version, viewer_generation, request.node) as make:
        yield make


@pytest.fixture(scope="module")
def shared_mounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedMounts]:
    """The module's shared mounts (one at a time: tests are grouped by viewer)."""
    holder = SharedMounts(tmp_path_factory.mktemp("shared"))
    try:
        yield holder
    finally:
        holder.close()
    if holder.problems:
        pytest.fail("\n".join(holder.problems))


def sharing(node: pytest.Item) -> bool:
    return node.get_closest_marker("own_mount") is None and os.environ.get("SLFS_TEST_SHARED", "1") != "0"


@pytest.fixture
async def mounted(request: pytest.FixtureRequest, mount_factory: MountFactory, shared_mounts: SharedMounts,
                  viewer_version: int, viewer_generation: str | None) -> AsyncIterator[Mount]:
    """The sample world, mounted with `slfs mount -f`, connected: the module's shared mount, or
    the test's own when it is marked `own_mount`."""
    node = request.node
    if not sharing(node):
        yield await mount_factory()
        return
    viewer = str(node.callspec.params["viewer_version"])
    m = await trio.to_thread.run_sync(shared_mounts.get, ("sample", viewer), sample_world, viewer, viewer_version,
                                      viewer_generation, [])
    await trio.to_thread.run_sync(m.begin_test)
    try:
        yield m
    finally:
        with trio.CancelScope(shield=True):
            problems = []
            if m.popen is None or m.popen.poll() is not None:
                problems.append(f"the shared daemon exited with {m.popen and m.popen.returncode}")
                await trio.to_thread.run_sync(shared_mounts.close)
            else:
                # What the test set going (a save, a delete in its grace period) ends before the
                # world is compared: nothing of it may reach the next test.
                await trio.to_thread.run_sync(m.settle)
                problems += logcheck.report(await trio.to_thread.run_sync(m.new_log_text), node,
                                            f"shared daemon {m.mnt}")
                if await trio.to_thread.run_sync(m.world_changed):
                    problems += await trio.to_thread.run_sync(m.reset)
        if problems:
            pytest.fail("\n".join(problems))


@pytest.fixture
async def wm(mount_factory: MountFactory) -> Mount:
    """The write world (support.writes.write_world), mounted for the write tests: the test's own
    mount, because a write leaves daemon state a reset of the viewer does not undo (history
    versions, recovery copies, the overlay, kept times), which the write tests assert on."""
    return await write_mount(mount_factory)
