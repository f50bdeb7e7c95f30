"""Fixtures for the simulated-viewer conformance tests: a sim on a free port, a raw client to it
(tests/support/rawclient.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from support.rawclient import raw

from slfs.sim import SimViewer, sample_world

StartSim = Callable[..., Awaitable[SimViewer]]


@pytest.fixture
async def start_sim(nursery: trio.Nursery, tmp_path: Path) -> StartSim:
    """Start a sim on a free port; it is cancelled with the test's nursery. Its temp files (live
    sync) are the test's own: tests in other xdist workers use the same script names."""

    async def start(**kwargs: Any) -> SimViewer:
        world = kwargs.pop("world", None) or sample_world()
        kwargs.setdefault("publish_delay", 0.01)
        kwargs.setdefault("apply_delay", 0.01)
        if "windows_paths" not in kwargs:
            viewer_tmp = tmp_path / "viewer-tmp"
            viewer_tmp.mkdir(exist_ok=True)
            kwargs.setdefault("tmpdir", str(viewer_tmp))
        sim = SimViewer(world, **kwargs)
        await nursery.start(sim.serve, 0)
        return sim

    return start


@pytest.fixture
def connect() -> Callable[..., Any]:
    return raw
