"""The control verbs of the `slfs` command line, end to end against a real mount: every verb with
`--json` (stdout parsed as JSON, nothing else on it), mount selection, exit statuses, open-uri."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from support.cli import sj, slfs
from support.mount import Mount, MountFactory
from support.worlds import LAMP_ID, sample_item

CUBE = "Hello Cube"
CUBE_ID = "edb64ade-4edb-5ab6-9b00-726ed29bc790"
BAD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("oops" @);\n    }\n}\n'
GOOD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("%s");\n    }\n}\n'


def json_error(out: str, status: int) -> str:
    """A failed `--json` verb's standard output: one JSON error object (slfs(1)); its message."""
    data = json.loads(out)
    assert set(data) == {"error", "code", "exit"} and data["exit"] == status and data["error"], data
    return str(data["error"])


async def save(m: Mount, rel: str, text: str) -> None:
    await m.run("sh", "-c", 'printf %s "$1" > "$2"', "sh", text, str(m.path(rel)))


async def test_status(mounted: Mount) -> None:
    m = mounted
    data = await sj(m, "status")
    assert data["state"] == "connected" and data["mount"] == str(m.mnt)
    assert data["objects"] == 6 and data["endpoint"] == f"127.0.0.1:{m.port}"
    assert (await sj(m, "status", m.mnt))["mount"] == str(m.mnt)
    assert (await sj(m, "status", m.path(CUBE)))["mount"] == str(m.mnt)
    _rc, text, _err = await slfs(m, "status")
    assert "state: connected" in text.splitlines()


async def test_mount_selection(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await mount_factory()
    # one mount: found from anywhere
    assert (await sj(m, "status", cwd=tmp_path))["mount"] == str(m.mnt)
    # from the current directory inside the mount (a relative path works there)
    rc, out, err = await slfs(m, "diag", "--json", "Hello.lsl", cwd=m.path(CUBE))
    assert rc == 0 and json.loads(out)["diagnostics"] == [], err
    # a path relative to the mount's root, from outside it
    data = await sj(m, "stop", f"{CUBE}/Hello.lsl", cwd=tmp_path)
    assert data["results"][0]["path"] == str(m.path(CUBE, "Hello.lsl"))
    # --mount with a mount that is not one
    rc, out, err = await slfs(m, "status", "--json", "--mount", tmp_path, check=False)
    assert rc == 1 and "not an slfs mount" in json_error(out, 1) and "not an slfs mount" in err
    # no mount at all
    empty = tmp_path / "norun"
    empty.mkdir()
    rc, out, err = await slfs(m, "status", "--json", check=False, env={"XDG_RUNTIME_DIR": str(empty)})
    assert rc == 1 and json_error(out, 1) == "no slfs mount is running" and "no slfs mount is running" in err


async def test_several_mounts(mount_factory: MountFactory, tmp_path: Path) -> None:
    a = await mount_factory()
    b = await mount_factory()
    # both daemons register in one runtime directory, as they would for one user
    run = tmp_path / "shared-run"
    (run / "slfs" / "mounts").mkdir(parents=True)
    (run / "slfs").chmod(0o700)  # a runtime dir open to others is refused
    for m in (a, b):
        src = Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts"
        for f in src.glob("*.json"):
            (run / "slfs" / "mounts" / f.name).write_text(f.read_text())
    env = {"XDG_RUNTIME_DIR": str(run)}
    rc, out, err = await slfs(a, "status", "--json", check=False, env=env, cwd=tmp_path)
    assert rc == 1 and json_error(out, 1) and "several mounts are running" in err and "--mount" in err
    for m in (a, b):
        assert (await sj(m, "status", "--mount", m.mnt, env=env, cwd=tmp_path))["mount"] == str(m.mnt)
        assert (await sj(m, "status", env=env, cwd=m.path(CUBE)))["mount"] == str(m.mnt)
        data = await sj(m, "diag", m.path(CUBE, "Hello.lsl"), env=env, cwd=tmp_path)
        assert data["diagnostics"] == []


async def test_diag(mounted: Mount) -> None:
    m = mounted
    hello = str(m.path(CUBE, "Hello.lsl"))
    data = await sj(m, "diag")
    assert data["diagnostics"] == [] and data["errors"] == 0
    await save(m, f"{CUBE}/Hello.lsl", BAD_LSL)
    # the build idiom: a failing compile -> exit 1, quickfix lines on stdout, a note on stderr
    rc, out, err = await slfs(m, "diag", hello, check=False)
    assert rc == 1, (out, err)
    lines = out.splitlines()
    assert lines and all(ln.startswith(f"{hello}:") and ": error: " in ln for ln in lines), out
    assert "previously compiled version keeps running" in err and "previously" not in out
    data = await sj(m, "diag", hello, status=1)
    assert data["errors"] >= 1 and data["diagnostics"][0]["path"] == hello
    assert data["diagnostics"][0]["level"] == "error"
    assert data["files"][0]["compiled"] is False and "previously compiled" in data["files"][0]["note"]
    assert data["notes"]
    # diagnostics under a folder and the whole mount include it; another folder does not
    assert (await sj(m, "diag", m.path(CUBE), status=1))["errors"] >= 1
    assert (await sj(m, "diag", status=1))["errors"] >= 1
    assert (await sj(m, "diag", m.path("House")))["diagnostics"] == []
    # the cp && slfs diag idiom succeeds once it compiles
    good = m.path(CUBE, "Hello.lsl")
    await m.sh(f"printf '%s' '{GOOD_LSL % 'fixed'}' > /tmp/slfs-good-$$.lsl && cp /tmp/slfs-good-$$.lsl "
               f"'{good}' && rm /tmp/slfs-good-$$.lsl && {sys.executable} -m slfs diag '{good}'")
    data = await sj(m, "diag", hello)
    assert data["diagnostics"] == [] and data["files"][0]["compiled"] is True
    # --wait on a script saved through the mount: its compile answer came with the save
    data = await sj(m, "diag", "--wait", hello)
    assert data["waited"] is True and data["diagnostics"] == []
    # --wait names one script: a notecard or a folder is refused
    for other in (m.path(CUBE, "Notes\u2215Todo"), m.path(CUBE)):
        rc, out, err = await slfs(m, "diag", "--wait", str(other), check=False)
        assert rc != 0 and "diag --wait names one script" in err, (rc, out, err)
    # errors: no such path
    rc, out, err = await slfs(m, "diag", "--json", m.path(CUBE, "nope.lsl"), check=False)
    assert rc == 1 and "nope.lsl" in json_error(out, 1) and "nope.lsl" in err


async def test_run_stop_reset(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    hello = m.path(CUBE, "Hello.lsl")
    item = sample_item(m.sim.world, f"{CUBE}/Hello.lsl")
    data = await sj(m, "stop", hello, m.path(CUBE, "Counter.luau"))
    assert [r["state"] for r in data["results"]] == ["stopped", "stopped"] and data["failed"] == []
    assert all(r["confirmed"] for r in data["results"])
    assert item.running is False  # the viewer has it stopped when the verb returns
    assert (await m.out("cat", m.path(CUBE, ".slfs", "Hello.lsl.state"))) == "stopped\n"
    data = await sj(m, "run", hello)
    assert data["results"][0]["state"] == "running" and item.running is True
    assert data["results"][0]["path"] == str(hello) and data["results"][0]["uuid"] == item.item_id
    data = await sj(m, "reset", hello)
    assert data["results"][0]["path"] == str(hello)
    _rc, text, _err = await slfs(m, "stop", hello)
    assert text == f"{hello}: stopped\n"
    # a failing file among good ones: the others still act, exit 1, the error on stderr
    rc, out, err = await slfs(m, "run", "--json", hello, m.path(CUBE, "nope.lsl"), check=False)
    assert rc == 1 and err.count("nope.lsl") == 1, err  # the path once, as given
    assert err.startswith(f"slfs: run {m.path(CUBE, 'nope.lsl')}: "), err
    data = json.loads(out)
    assert data["results"][0]["state"] == "running" and data["failed"][0]["code"] == "ENOENT"
    # not a script
    rc, out, err = await slfs(m, "run", "--json", m.path(CUBE, "Notes\u2215Todo"), check=False)
    assert rc == 1 and "not a script" in err


async def test_events(mounted: Mount) -> None:
    m = mounted
    rc, out, err = await slfs(m, "events", "--json")
    events = [json.loads(ln) for ln in out.splitlines()]
    assert events and events[0]["type"] == "connected" and events[0]["seq"] == 1
    last = events[-1]["seq"]
    await slfs(m, "reset", m.path(CUBE, "Hello.lsl"))
    _rc, out, _err = await slfs(m, "events", "--json", "--since", str(last))
    newer = [json.loads(ln) for ln in out.splitlines()]
    assert newer and all(e["seq"] > last for e in newer)
    assert any(e["type"] == "runtime.debug" and e["message"] == "Hello from the cube!" for e in newer) or \
        any(e["type"] == "script.state_requested" for e in newer)
    _rc, out, _err = await slfs(m, "events", "--since", "10m")
    assert len(out.splitlines()) >= len(events)
    # text mode prints a line for people per event (tests/e2e/test_cli_human.py)
    _rc, out, _err = await slfs(m, "events")
    assert len(out.splitlines()) >= len(events) and not out.startswith("{")
    rc, out, err = await slfs(m, "events", "--since", "yesterday", check=False)
    assert rc == 2 and out == "" and "duration" in err  # not --json: no JSON


@pytest.mark.own_mount("stops the daemon: `events -f` must end when the mount goes away")
async def test_events_follow(mounted: Mount) -> None:
    m = mounted
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "slfs", "events", "-f", "--json", "--since", "0"],
        stdout=-1, stderr=-1, env=m.env)
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    buf = b""

    async def until(pred: Any, timeout: float = 15) -> None:
        nonlocal buf
        with trio.fail_after(timeout):
            while not any(pred(e) for e in seen):
                chunk = await proc.stdout.receive_some(65536)  # type: ignore[union-attr]
                assert chunk, "slfs events -f exited"
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    seen.append(json.loads(line))

    try:
        await until(lambda e: e["type"] == "connected")
        await slfs(m, "reset", m.path(CUBE, "Hello.lsl"))
        await until(lambda e: e["type"] == "runtime.debug" and e.get("message") == "Hello from the cube!")
        seqs = [e["seq"] for e in seen]
        assert seqs == sorted(set(seqs))
        # the follower ends by itself when the mount goes away
        await m.stop_daemon()
        with trio.fail_after(10):
            await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_open_and_close(mounted: Mount) -> None:
    m = mounted
    data = await sj(m, "open", LAMP_ID)
    assert data["path"] == str(m.path("Unpublished Lamp")) and data["uuid"] == LAMP_ID
    assert "Unpublished Lamp" in await m.out("ls", m.mnt)
    _rc, out, _err = await slfs(m, "open", LAMP_ID.upper())  # already published: same answer
    assert out == f"{m.path('Unpublished Lamp')}\n"
    data = await sj(m, "close", m.path("Unpublished Lamp"))
    assert data["uuid"] == LAMP_ID

    async def gone() -> bool:
        return "Unpublished Lamp" not in await m.out("ls", m.mnt)

    await m.wait_for(gone, 10, "the lamp unpublished")
    # close from a file inside the object acts on the object
    _rc, out, _err = await slfs(m, "close", m.path("House", "Controller.lsl"))
    assert out == f"{m.path('House')}: unpublished\n"
    rc, out, err = await slfs(m, "open", "--json", "00000000-0000-4000-8000-000000000009", check=False)
    assert rc == 1 and json_error(out, 1) and err


async def test_object_commands(mounted: Mount) -> None:
    m = mounted
    cube = m.path(CUBE)
    for verb, command in (("teleport", "viewer.teleport"), ("focus", "viewer.camera.focus"),
                          ("save-back", "viewer.object.save_back_to_contents"),
                          ("reset-all", "viewer.script.reset_all")):
        data = await sj(m, verb, cube)
        assert data["command"] == command, data
    # without --json, a result that only says it worked is "COMMAND: ok" (slfs(1))
    rc, out, err = await slfs(m, "teleport", cube)
    assert out == "viewer.teleport: ok\n", (out, err)
    data = await sj(m, "recompile", "--target", "luau", m.path(CUBE, "Counter.luau"))
    assert data["command"] == "viewer.script.recompile_all"
    rc, out, err = await slfs(m, "recompile", "--json", "--target", "java", cube, check=False)
    assert rc == 2 and "--target" in json_error(out, 2)
    rc, out, err = await slfs(m, "recompile", "--json", cube, check=False)
    assert rc == 2 and "--target" in json_error(out, 2) and "--target" in err
    rc, out, err = await slfs(m, "teleport", "--json", m.path("nowhere"), check=False)
    assert rc == 1 and "nowhere" in json_error(out, 1) and "nowhere" in err


async def test_exec_and_commands(mounted: Mount) -> None:
    m = mounted
    data = await sj(m, "commands")
    names = {c["command"] for c in data["commands"]}
    assert "viewer.teleport" in names and "viewer.script.recompile_all" in names
    _rc, text, _err = await slfs(m, "commands")
    assert any(ln.startswith("viewer.teleport") for ln in text.splitlines())
    data = await sj(m, "exec", "viewer.teleport", f"object_id={CUBE_ID}")
    assert data["command"] == "viewer.teleport"
    data = await sj(m, "exec", "viewer.script.recompile_all", f"object_id={CUBE_ID}", 'target="mono"')
    assert data["command"] == "viewer.script.recompile_all"
    rc, out, err = await slfs(m, "exec", "--json", "viewer.teleport", "object_id=1", check=False)
    assert rc == 1 and json_error(out, 1) and err  # 1 parses as JSON: a number, which the viewer refuses
    rc, out, err = await slfs(m, "exec", "--json", "viewer.teleport", "noequals", check=False)
    assert rc == 2 and "KEY=VALUE" in json_error(out, 2) and "KEY=VALUE" in err
    rc, out, err = await slfs(m, "exec", "--json", "viewer.teleport", check=False)
    assert rc == 1 and "object_id" in json_error(out, 1) and "object_id" in err


async def test_open_uri_encoded_and_bad_port(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    hello = sample_item(m.sim.world, f"{CUBE}/Hello.lsl")
    uri = (f"vscode://lindenlab.sl-vscode-plugin/connect%3Fport%3D{m.port}%26object%3D{CUBE_ID}"
           f"%26script%3D{hello.item_id}")
    _rc, out, _err = await slfs(m, "open-uri", uri)
    assert out == f"{m.path(CUBE, 'Hello.lsl')}\n"
    data = await sj(m, "open-uri", f"vscode://lindenlab.sl-vscode-plugin/connect?port={m.port}&object={LAMP_ID}")
    assert data["path"] == str(m.path("Unpublished Lamp")) and data["mount"] == str(m.mnt)
    for port in ("80", "65536", "x", "", "\u00b2\u00b2\u00b2\u00b2", "9020x", "-9020"):
        rc, out, err = await slfs(m, "open-uri", "--json",
                                  f"vscode://lindenlab.sl-vscode-plugin/connect?port={port}&object={CUBE_ID}",
                                  check=False)
        assert rc == 2 and "1024" in json_error(out, 2) and "1024" in err, (port, err)
    rc, out, err = await slfs(m, "open-uri", "--json", "https://example.com/", check=False)
    assert rc == 2 and "not a viewer launch URI" in json_error(out, 2)


async def test_open_uri_mounts(mount_factory: MountFactory, tmp_path: Path) -> None:
    """No mount for the port: open-uri mounts ~/sl in the background and waits until connected."""
    m = await mount_factory(start=False)
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home)}
    uri = f"vscode://lindenlab.sl-vscode-plugin/connect?port={m.port}&object={LAMP_ID}"
    sl = home / "sl"
    try:
        # The sim's port is not the default viewer port: the user lists it (issue 21 item 9).
        rc, out, err = await slfs(m, "open-uri", "-o", f"uri_ports={m.port}", "--json", uri, env=env, check=False,
                                  timeout=90)
        assert rc == 0, err
        data = json.loads(out)
        assert data["path"] == f"{sl}/Unpublished Lamp" and data["mount"] == str(sl)
        # the next one finds the running mount
        rc, out, err = await slfs(m, "open-uri", uri, env=env, check=False)
        assert rc == 0 and out == f"{sl}/Unpublished Lamp\n", err
        assert (await sj(m, "status", "--mount", sl, env=env))["state"] == "connected"
    finally:
        await slfs(m, "umount", sl, env=env, check=False)
        if os.path.ismount(sl):
            await m.run("fusermount3", "-u", "-z", sl, check=False)


async def test_diag_build_idiom_new_file(mounted: Mount, tmp_path: Path) -> None:
    """`cp main.luau ~/sl/Obj/ && slfs diag ~/sl/Obj/main.luau`: the compile of a new file is known
    when cp returns."""
    m = mounted
    src = tmp_path / "main.luau"
    dest = m.path(CUBE, "main.luau")
    src.write_text("local function f()\n    print('x')\n")
    res = await m.run("sh", "-c", f"cp '{src}' '{m.path(CUBE)}/' && {sys.executable} -m slfs diag '{dest}'",
                      check=False)
    assert res.returncode == 1, res
    line = res.stdout.decode().splitlines()[0]
    assert line.startswith(f"{dest}:") and ": error: " in line
    src.write_text("print('ok')\n")
    res = await m.run("sh", "-c", f"cp '{src}' '{m.path(CUBE)}/' && {sys.executable} -m slfs diag '{dest}'",
                      check=False)
    assert res.returncode == 0 and res.stdout == b"", res
