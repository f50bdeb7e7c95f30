"""Every generation of the viewer's shipped C++ (G1-G4 of ../shared/research/viewer-source.md), one
client: a real mount over the simulated viewer playing each generation, and over the two protocol
documents' readings. What each generation sends differently (failed compiles as raw `errors` lines
or as `diagnostics`, runtime output with or without item references, no commands in G1, empty
content refused, a save without `running` stopping the script in G1) reaches the same files."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
from support import worlds
from support.cli import slfs
from support.live_mounts import GOOD, IN_OBJ, OBJ, live_mount, live_round_trip, open_in_viewer
from support.mount import Mount, MountFactory
from support.texts import BAD_LSL, BAD_LUAU, QF_LINE
from support.writes import errno_of

pytestmark = pytest.mark.generations

CUBE = "Hello Cube"
GOOD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("fine");\n    }\n}\n'


def item_named(m: Mount, name: str) -> Any:
    assert m.sim is not None
    return worlds.item_named(m.sim.world, name)


async def save(m: Mount, *parts: str, text: str) -> int:
    def run() -> int:
        try:
            with open(m.path(*parts), "w") as f:
                f.write(text)
        except OSError as exc:
            return exc.errno or -1
        return 0
    return await m.thread(run)


def events(m: Mount) -> list[dict[str, Any]]:
    return [json.loads(line) for line in m.path(".slfs", "events").read_text().splitlines()]


async def test_the_session_starts_and_reads(mounted: Mount, viewer_generation: str | None) -> None:
    m = mounted
    status = await m.status()
    assert status["state"] == "connected"
    # The agent comes from session.handshake (G1-G3) or session.ok (G4).
    assert status["agent"] == "Simulated Resident", status
    hello = item_named(m, "Hello")
    assert await m.read_bytes(CUBE, "Hello.lsl") == hello.content.encode()


async def test_a_failed_compile_reaches_every_surface(mounted: Mount) -> None:
    m = mounted
    hello = item_named(m, "Hello")
    assert await save(m, CUBE, "Hello.lsl", text=BAD_LSL) == 0  # stored, though it does not compile
    assert m.sim is not None and m.sim.item(hello.item_id).content == BAD_LSL
    diag = (await m.thread(m.path(CUBE, ".slfs", "Hello.lsl.diag").read_text)).splitlines()
    assert diag, "no diagnostics"
    row = QF_LINE.match(diag[0])
    assert row and row[1] == str(m.path(CUBE, "Hello.lsl")) and row[2] == "5" and row[4] == "error", diag
    rc, out, _err = await slfs(m, "diag", m.path(CUBE, "Hello.lsl"), check=False)
    assert rc == 1 and out.splitlines()[0] == diag[0], out
    assert diag[0] in await m.thread(m.path(".slfs", "diagnostics").read_text)
    compile_event = [e for e in events(m) if e["type"] == "compile"][-1]
    assert compile_event["compiled"] is False and compile_event["diagnostics"][0]["row"] == 5
    # Luau: rows as the compiler counts them (1-based), no column.
    assert await save(m, CUBE, "Counter.luau", text=BAD_LUAU) == 0
    luau = (await m.thread(m.path(CUBE, ".slfs", "Counter.luau.diag").read_text)).splitlines()
    got = QF_LINE.match(luau[0]) if luau else None
    assert got and int(got[2]) >= 1 and got[4] == "error", luau
    # Fixed: no rows, exit 0.
    assert await save(m, CUBE, "Hello.lsl", text=GOOD_LSL) == 0
    rc, out, _err = await slfs(m, "diag", m.path(CUBE, "Hello.lsl"), check=False)
    assert rc == 0 and out == ""


async def test_a_save_keeps_the_script_running(mounted: Mount) -> None:
    # G1 uploads a save that does not say `running` as stopped: slfs always says it.
    m = mounted
    assert m.sim is not None
    hello = item_named(m, "Hello")
    assert hello.running is True
    mark = m.sim.mark()
    assert await save(m, CUBE, "Hello.lsl", text=GOOD_LSL) == 0
    [(_method, params)] = m.sim.calls_since(mark, "object.content.save")
    assert params["running"] is True
    assert m.sim.item(hello.item_id).running is True
    assert (await m.thread(m.path(CUBE, ".slfs", "Hello.lsl.state").read_text)) == "running\n"


@pytest.mark.allow_log(r"this viewer cannot store an empty script")
async def test_an_empty_text_goes_to_the_viewer_which_decides(mounted: Mount) -> None:
    """G4 and the documents' viewers store an empty text; G1-G3 refuse it (viewer-source.md §2),
    and then the file shows the in-world text again and the status says why."""
    m = mounted
    assert m.sim is not None
    hello = item_named(m, "Hello")
    before = hello.content
    refuses = m.sim.profile.empty_content_rejected
    mark = m.sim.mark()
    err = await m.thread(errno_of, os.truncate, m.path(CUBE, "Hello.lsl"), 0)
    assert err == (errno.EINVAL if refuses else 0)
    assert [p["content"] for _m, p in m.sim.calls_since(mark, "object.content.save")] == [""]
    if not refuses:
        assert m.sim.item(hello.item_id).content == ""
        assert await m.read_bytes(CUBE, "Hello.lsl") == b""
        return
    # `> F`: the kernel does not pass on what the last release says; the status does.
    assert await save(m, CUBE, "Hello.lsl", text="") == 0

    async def refused() -> bool:  # the release that refuses it comes after close() returned
        return len(m.sim.calls_since(mark, "object.content.save")) == 2 \
            and await m.read_bytes(CUBE, "Hello.lsl") == before.encode()
    await m.wait_for(refused, 10, "the file showing the in-world text again")
    assert "cannot store an empty script" in (await m.status())["last_error"]
    assert m.sim.item(hello.item_id).content == before


@pytest.mark.allow_log(r"WARNING slfs\.model\.workspace: (stop|run) .*: this viewer cannot do that")
async def test_run_state_requests(mounted: Mount, viewer_generation: str | None) -> None:
    m = mounted
    state = str(m.path(CUBE, ".slfs", "Hello.lsl.state"))

    def write_state(word: str) -> int:
        fd = os.open(state, os.O_WRONLY | os.O_TRUNC)
        try:
            os.write(fd, word.encode())
        except OSError as exc:
            return exc.errno or -1
        finally:
            os.close(fd)
        return 0

    if viewer_generation == "G1":  # no object.script.set_running in G1
        assert await m.thread(write_state, "stop\n") == errno.EOPNOTSUPP
        assert "cannot do that" in (await m.status())["last_error"] or "cannot do that" in m.log_text()
        return
    assert await m.thread(write_state, "stop\n") == 0

    async def stopped() -> bool:
        return await m.thread(Path(state).read_text) == "stopped\n"
    await m.wait_for(stopped, 10, "stopped")


async def test_viewer_commands_are_checked_against_its_command_list(mounted: Mount,
                                                                    viewer_generation: str | None) -> None:
    m = mounted
    assert m.sim is not None
    mark = m.sim.mark()
    rc, out, err = await slfs(m, "recompile", "--target", "mono", m.path(CUBE), check=False)
    if viewer_generation == "G1":
        assert rc == 1 and "offers no commands" in err, (out, err)
        assert m.sim.calls_since(mark, "command.execute") == []
        return
    assert rc == 0, (out, err)
    [(_m, params)] = m.sim.calls_since(mark, "command.execute")
    cube = next(o for o in m.sim.world.objects.values() if o.root.name == CUBE)
    assert params == {"command": "viewer.script.recompile_all",
                      "params": {"object_id": cube.object_id, "target": "mono"}}
    mark = m.sim.mark()
    rc, _out, err = await slfs(m, "exec", "viewer.no_such_command", check=False)
    assert rc == 1 and "does not offer viewer.no_such_command" in err, err
    assert m.sim.calls_since(mark, "command.execute") == []


async def test_runtime_output_finds_its_script_or_its_object(mount_factory: MountFactory, tmp_path: Path,
                                                            viewer_generation: str | None) -> None:
    m, argv_log = await live_mount(mount_factory, tmp_path)
    assert m.sim is not None
    # G1 forwards a prim's output only to the live-sync subscriber of one of its scripts.
    await open_in_viewer(m, IN_OBJ, argv_log)
    await m.sim.emit_debug(IN_OBJ, "gen-marker-1")
    await m.sim.emit_error(IN_OBJ, "Script run-time error", line=3, error="Math Error")
    object_log = str(m.path("Box", ".slfs", "log"))

    async def has(path: str, *words: str) -> bool:
        try:
            text = await m.thread(Path(path).read_text)
        except OSError:
            return False
        return all(w in text for w in words)

    await m.wait_for(lambda: has(object_log, "gen-marker-1"), 10, "the line in the object's log")
    if viewer_generation != "G3":
        # G3 cannot name the script of a plain line (its item_id is the null UUID): object only.
        await m.wait_for(lambda: has(str(m.path("Box", ".slfs", "Boxed.lsl.log")), "gen-marker-1"), 10,
                         "the line in the script's log")
    debug = [e for e in events(m) if e["type"] == "runtime.debug" and "gen-marker-1" in e["message"]]
    assert debug and debug[-1]["object_id"] == OBJ and debug[-1]["path"].startswith("Box")
    await m.wait_for(lambda: has(object_log, "error"), 10, "the error in the object's log")
    assert "gen-marker-1" not in await m.thread(m.path(".slfs", "log").read_text)


async def test_a_live_sync_round_trip(mount_factory: MountFactory, tmp_path: Path) -> None:
    m, argv_log = await live_mount(mount_factory, tmp_path)
    _sid, live = await open_in_viewer(m, IN_OBJ, argv_log)
    await live_round_trip(m, live)


async def test_the_editor_closed_disconnect_is_a_reconnect(mount_factory: MountFactory, tmp_path: Path,
                                                           viewer_generation: str | None) -> None:
    # G1 drops the whole connection ({1, "Editor closed"}) when its last live-sync editor closes,
    # and has no object.list to say again what it publishes: the mount keeps its objects.
    m, argv_log = await live_mount(mount_factory, tmp_path)
    assert m.sim is not None
    sid, live = await open_in_viewer(m, IN_OBJ, argv_log)
    await m.sim.close_script_editor(sid)
    await m.wait_for(lambda: m.thread(lambda: not os.path.exists(live)), 10, "the live file going")
    if viewer_generation == "G1":
        await m.wait_for(lambda: _logged(m, "its last live-sync editor closed; reconnecting"), 10, "the reconnect")

        async def connected_again() -> bool:
            return "publish the 1 objects shown again" in m.log_text() and (await m.status())["state"] == "connected"
        await m.wait_for(connected_again, 15, "connected again, objects requested")
        # The object asked for again is published again before its items are read: in the moment
        # between, an item of the kept object can answer ENOENT under load (seen in CI; left open).
        await m.wait_for(lambda: _requested(m), 10, "the object asked for again")
        await m.sim.quiesce()
    assert await m.thread(os.listdir, m.mnt) == ["Box"]
    assert await m.read_bytes("Box", "Boxed.lsl") == GOOD.encode()
    assert await save(m, "Box", "Boxed.lsl", text=GOOD.replace("good", "again")) == 0
    assert m.sim.item(IN_OBJ).content == GOOD.replace("good", "again")


async def _requested(m: Mount) -> bool:
    assert m.sim is not None
    return any(method == "object.request" for method, _params in m.sim.calls)


async def _logged(m: Mount, text: str) -> bool:
    return text in m.log_text()
