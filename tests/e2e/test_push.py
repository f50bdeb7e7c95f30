"""`slfs push` / `slfs pull` end to end on a real mount, on every simulated viewer generation."""

from __future__ import annotations

import pytest
from support.mount import Mount, MountFactory
from support.push import (
    A,
    SITE,
    make_src,
    mark,
    plan_lines,
    push,
    push_mount,
    site_files,
    writes,
)

pytestmark = pytest.mark.generations()


async def test_smoke(mount_factory: MountFactory, tmp_path) -> None:
    m: Mount = await push_mount(mount_factory)
    src = make_src(tmp_path / "src", site_files())
    at = mark(m)
    rc, out, err = await push(m, src, "--plan", "--verbose")
    print(out, err)
    assert rc == 0
    assert writes(m, at) == []
    assert SITE and A and plan_lines(out)
