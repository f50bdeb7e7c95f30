"""The simulated viewer as a Windows viewer: under Wine, or on Windows with the client in WSL2.

Every local path the viewer names (handshake `challenge`, the external editor's file, `script.list`
`temp_dir`) is a Windows path; the sim reads and writes the local file behind it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from slfs.sim import SimViewer, sample_world
from slfs.sim.cli import build_parser, build_sim
from slfs.sim.winpaths import WindowsPaths

WINE_TEMP = "C:\\users\\resident\\AppData\\Local\\Temp"
WSL_TEMP = "C:\\Users\\resident\\AppData\\Local\\Temp"


def hello_id(sim: SimViewer) -> str:
    items = [i for o in sim.world.objects.values() for p in o.prims() for i in p.inventory]
    return next(i.item_id for i in items if i.name == "Hello")


async def login_windows(sim: SimViewer, c: Any) -> dict[str, Any]:
    """Answer the handshake by reading the file behind the Windows path it names."""
    msg = await c.recv()
    challenge = msg["params"]["challenge"]
    with open(sim.local_path(challenge), encoding="ascii") as f:
        answer = f.read()
    await c.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"challenge_response": answer}})
    await c.notification("session.ok")
    return msg["params"]


def test_wine_prefix_skeleton(tmp_path: Path) -> None:
    prefix = tmp_path / "pfx"
    sim = SimViewer(sample_world(), windows_paths="wine", wine_prefix=prefix)
    assert (prefix / "drive_c").is_dir()
    assert os.readlink(prefix / "dosdevices" / "c:") == "../drive_c"
    assert os.readlink(prefix / "dosdevices" / "z:") == "/"
    assert sim.tmpdir == str(prefix / "drive_c" / "users" / "resident" / "AppData" / "Local" / "Temp")
    assert Path(sim.tmpdir).is_dir() and sim.windows_paths == "wine"
    local = os.path.join(sim.tmpdir, "sl_script_x.lsl")
    assert sim.windows_path(local) == WINE_TEMP + "\\sl_script_x.lsl"
    assert sim.windows_path(local, drive="Z") == "Z:" + local.replace("/", "\\")
    assert sim.windows_path("/tmp/a/b.txt", drive="Z") == "Z:\\tmp\\a\\b.txt"
    assert sim.local_path("Z:\\tmp\\a\\b.txt") == "/tmp/a/b.txt"
    assert sim.local_path(WINE_TEMP + "\\x") == os.path.join(sim.tmpdir, "x")
    with pytest.raises(ValueError):
        sim.windows_path("/etc/passwd")  # not on C:
    # an existing prefix is left as it is
    SimViewer(sample_world(), windows_paths="wine", wine_prefix=prefix)


def test_wsl_paths(tmp_path: Path) -> None:
    mount = tmp_path / "mnt"
    sim = SimViewer(sample_world(), windows_paths="wsl", windows_mount=mount, windows_user="Ann Lee")
    assert sim.tmpdir == str(mount / "c" / "Users" / "Ann Lee" / "AppData" / "Local" / "Temp")
    assert sim.windows_path(os.path.join(sim.tmpdir, "f.tmp")) == "C:\\Users\\Ann Lee\\AppData\\Local\\Temp\\f.tmp"
    assert sim.windows_path(mount / "d" / "x", drive="D") == "D:\\x"
    with pytest.raises(ValueError):
        sim.windows_path(sim.tmpdir, drive="Z")
    assert WindowsPaths("wsl").mount == Path("/mnt")


def test_windows_options_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        SimViewer(sample_world(), windows_paths="mac")
    with pytest.raises(ValueError):
        SimViewer(sample_world(), windows_paths="wsl", windows_mount=tmp_path, tmpdir=str(tmp_path))
    with pytest.raises(ValueError):
        SimViewer(sample_world()).windows_path("/tmp")


@pytest.mark.parametrize(("mode", "temp"), [("wine", WINE_TEMP), ("wsl", WSL_TEMP)])
@pytest.mark.parametrize("gen", [None, "G1", "G3"])
async def test_viewer_names_windows_paths(
    start_sim, connect, tmp_path: Path, mode: str, temp: str, gen: str | None
) -> None:
    with trio.fail_after(10):
        where = {"wine_prefix": tmp_path / "pfx"} if mode == "wine" else {"windows_mount": tmp_path / "mnt"}
        editor = f"{sys.executable} -c pass"
        sim = await start_sim(
            generation=gen, windows_paths=mode, external_editor=editor, live_poll_interval=None, **where
        )
        async with connect(sim, login=False) as c:
            params = await login_windows(sim, c)
            assert params["challenge"].startswith(temp + "\\sl_script_challenge")
            assert "/" not in params["challenge"]
            assert all(not os.path.exists(p) for p in sim.challenge_files)
            listing = await c.result("script.list")
            assert listing["temp_dir"] == temp
            sid, local = await sim.open_script_editor(hello_id(sim))
            assert os.path.dirname(local) == sim.tmpdir and os.path.exists(local)
            launch = sim.editor_launches[-1]
            assert launch.argv[-1] == temp + "\\" + os.path.basename(local)  # the editor gets the Windows path
            if launch.process is not None:
                launch.process.wait()
            # the client (Linux side) edits the file behind the Windows path; the sim reads it
            assert (await c.result("script.subscribe", {"script_id": sid}))["status"] == 0
            await sim.live_poll(sid)  # the file's appearance, ignored
            with open(sim.local_path(launch.argv[-1]), "w", encoding="utf-8") as f:
                f.write('default { state_entry() { llOwnerSay("from windows"); } }\n')
            os.utime(local, (os.stat(local).st_mtime + 5,) * 2)
            assert await sim.live_poll(sid)
            compiled = await c.notification("script.compiled")
            assert compiled["success"] is True
            assert "from windows" in sim.item(hello_id(sim)).content


async def test_wine_names_through_z(start_sim, connect, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sim = await start_sim(windows_paths="wine", wine_prefix=tmp_path / "pfx", windows_drive="Z")
        async with connect(sim, login=False) as c:
            params = await login_windows(sim, c)
            assert params["challenge"].startswith("Z:" + sim.tmpdir.replace("/", "\\") + "\\sl_script_challenge_")
            assert (await c.result("script.list"))["temp_dir"] == sim.windows_path(sim.tmpdir, drive="Z")


def test_cli_windows_flags(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        ["--viewer-generation", "G2", "--windows-paths", "wine", "--wine-prefix", str(tmp_path / "p")]
    )
    sim = build_sim(args)
    assert sim.windows_paths == "wine" and sim.generation == "G2"
    assert sim.tmpdir.startswith(str(tmp_path / "p" / "drive_c"))
    sim = build_sim(build_parser().parse_args(["--windows-paths", "wsl", "--windows-mount", str(tmp_path / "m")]))
    assert sim.windows_path(sim.tmpdir) == WSL_TEMP
