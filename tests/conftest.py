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
Every test that uses these fixtures runs once per simulated viewer version (`viewer_version`,
ids `v1`/`v2`), and, in modules marked `pytest.mark.generations` (all of G1-G4, or those it names),
once per viewer generation too (ids `g1`-`g4`: the sim's `generation`, `viewer_generation` in the
test; a G1 mount explores the published objects again, as G1 has no object.list);
`SLFS_TEST_VIEWERS` (default `1,2,G1,G2,G3,G4`) picks which. The viewer is the default of every
`start_sim` of the mount, a restart included; `sim_kwargs={"viewer_version": N}` overrides it. A
test that depends on a difference between the versions says so:

    @pytest.mark.viewer(2, reason="V2 refuses notecards over 64 KiB; V1 truncates them")

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

VIEWER_VERSIONS = (1, 2)
# The viewers the e2e suite runs against: the two protocol documents' readings ("1", "2") and the
# four generations of the shipped C++ (../shared/research/viewer-source.md §1). A generation runs
# only the modules marked `generations` (session, read, save, compile, runtime), to keep CI short.
VIEWERS = ("1", "2", "G1", "G2", "G3", "G4")
GENERATIONS = ("G1", "G2", "G3", "G4")
BASE_VERSION = {"1": 1, "2": 2, "G1": 1, "G2": 1, "G3": 1, "G4": 2}  # the sim's viewer_version of each

# Every daemon and in-process Operations of the suite checks each attribute a listing replays
# against a fresh one (slfs/fs/operations.py CHECK_LISTINGS_ENV): a change the model does not
# report fails the readdir with a traceback, which fails the test.
os.environ.setdefault("SLFS_CHECK_LISTINGS", "1")


def selected_viewers() -> list[str]:
    """The simulated viewers the e2e tests run against: `$SLFS_TEST_VIEWERS` (default all)."""
    raw = os.environ.get("SLFS_TEST_VIEWERS", "").strip()
    if not raw:
        return list(VIEWERS)
    chosen = {v.strip().upper() for v in raw.replace(" ", ",").split(",") if v.strip()}
    if not chosen or any(v not in VIEWERS for v in chosen):
        raise pytest.UsageError(f"SLFS_TEST_VIEWERS={raw!r}: expected a comma-separated subset of {VIEWERS}")
    return [v for v in VIEWERS if v in chosen]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "viewer(*versions, reason): the test depends on a difference between simulated viewer versions and "
        "runs only against these (1: the older document and G1-G3, 2: the newer document and G4)",
    )
    config.addinivalue_line(
        "markers", "generations(*names): the tests also run against these viewer generations (default G1-G4)")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`viewer_version` (used by mount_factory): one test per selected viewer, narrowed by `viewer(...)`;
    the generations only for tests marked `generations`."""
    if "viewer_version" not in metafunc.fixturenames:
        return
    viewers = selected_viewers()
    marked = metafunc.definition.get_closest_marker("generations")
    wanted = set(marked.args or GENERATIONS) if marked is not None else set()
    if any(g not in GENERATIONS for g in wanted):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: generations(...) takes some of {GENERATIONS}")
    viewers = [v for v in viewers if v not in GENERATIONS or v in wanted]
    marker = metafunc.definition.get_closest_marker("viewer")
    if marker is not None:
        if not marker.args or any(v not in VIEWER_VERSIONS for v in marker.args) or not marker.kwargs.get("reason"):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: use @pytest.mark.viewer(N, ..., reason='...')")
        viewers = [v for v in viewers if BASE_VERSION[v] in marker.args]
    if viewers:
        params = [pytest.param(v, id=f"v{v}" if v.isdigit() else v.lower()) for v in viewers]
    else:
        only = ",".join(str(v) for v in marker.args) if marker is not None else "?"
        why = marker.kwargs["reason"] if marker is not None else "no viewer selected"
        skip = pytest.mark.skip(reason=f"viewer {only} only ({why}); SLFS_TEST_VIEWERS excludes it")
        first = str(marker.args[0]) if marker is not None else "1"
        params = [pytest.param(first, id=f"v{first}", marks=skip)]
    metafunc.parametrize("viewer_version", params, indirect=True)


@pytest.fixture
def viewer_version(request: pytest.FixtureRequest) -> int:
    """The simulated viewer version of this run of the test (see pytest_generate_tests): 1 or 2, the
    base of its generation when it runs against one."""
    return BASE_VERSION[str(request.param)]


@pytest.fixture
def viewer_generation(request: pytest.FixtureRequest) -> str | None:
    """The generation (G1-G4) this run of the test plays, None for the documents' readings."""
    callspec = getattr(request.node, "callspec", None)
    viewer = str(callspec.params.get("viewer_version", "1")) if callspec is not None else "1"
    return viewer if viewer in GENERATIONS else None


@pytest.fixture
async def mount_factory(nursery: trio.Nursery, tmp_path: Path, viewer_version: int,
                        viewer_generation: str | None) -> AsyncIterator[MountFactory]:
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
        m = Mount(nursery, None, mnt, free_port(), full_env, args, allow_traceback, logdir, viewer_version,
                  viewer_generation)
        mounts.append(m)
        if sim:
            await m.start_sim(world, **(sim_kwargs or {}))
        if start:
            await m.start_daemon(wait_state=wait_state if sim else (wait_state or None), options=options)
            if sim and wait_state == "connected" and m.generation == "G1":
                await m.explore_published()  # G1 has no object.list: the user explores again
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
