"""Live sync with a viewer that names its temp files by Windows paths (under Wine, or with slfs in
WSL2): the daemon subscribes through the translated path and reads and writes the local file;
script.list's temp_dir is translated for `slfs open-uri`; editor.open_file gets the local path.

The simulator writes POSIX temp files; the fake Wine prefix's drive_c and the fake WSL mount's c
hold a link to the top directory of each such file (`tmp` -> `/tmp`), so `C:\\tmp\\...` names the
very file the simulator polls, by another local path."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from support.inproc import fs_against_sim
from support.live_world import GOOD, INV, world

from slfs.model import editor_commands
from slfs.model.options import Options
from slfs.protocol.types import ScriptList
from slfs.world.fs_errors import FsError

EDITED = GOOD.replace('"ok"', '"edited"')


def windows(root: Path, path: str) -> str:
    """How a Windows viewer whose C: is `root` names the POSIX `path` (root/top links to /top)."""
    top = path.strip("/").split("/")[0]
    if not (root / top).is_symlink():
        os.symlink("/" + top, root / top)
    return "C:" + path.replace("/", "\\")


def wine_options(tmp_path: Path) -> tuple[Options, Path]:
    prefix = tmp_path / "wine"
    (prefix / "dosdevices").mkdir(parents=True)
    (prefix / "drive_c").mkdir()
    os.symlink("../drive_c", prefix / "dosdevices" / "c:")
    return Options(delete_grace=0.2, windows_paths="wine", wine_prefix=str(prefix)), prefix / "drive_c"


def wsl_options(tmp_path: Path) -> tuple[Options, Path]:
    mnt = tmp_path / "winmnt"
    (mnt / "c").mkdir(parents=True)
    return Options(delete_grace=0.2, windows_paths="wsl", windows_mount=str(mnt)), mnt / "c"


@pytest.mark.parametrize("make", [wine_options, wsl_options], ids=["wine", "wsl"])
async def test_a_windows_temp_path_is_read_and_written_locally(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               make: Callable[[Path], tuple[Options, Path]]) -> None:
    options, root = make(tmp_path)
    async with fs_against_sim(tmp_path, monkeypatch, world(), options=options, live_poll_interval=0.2) as fs:
        sid, temp = await fs.sim.open_script_editor(INV)
        await fs.sim.live_seen(sid, 1)
        ls = await fs.ws.live.subscribe(windows(root, temp))
        assert ls.temp_path == str(root) + temp  # the local path, read and written from now on
        assert await fs.read_file(".slfs/live/Pocket.lsl") == GOOD.encode()
        await fs.write_file(".slfs/live/Pocket.lsl", EDITED.encode())
        assert Path(temp).read_text() == EDITED  # the viewer's own file
        assert fs.ws.live.describe(ls)["temp_path"] == str(root) + temp
        assert fs.ws.status()["windows_paths"].startswith(f"{options.windows_paths} (")


async def test_an_untranslatable_temp_path_is_einval_naming_the_option(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), options=Options(windows_paths="off")) as fs:
        _sid, temp = await fs.sim.open_script_editor(INV)
        with pytest.raises(FsError) as info:
            await fs.ws.live.subscribe("C:" + temp.replace("/", "\\"))
        assert info.value.errno == errno.EINVAL and "-o windows_paths=wine" in info.value.message
        with pytest.raises(FsError) as info:
            await fs.ws.live.subscribe("\\\\server\\share" + temp.replace("/", "\\"))
        assert info.value.errno == errno.EINVAL and "UNC" in info.value.message
        assert not fs.ws.live.by_id
        assert fs.ws.status()["windows_paths"] == "native"


async def test_script_list_temp_dir_is_translated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options, root = wine_options(tmp_path)
    async with fs_against_sim(tmp_path, monkeypatch, world(), options=options) as fs:
        svc = fs.svc
        server = svc.control_server
        real = fs.ws.calls.call
        temp_dir = windows(root, str(tmp_path))

        async def call(what: str, method: str, params: Any, result_type: Any = None, **kw: Any) -> Any:
            if method == "script.list":
                return ScriptList(temp_dir=temp_dir, script_ids=["a" * 32])
            return await real(what, method, params, result_type, **kw)

        monkeypatch.setattr(fs.ws.calls, "call", call)
        assert (await server.commands["script_list"][1]({}))["temp_dir"] == str(root) + str(tmp_path)
        temp_dir = r"Q:\Temp"
        with pytest.raises(FsError, match=r"drive Q: has no link.*-o wine_prefix=DIR"):
            await server.commands["script_list"][1]({})


async def test_editor_open_file_gets_the_local_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    options, root = wine_options(tmp_path)
    async with fs_against_sim(tmp_path, monkeypatch, world(), options=options) as fs:
        events = fs.svc.events.events  # every event the workspace told (the event log keeps them)
        ran: list[str] = []

        def opened(path: str, _mountpoint: str, _live: Any) -> str:  # the mount check (unit-tested) passes it
            ran.append(path)
            return path

        monkeypatch.setattr(editor_commands, "resolve_in_mount", opened)
        monkeypatch.setattr(fs.ws, "options", attrs.evolve(options, open_cmd="true"))
        fs.ws.on_editor_command("editor.open_file", {"path": r"C:\Projects\x.lsl", "line": 3})
        fs.ws.on_editor_command("editor.open_file", {"path": r"\\server\share\x.lsl"})
        with trio.fail_after(5):
            while not ran:
                await trio.sleep(0.01)
        assert ran == [str(root / "Projects" / "x.lsl")]
        await trio.sleep(0.05)  # the refused one tells at once, the other once checked
        opened_events = [e for e in events if e["type"] == "viewer.open_file"]
        good, bad = sorted(opened_events, key=lambda e: "error" in e)
        # the event names the path as the viewer gave it, and the local file opened
        assert good["path"] == r"C:\Projects\x.lsl" and good["opened"] == str(root / "Projects" / "x.lsl")
        assert good["line"] == 3
        assert "UNC" in str(bad["error"]) and "editor.open_file" in fs.ws.last_error
        assert len(ran) == 1  # the refused one ran nothing
