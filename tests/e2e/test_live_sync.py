"""Live sync end to end: the simulated viewer opens its script editor and runs its configured
external editor, `slfs edit "%s"`; the script appears in MOUNT/.slfs/live/, saves there reach the
viewer through its temp file, and its compiles come back. Both viewer versions."""

from __future__ import annotations

import errno
import json
import os
import shlex
from pathlib import Path
from typing import Any

import pytest
from support.cli import slfs
from support.live_mounts import BAD, GOOD, IN_OBJ, INV, has_text, live_mount, live_world, open_in_viewer, write
from support.mount import Mount, MountFactory

from slfs.sources import envelope

# G1 differs in ways tests/e2e/test_viewer_generations.py covers (no object.list, set_running or
# commands; notecards need copy+modify; runtime output only for live-sync subscribers).
pytestmark = pytest.mark.generations("G2", "G3", "G4")

def compiled_notes(m: Mount, sid: str) -> list[dict[str, Any]]:
    assert m.sim is not None
    return [p for _c, meth, p in m.sim.directed_notifications if meth == "script.compiled" and p["script_id"] == sid]


async def test_an_inventory_script_through_slfs_edit(mount_factory: MountFactory, tmp_path: Path) -> None:
    m, argv_log = await live_mount(mount_factory, tmp_path)
    sid, live = await open_in_viewer(m, INV, argv_log)
    assert live.name == "Pocket Script.lsl"
    assert m.sim is not None and m.sim.client_handshakes[-1]["features"]["live_sync"] is True
    assert await m.thread(live.read_text) == GOOD
    assert m.sim is not None
    # A save with an error: the viewer compiles it; slfs diag --wait gives its diagnostics.
    seen = m.sim.live_changes(sid)
    await write(m, live, BAD)
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 1 and out.startswith(f"{live}:5:"), out
    assert m.sim.live_changes(sid) == seen + 1
    assert m.sim.item(INV).content == BAD or m.sim.item(INV).compiled_content == GOOD
    assert (await m.thread(live.with_name(live.name + ".diag").read_text)).startswith(f"{live}:5:")
    assert await m.thread(live.with_name(live.name + ".state").read_text) in ("running\n", "stopped\n")
    root = await m.thread(m.path(".slfs", "diagnostics").read_text)
    assert f"{live}:5:" in root
    rc, out, _err = await slfs(m, "live", "--json")
    [entry] = json.loads(out)["scripts"]
    assert entry["script_id"] == sid and entry["path"] == str(live) and entry["compiled"] is False
    events = [json.loads(line) for line in m.path(".slfs", "events").read_text().splitlines()]
    assert [e for e in events if e["type"] == "compile"][-1]["source"] == "live"
    # Fixed: the next compile is clean.
    await write(m, live, GOOD)
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 0 and out == ""


async def test_two_saves_within_one_second_both_reach_the_viewer(mount_factory: MountFactory,
                                                                 tmp_path: Path) -> None:
    m, argv_log = await live_mount(mount_factory, tmp_path)
    sid, live = await open_in_viewer(m, INV, argv_log)
    assert m.sim is not None
    seen = m.sim.live_changes(sid)
    await write(m, live, BAD)
    await write(m, live, GOOD.replace("good", "second"))
    await m.sim.live_seen(sid, seen + 2, timeout=15)
    notes = compiled_notes(m, sid)[-2:]
    assert [n["success"] for n in notes] == [False, True]
    assert m.sim.item(INV).content == GOOD.replace("good", "second")


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace:")
async def test_the_viewer_closing_its_editor_keeps_unsaved_writes(mount_factory: MountFactory,
                                                                  tmp_path: Path) -> None:
    m, argv_log = await live_mount(mount_factory, tmp_path)
    sid, live = await open_in_viewer(m, INV, argv_log)
    assert m.sim is not None
    fd = await m.thread(os.open, live, os.O_WRONLY | os.O_TRUNC)
    try:
        await m.thread(os.write, fd, b"// not saved yet\n")
        await m.sim.close_script_editor(sid)
        await m.wait_for(lambda: _gone(m, live), 10, "the live file going")
    finally:
        with pytest.raises(OSError) as failed:
            await m.thread(os.close, fd)
    assert failed.value.errno == errno.ENOENT
    recovery = Path(m.env["XDG_STATE_HOME"]) / "slfs" / "recovery"
    assert [p.read_text() for p in recovery.iterdir()] == ["// not saved yet\n"]


async def _gone(m: Mount, live: Path) -> bool:
    return live.name not in await m.thread(os.listdir, m.path(".slfs", "live"))


async def test_a_reconnect_subscribes_again(mount_factory: MountFactory, tmp_path: Path) -> None:
    m, argv_log = await live_mount(mount_factory, tmp_path)
    sid, live = await open_in_viewer(m, IN_OBJ, argv_log)
    assert m.sim is not None
    await m.sim.disconnect_all()
    await m.wait_for(lambda: _subscribed(m, sid), 20, "the subscription made again")
    # ... and its answer taken in: the live file is back (the sim holds the subscription first).
    await m.wait_for(lambda: m.thread(os.path.exists, live), 10, "the live file back")
    seen = m.sim.live_changes(sid)
    await write(m, live, BAD)
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 1 and out.startswith(f"{live}:5:")
    assert m.sim.live_changes(sid) == seen + 1
    rc, out, _err = await slfs(m, "live", "--json")
    [entry] = json.loads(out)["scripts"]
    assert entry["item"] == str(m.path("Box", "Boxed.lsl"))


async def _subscribed(m: Mount, sid: str) -> bool:
    assert m.sim is not None
    ed = m.sim.live_editor(sid)
    return ed.holder is not None and (await m.status()).get("state") == "connected"


async def test_open_uri_with_script_subscribes_through_script_list(mount_factory: MountFactory,
                                                                    tmp_path: Path) -> None:
    m, argv_log = await live_mount(mount_factory, tmp_path)
    assert m.sim is not None
    m.sim.external_editor = None  # the viewer launched the URI, not its external editor
    sid, _temp = await m.sim.open_script_editor(INV)
    editor = tmp_path / "fake-editor"
    uri = f"vscode://lindenlab.sl-vscode-plugin/connect?port={m.port}&script={sid}"
    _rc, out, _err = await slfs(m, "open-uri", "--mount", m.mnt, uri, env={"VISUAL": str(editor)})
    live = Path(out.strip())
    assert live == m.path(".slfs", "live", "Pocket Script.lsl")
    assert await m.thread(live.read_text) == GOOD
    await m.wait_for(lambda: has_text(argv_log), 10, "the editor started")
    assert argv_log.read_text().splitlines()[-1] == str(live)


async def test_a_preprocessed_source_through_live_sync(mount_factory: MountFactory, tmp_path: Path) -> None:
    include = tmp_path / "include"
    include.mkdir()
    (include / "say.lsl").write_text("say(string s)\n{\n    llOwnerSay(s);\n}\n")
    m, argv_log = await live_mount(mount_factory, tmp_path, f"include={include}")
    sid, live = await open_in_viewer(m, INV, argv_log)
    assert m.sim is not None
    source = '#include "say.lsl"\n' + GOOD.replace('llOwnerSay("good")', 'say("built")')
    await write(m, live, source)
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 0, out
    stored = m.sim.item(INV).content
    got = envelope.unwrap(stored)
    assert got is not None and got.source == source and "llOwnerSay(s);" in got.expansion
    assert await m.thread(live.read_text) == source
    # A compile error in the include maps to the include's line.
    (include / "say.lsl").write_text('say(string s)\n{\n    llOwnerSay(s @);\n}\n')
    await write(m, live, source + "// again\n")
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 1 and out.startswith(f"{include / 'say.lsl'}:3:"), out
    # Then the user saves other text in the viewer's own editor: its compile is of that text, not
    # of our build, so its rows are the live file's own (not mapped through our build's lines).
    await m.sim.viewer_save_live(sid, BAD)

    async def diag_of_the_viewers_save() -> bool:
        diag = await m.thread(m.path(".slfs", "live", live.name + ".diag").read_text)
        return not diag.startswith(f"{include / 'say.lsl'}:3:")

    await m.wait_for(diag_of_the_viewers_save, 10, "the compile of the viewer's own save")
    diag = await m.thread(m.path(".slfs", "live", live.name + ".diag").read_text)
    assert diag.startswith(f"{live}:5:"), diag
    assert await m.thread(live.read_text) == BAD
    events = [json.loads(line) for line in (await m.thread(m.path(".slfs", "events").read_text)).splitlines()]
    last = [e for e in events if e["type"] == "compile"][-1]
    assert (last["source"], last["preprocessed"], last["diagnostics"][0]["row"]) == ("live", False, 5), json.dumps(last)


async def test_a_refused_subscription_exits_1_with_the_viewers_message(mount_factory: MountFactory,
                                                                        tmp_path: Path) -> None:
    m, _argv_log = await live_mount(mount_factory, tmp_path)
    assert m.sim is not None
    m.sim.external_editor = None
    sid, temp = await m.sim.open_script_editor(INV)
    m.sim.fail_next_subscribe(sid)
    rc, out, err = await slfs(m, "edit", "--mount", m.mnt, temp, check=False)
    assert rc == 1 and out == "" and "Internal server error" in err
    assert os.listdir(m.path(".slfs", "live")) == []
    rc, _out, err = await slfs(m, "edit", "--mount", m.mnt, tmp_path / "notes.txt", check=False)
    assert rc == 2 and "sl_script_" in err


async def test_slfs_edit_mounts_home_sl_when_no_mount_runs(mount_factory: MountFactory, tmp_path: Path) -> None:
    """As the viewer starts it, with nothing mounted: slfs edit mounts ~/sl for the (default)
    port, subscribes, and starts the editor there."""
    from support.mount import force_unmount

    m = await mount_factory(live_world(), start=False)  # the viewer runs; no slfs yet
    assert m.sim is not None
    _sid, temp = await m.sim.open_script_editor(INV)
    home = tmp_path / "home"
    home.mkdir()
    argv_log = tmp_path / "editor-argv"
    editor = tmp_path / "fake-editor"
    editor.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" >> {shlex.quote(str(argv_log))}\n")
    editor.chmod(0o755)
    env = {"HOME": str(home), "SLFS_PORT": str(m.port), "VISUAL": str(editor)}
    try:
        rc, out, err = await slfs(m, "edit", temp, env=env, check=False, timeout=90)
        assert rc == 0, err
        live = home / "sl" / ".slfs" / "live" / "Pocket Script.lsl"
        assert out.strip() == str(live)
        assert await m.thread(live.read_text) == GOOD
        await m.wait_for(lambda: has_text(argv_log), 10, "the editor started")
        assert argv_log.read_text().splitlines()[-1] == str(live)
    finally:
        await slfs(m, "umount", home / "sl", env=env, check=False)
        await m.thread(force_unmount, home / "sl")


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: create:")
async def test_sed_i_and_perl_pi_save_a_live_file(mount_factory: MountFactory, tmp_path: Path) -> None:
    """sed -i and perl -pi write a temp file beside the live file and rename it over it: the
    content reaches the viewer's temp file as a write and close of the live file would."""
    m, argv_log = await live_mount(mount_factory, tmp_path)
    sid, live = await open_in_viewer(m, INV, argv_log)
    assert m.sim is not None
    temp = Path(m.sim.live_editor(sid).path)
    seen = m.sim.live_changes(sid)
    await m.run("sed", "-i", "s/good/sedded/", live)
    await m.sim.live_seen(sid, seen + 1, timeout=15)
    assert temp.read_text() == GOOD.replace("good", "sedded")
    assert m.sim.item(INV).content == GOOD.replace("good", "sedded")
    assert await m.thread(live.read_text) == GOOD.replace("good", "sedded")
    res = await m.run("perl", "-pi", "-e", "s/sedded/perled/", live)
    assert res.stderr == b""
    await m.sim.live_seen(sid, seen + 2, timeout=15)
    assert temp.read_text() == GOOD.replace("good", "perled")
    assert m.sim.item(INV).content == GOOD.replace("good", "perled")
    assert await m.thread(live.read_text) == GOOD.replace("good", "perled")
    # No temp name is left behind, and the live file is a file of its own again.
    names = await m.thread(os.listdir, live.parent)
    assert all(n.startswith(live.name) for n in names), names
    st = await m.thread(os.stat, live)
    assert st.st_size == len(GOOD.replace("good", "perled")) and st.st_nlink == 1
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 0 and out == ""
    # vim still saves in place (its swap file and its probe are not taken here).
    await m.run("vim", "-Es", "-u", "NONE", "-N", "-c", "%s/perled/vimmed/", "-c", "wq", live)
    await m.sim.live_seen(sid, seen + 3, timeout=15)
    assert temp.read_text() == GOOD.replace("good", "vimmed")
    assert all(n.startswith(live.name) for n in await m.thread(os.listdir, live.parent))
    # Later saves through the name work as before.
    await write(m, live, BAD)
    rc, out, _err = await slfs(m, "diag", "--wait", live, check=False)
    assert rc == 1 and out.startswith(f"{live}:5:"), out


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: create:",
    r"^WARNING slfs\.model\.workspace: daemon stopped before the new",
)
async def test_temp_files_in_the_live_directory_removed_or_left_at_unmount(mount_factory: MountFactory,
                                                                           tmp_path: Path) -> None:
    """mktemp there, rm it; one left when the daemon stops goes to the recovery folder; other
    names are still refused."""
    m, argv_log = await live_mount(mount_factory, tmp_path)
    sid, live = await open_in_viewer(m, INV, argv_log)
    assert m.sim is not None
    temp = Path(m.sim.live_editor(sid).path)
    made = Path((await m.out("mktemp", "-p", live.parent)).strip())
    assert made.parent == live.parent and made.name in await m.thread(os.listdir, live.parent)
    await m.run("rm", made)
    assert made.name not in await m.thread(os.listdir, live.parent)
    left = Path((await m.out("mktemp", "-p", live.parent)).strip())
    await m.thread(left.write_text, "left behind\n")
    res = await m.run("touch", live.parent / "notes.txt", check=False)
    assert res.returncode != 0 and b"Operation not permitted" in res.stderr
    await m.stop_daemon()
    recovery = Path(m.env["XDG_STATE_HOME"]) / "slfs" / "recovery"
    assert [p.read_text() for p in recovery.iterdir()] == ["left behind\n"]
    assert temp.read_text() == GOOD
