"""Which simulated viewers a test runs against: `$SLFS_TEST_VIEWERS`, narrowed by the test's marks.

Every tier that talks to a viewer takes the `viewer_version` fixture (tests/conftest.py), so one
variable picks the viewers of the whole suite.
"""

from __future__ import annotations

import os

import pytest

VIEWER_VERSIONS = (1, 2)
# The viewers the suite runs against: the two protocol documents' readings ("1", "2") and the
# four generations of the shipped C++ (../shared/research/viewer-source.md §1). A generation runs
# only the modules marked `generations` (session, read, save, compile, runtime), to keep CI short.
VIEWERS = ("1", "2", "G1", "G2", "G3", "G4")
GENERATIONS = ("G1", "G2", "G3", "G4")
BASE_VERSION = {"1": 1, "2": 2, "G1": 1, "G2": 1, "G3": 1, "G4": 2}  # the sim's viewer_version of each


def selected_viewers() -> list[str]:
    """The simulated viewers the tests run against: `$SLFS_TEST_VIEWERS` (default all)."""
    raw = os.environ.get("SLFS_TEST_VIEWERS", "").strip()
    if not raw:
        return list(VIEWERS)
    chosen = {v.strip().upper() for v in raw.replace(" ", ",").split(",") if v.strip()}
    if not chosen or any(v not in VIEWERS for v in chosen):
        raise pytest.UsageError(f"SLFS_TEST_VIEWERS={raw!r}: expected a comma-separated subset of {VIEWERS}")
    return [v for v in VIEWERS if v in chosen]


def viewer_params(definition: pytest.Function) -> list[object]:
    """The `viewer_version` parameters of one test: one per selected viewer, narrowed by `viewer(...)`;
    the generations only for tests marked `generations`. A test left with none is skipped once."""
    viewers = selected_viewers()
    marked = definition.get_closest_marker("generations")
    wanted = set(marked.args or GENERATIONS) if marked is not None else set()
    if any(g not in GENERATIONS for g in wanted):
        raise pytest.UsageError(f"{definition.nodeid}: generations(...) takes some of {GENERATIONS}")
    viewers = [v for v in viewers if v not in GENERATIONS or v in wanted]
    marker = definition.get_closest_marker("viewer")
    if marker is not None:
        if not marker.args or any(v not in VIEWER_VERSIONS for v in marker.args) or not marker.kwargs.get("reason"):
            raise pytest.UsageError(f"{definition.nodeid}: use @pytest.mark.viewer(N, ..., reason='...')")
        viewers = [v for v in viewers if BASE_VERSION[v] in marker.args]
    if viewers:
        return [pytest.param(v, id=f"v{v}" if v.isdigit() else v.lower()) for v in viewers]
    only = ",".join(str(v) for v in marker.args) if marker is not None else "?"
    why = marker.kwargs["reason"] if marker is not None else "no viewer selected"
    skip = pytest.mark.skip(reason=f"viewer {only} only ({why}); SLFS_TEST_VIEWERS excludes it")
    first = str(marker.args[0]) if marker is not None else "1"
    return [pytest.param(first, id=f"v{first}", marks=skip)]
