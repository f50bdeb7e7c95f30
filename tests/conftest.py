"""Fixtures for every tier: the simulated viewer a test runs against.

A test that talks to a viewer (the sim, a mount over it, the in-process fs over it) takes
`viewer_version` and runs once per selected viewer (ids `v1`/`v2`), and, in modules marked
`pytest.mark.generations` (all of G1-G4, or those it names), once per viewer generation too (ids
`g1`-`g4`: the sim's `generation`, `viewer_generation` in the test; a G1 mount explores the
published objects again, as G1 has no object.list). `SLFS_TEST_VIEWERS` (default
`1,2,G1,G2,G3,G4`) picks which (tests/support/viewers.py). A test that depends on a difference
between the versions says so:

    @pytest.mark.viewer(2, reason="V2 refuses notecards over 64 KiB; V1 truncates them")

The end-to-end fixtures (`mount_factory`, `mounted`, `wm`) are in tests/e2e/conftest.py; the
harnesses and worlds in tests/support/ (tests/README.md names the tiers).
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.order import SLOWEST_FILES
from support.viewers import BASE_VERSION, GENERATIONS, viewer_params

# Every daemon and in-process Operations of the suite checks each attribute a listing replays
# against a fresh one (slfs/debug_hooks.py CHECK_LISTINGS_ENV, read into Debug): a change the model does not
# report fails the readdir with a traceback, which fails the test.
os.environ.setdefault("SLFS_CHECK_LISTINGS", "1")


@pytest.fixture(autouse=True)
def _unfrozen() -> Iterator[None]:
    """What a big frame froze out of the cycle collector's reach (slfs/gcpause.py) goes back to
    it after each test: a daemon freezes its own tree once per load, but the suite runs hundreds of
    loads in one process, and the freeze would keep every cycle a finished test left (its
    Operations, with handlers bound to it) for the rest of the run."""
    yield
    if gc.get_freeze_count():
        gc.unfreeze()


def _interrupt(signum: int, _frame: object) -> None:
    """SIGTERM (`timeout`, CI's cancel) stops the suite as Ctrl-C does: pytest tears every fixture
    down, so each mount is unmounted and each daemon and simulated viewer ends. Under trio the
    SIGINT becomes a KeyboardInterrupt in the running test, whose teardown is shielded.

    An xdist worker runs its tests in a thread that no signal reaches, and its controller may kill
    it before a teardown ends: it stops what it started itself, at once (each daemon gets SIGTERM,
    which unmounts it), and exits; its simulated viewers are threads and end with it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the group's later TERMs are the same stop
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from support import mount

        mount.STOPPING = True
        mount.sweep(grace=10)
        os._exit(128 + signum)
    os.kill(os.getpid(), signal.SIGINT)


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
        if os.environ.get("PYTEST_XDIST_WORKER"):
            signal.signal(signal.SIGINT, _interrupt)  # Ctrl-C reaches the workers too
    config.addinivalue_line(
        "markers",
        "viewer(*versions, reason): the test depends on a difference between simulated viewer versions and "
        "runs only against these (1: the older document and G1-G3, 2: the newer document and G4)",
    )
    config.addinivalue_line(
        "markers", "generations(*names): the tests also run against these viewer generations (default G1-G4)")
    config.addinivalue_line(
        "markers", "own_mount(reason): the test takes its own mount, not the module's shared one (tests/e2e)")
    config.addinivalue_line(
        "markers",
        "allow_log(*regexes): WARNING/ERROR records the test expects its daemon to log (tests/support/logcheck.py)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Whole files, the slowest first (SLOWEST_FILES), then the others by number of tests (xdist's
    own order); a file's tests keep their order (its shared mounts go by viewer)."""
    tests_dir = Path(__file__).parent
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    rank = {str(tests_dir.name + "/" + name): i for i, name in enumerate(SLOWEST_FILES)}

    def key(path: str) -> tuple[int, int]:
        return (rank.get(path, len(rank)), -len(by_file[path]))
    items[:] = [item for path in sorted(by_file, key=key) for item in by_file[path]]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`viewer_version`: one test per selected viewer (support.viewers.viewer_params)."""
    if "viewer_version" in metafunc.fixturenames:
        # Module scope: pytest groups a module's tests by viewer, so a shared mount (tests/e2e) is made
        # once per module and viewer.
        metafunc.parametrize("viewer_version", viewer_params(metafunc.definition), indirect=True, scope="module")


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


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The last sweep, whatever stopped the run: a daemon still running is killed and a mount left
    behind is detached (support/mount.py keeps the list)."""
    from support.mount import sweep

    for line in sweep():
        session.config.get_terminal_writer().line(f"slfs tests: {line}", yellow=True)


@pytest.fixture
def short_tmp_path() -> Iterator[Path]:
    """A temporary directory with a short path, for tests of socket paths (108 bytes at most):
    pytest's own are deeper under xdist (`.../popen-gw0/...`)."""
    path = Path(tempfile.mkdtemp(prefix="slfs-t-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
