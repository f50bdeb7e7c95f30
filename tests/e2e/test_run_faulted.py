"""`slfs run` of a script a run-time error stopped (faulted): the viewer takes set_running, but a
running flag is not known to clear a fault (a reset or a compiling save does), so there is no confirmation
to wait for. The verb answers at once, saying so, instead of after the whole confirmation wait."""

from __future__ import annotations

import time

import trio
from support.cli import sj, slfs
from support.mount import Mount

CUBE = "Hello Cube"


async def faulted(m: Mount, name: str) -> None:
    """Run then reset the script, as a user would, until the viewer says it is faulted."""
    path = m.path(CUBE, name)
    await slfs(m, "run", path)
    await slfs(m, "reset", path)
    state = m.path(CUBE, ".slfs", f"{name}.state")
    with trio.fail_after(10):
        while (await m.run("cat", str(state))).stdout.decode() != "faulted\n":
            await trio.sleep(0.05)


async def test_run_of_a_faulted_script_answers_at_once(mounted: Mount) -> None:
    m = mounted
    await faulted(m, "Faulty.lsl")
    path = m.path(CUBE, "Faulty.lsl")
    start = time.monotonic()
    rc, out, err = await slfs(m, "run", path, check=False)
    took = time.monotonic() - start
    assert rc == 1 and out == "", (out, err)
    assert err.startswith(f"slfs: run {path}: ") and err.count("Faulty.lsl") == 1, err
    assert "faulted" in err and "reset" in err, err
    assert took < 8, f"slfs run of a faulted script took {took:.1f} s"
    data = await sj(m, "run", path, status=1)
    assert data["results"] == [] and data["failed"][0]["code"] == "EIO"
    # stop needs no fault cleared: it is confirmed as before
    data = await sj(m, "stop", path)
    assert data["results"][0]["state"] in ("stopped", "faulted") and data["results"][0]["confirmed"] is True
