"""A Windows viewer seen from Linux: under Wine (its paths through the prefix's drive links), or on
Windows with slfs in WSL2 (its C: drive under /mnt/c). The simulated viewer names every local file
by its Windows path, as such a viewer does (the challenge, live sync's temp files and the path it
gives `slfs edit`, script.list's temp_dir); the handshake, a read, a save with diagnostics and a
live-sync round trip work through the translation."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.cli import slfs
from support.live_mounts import BAD, GOOD, IN_OBJ, live_mount, live_round_trip, open_in_viewer
from support.mount import MountFactory

# Linden's current viewer (G3) and the first generation (G1: fixed challenge name, raw compile
# lines), each under both path modes.
CASES = [pytest.param(mode, gen, id=f"{mode}-{gen.lower()}") for mode in ("wine", "wsl") for gen in ("G3", "G1")]


def setup(tmp_path: Path, mode: str, generation: str) -> tuple[dict[str, Any], list[str]]:
    sim: dict[str, Any] = {"viewer_version": 1, "generation": generation, "windows_paths": mode}
    if mode == "wine":
        prefix = tmp_path / "wineprefix"
        sim["wine_prefix"] = prefix
        (prefix / "dosdevices").mkdir(parents=True)  # as Wine's first run makes it (the sim adds the links)
        return sim, ["windows_paths=wine", f"wine_prefix={prefix}"]
    winmnt = tmp_path / "winmnt"
    (winmnt / "c").mkdir(parents=True)
    sim["windows_mount"] = winmnt
    return sim, ["windows_paths=wsl", f"windows_mount={winmnt}"]


@pytest.mark.viewer(1, reason="the Windows path modes name their generation themselves")
@pytest.mark.parametrize(("mode", "generation"), CASES)
async def test_a_windows_viewer(mount_factory: MountFactory, tmp_path: Path, mode: str, generation: str) -> None:
    sim_kwargs, options = setup(tmp_path, mode, generation)
    m, argv_log = await live_mount(mount_factory, tmp_path, *options, sim_kwargs=sim_kwargs)
    assert m.sim is not None
    # The handshake: its challenge was named by a Windows path, and answered.
    challenge = m.sim.client_handshakes[-1].get("challenge_response")
    assert challenge, m.sim.client_handshakes[-1]
    status = await m.status()
    assert status["state"] == "connected" and status["windows_paths"].startswith(mode), status
    # A read and a save with diagnostics.
    assert await m.read_bytes("Box", "Boxed.lsl") == GOOD.encode()
    await m.thread(m.path("Box", "Boxed.lsl").write_text, BAD)
    rc, out, _err = await slfs(m, "diag", m.path("Box", "Boxed.lsl"), check=False)
    assert rc == 1 and out.startswith(f"{m.path('Box', 'Boxed.lsl')}:5:"), out
    # Live sync: the viewer runs `slfs edit "C:\\...\\sl_script_....lsl"`.
    await m.thread(m.path("Box", "Boxed.lsl").write_text, GOOD)
    sid, live = await open_in_viewer(m, IN_OBJ, argv_log)
    rc, out, _err = await slfs(m, "live", "--json")
    [entry] = json.loads(out)["scripts"]
    assert entry["script_id"] == sid
    # The viewer named its temp file C:\...; slfs holds the local file behind it.
    root = tmp_path / ("wineprefix" if mode == "wine" else "winmnt")
    assert Path(entry["temp_path"]).is_relative_to(root) and os.path.isfile(entry["temp_path"]), entry
    assert m.sim.viewer_path(entry["temp_path"])[:3] == "C:\\", m.sim.viewer_path(entry["temp_path"])
    await live_round_trip(m, live)
    assert m.sim.item(IN_OBJ).content == GOOD
