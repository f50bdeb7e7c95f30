"""The edges (issue 36, item 6), on every viewer generation: copying a tree back with its
attributes (`rsync -aX`, `cp -a --preserve=xattr`), a create while no viewer is connected, what
run/stop/reset say the viewer confirmed, an empty mount of a viewer that publishes nothing until
asked, a failed `--json` verb, `mv` between languages and a permission error on a notecard."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
import trio
from support import worlds
from support.cli import sj, slfs
from support.mount import Mount, MountFactory
from support.writes import errno_of

pytestmark = pytest.mark.generations

CUBE = "Hello Cube"
GOOD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("%s");\n    }\n}\n'
REFUSED_ATTRIBUTE = r"^WARNING slfs\.model\.workspace: (setxattr|rename): .*read-only"
NOT_SUPPORTED = r"^WARNING slfs\.model\.workspace: (run|stop|reset) .*: this viewer cannot do that"


def in_world(m: Mount, name: str) -> worlds.Item:
    assert m.sim is not None
    return worlds.item_named(m.sim.world, name)


async def rsync(m: Mount, src: Path) -> tuple[int, str]:
    res = await m.run("rsync", "-aX", f"{src}/", f"{m.path(CUBE)}/", check=False)
    return res.returncode, res.stderr.decode()


async def cp_a(m: Mount, src: Path) -> tuple[int, str]:
    res = await m.run("cp", "-a", "--preserve=xattr", f"{src}/.", f"{m.path(CUBE)}/", check=False)
    return res.returncode, res.stderr.decode()


@pytest.mark.allow_log(REFUSED_ATTRIBUTE)
async def test_rsync_and_cp_copy_a_tree_back_with_its_attributes(mounted: Mount, tmp_path: Path) -> None:
    m = mounted
    hello = in_world(m, "Hello")
    copy = tmp_path / "copy"
    copy.mkdir()
    await m.run("cp", "-a", "--preserve=xattr", m.path(CUBE), copy)
    local = copy / CUBE
    assert os.getxattr(local / "Hello.lsl", "user.sl.item_id") == hello.item_id.encode()
    # Unchanged, twice: every attribute set is the item's own.
    for run in (1, 2):
        assert await rsync(m, local) == (0, ""), run
        assert await cp_a(m, local) == (0, ""), run
    # Changed: rsync saves through its temporary file, whose attributes are checked at its rename
    # onto the item; the second run sets the attributes again on the item (its revision moved on).
    for n, copier in enumerate((rsync, cp_a, rsync, cp_a)):
        text = GOOD_LSL % f"copied back {n}{'!' * n}"  # a new size: rsync compares sizes and whole seconds
        (local / "Hello.lsl").write_text(text)
        assert await copier(m, local) == (0, ""), copier
        assert await copier(m, local) == (0, ""), copier
        assert in_world(m, "Hello").content == text and in_world(m, "Hello").item_id == hello.item_id
    # The current value can be set on the mount itself; another is refused, and the status says why.
    item_file = m.path(CUBE, "Hello.lsl")
    assert await m.thread(errno_of, os.setxattr, item_file, "user.sl.item_id", hello.item_id.encode()) == 0
    assert await m.thread(errno_of, os.setxattr, item_file, "user.sl.item_id", b"0" * 36) == errno.ENOTSUP
    assert "user.sl.item_id is" in (await m.status())["last_error"]
    assert await m.thread(errno_of, os.setxattr, m.path(CUBE), "user.sl.description", b"new") == errno.ENOTSUP
    assert await m.thread(errno_of, os.setxattr, item_file, "user.sl.no_such", b"1") == errno.ENOTSUP
    assert await m.thread(errno_of, os.setxattr, item_file, "user.other", b"1") == errno.ENOTSUP
    # A differing attribute on rsync's temporary file: its rename is refused, nothing is saved.
    before = in_world(m, "Hello").content
    os.setxattr(local / "Hello.lsl", "user.sl.description", b"not the item's")
    (local / "Hello.lsl").write_text(GOOD_LSL % "never saved")
    rc, err = await rsync(m, local)
    assert rc == 23 and "rename" in err and "Operation not permitted" in err, err
    last = (await m.status())["last_error"]
    assert "user.sl.description is '', not \"not the item's\"" in last and "read-only" in last, last
    assert in_world(m, "Hello").content == before
    rc, err = await cp_a(m, local)
    assert rc == 1 and "Operation not supported" in err, err
    assert not [n for n in await m.thread(os.listdir, m.path(CUBE)) if n.startswith(".Hello.lsl.")]


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: create: .*cannot create a file while not connected",
                       r"^WARNING slfs\.model\.syntax: syntax files not refreshed")
async def test_a_create_while_no_viewer_is_connected_fails_at_open(mount_factory: MountFactory) -> None:
    # Its own mount: it stops the viewer; a short reconnect_wait, which the create waits out first.
    m = await mount_factory(options=["reconnect_wait=1"])
    m.stop_sim()

    async def away() -> bool:
        return (await m.status())["state"] != "connected"
    await m.wait_for(away, 20, "the mount saw the viewer go")
    new = m.path(CUBE, "New.lsl")
    # bash ignores close()'s error: the redirection itself must fail (after reconnect_wait).
    res = await m.run("bash", "-c", 'echo "default{}" > "$1"', "bash", new, check=False)
    assert res.returncode != 0 and b"Input/output error" in res.stderr, res
    assert await m.thread(errno_of, os.open, new, os.O_WRONLY | os.O_CREAT, 0o644) == errno.EIO
    assert "cannot create a file while not connected to the viewer" in (await m.status())["last_error"]
    assert not await m.thread(os.path.exists, new)
    assert not list((Path(m.env["XDG_STATE_HOME"]) / "slfs" / "recovery").glob("*New.lsl*"))


@pytest.mark.allow_log(NOT_SUPPORTED)
async def test_run_stop_and_reset_say_what_the_viewer_confirmed(mounted: Mount,
                                                                viewer_generation: str | None) -> None:
    m = mounted
    hello = m.path(CUBE, "Hello.lsl")
    if viewer_generation == "G1":  # no object.script.set_running or reset
        for verb in ("run", "stop", "reset"):
            rc, out, err = await slfs(m, verb, hello, check=False)
            assert rc == 1 and out == "" and "cannot do that" in err, (verb, err)
        return
    _rc, out, _err = await slfs(m, "stop", hello)
    assert out == f"{hello}: stopped\n"
    _rc, out, _err = await slfs(m, "run", hello)
    assert out == f"{hello}: running\n"
    # The viewer says nothing of a plain reset: the state shown is the last known one, and not confirmed.
    _rc, out, _err = await slfs(m, "reset", hello)
    assert out == f"{hello}: reset (state: running, not yet confirmed by the viewer)\n"
    assert (await sj(m, "reset", hello))["results"][0]["confirmed"] is False
    # A faulted script's reset clears the fault: the viewer's update confirms it.
    faulty = m.path(CUBE, "Faulty.lsl")
    await slfs(m, "run", faulty)  # it stops with a run-time error at its start (as test_run_faulted.py)
    await slfs(m, "reset", faulty)
    state = m.path(CUBE, ".slfs", "Faulty.lsl.state")
    with trio.fail_after(10):
        while (await m.thread(state.read_text)) != "faulted\n":
            await trio.sleep(0.05)
    result = (await sj(m, "reset", faulty))["results"][0]
    assert result["confirmed"] is True, result


async def test_an_empty_mount_says_how_to_publish(mount_factory: MountFactory,
                                                  viewer_generation: str | None) -> None:
    m = await mount_factory(start=False)
    await m.start_daemon(wait_state="connected")  # nothing explored yet
    status = await m.status()
    if viewer_generation != "G1":  # object.list: what is published is shown at once
        assert status["objects"] != "0" and "publish_hint" not in status, status
        return
    assert status["objects"] == "0", status
    assert "Explore in IDE" in status["publish_hint"] and "slfs open" in status["publish_hint"], status
    _rc, text, _err = await slfs(m, "status")
    assert any(line.startswith("publish_hint: this viewer publishes nothing until asked") for line in text.splitlines())
    await m.explore_published()
    assert "publish_hint" not in await m.status()


async def test_a_failed_json_verb_prints_a_json_error(mounted: Mount) -> None:
    m = mounted
    hello = m.path(CUBE, "Hello.lsl")
    for argv in (("restore", "--json", hello, "no-such-version"), ("history", "--json", m.path("nowhere")),
                 ("status", "--json", "--mount", "/proc")):
        rc, out, err = await slfs(m, *argv, check=False)
        data = json.loads(out)
        assert rc == 1 and set(data) == {"error", "code", "exit"} and data["exit"] == 1, (argv, out, err)
        assert data["error"] and data["error"] in err, (argv, out, err)
    rc, out, _err = await slfs(m, "open-uri", "--json",
                               f"vscode://lindenlab.sl-vscode-plugin/connect?port=9x&object={'0' * 32}", check=False)
    assert rc == 2 and json.loads(out)["exit"] == 2


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: rename: .*cannot change in place")
async def test_mv_between_languages_says_why(mounted: Mount) -> None:
    m = mounted
    res = await m.run("mv", m.path(CUBE, "Hello.lsl"), m.path(CUBE, "Hello.luau"), check=False)
    assert res.returncode == 1 and b"Operation not permitted" in res.stderr, res
    assert "language (LSL or Luau) cannot change in place" in (await m.status())["last_error"]
    names = await m.thread(os.listdir, m.path(CUBE))
    assert "Hello.lsl" in names and not [n for n in names if n.startswith("Hello") and n.endswith(".luau")]


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: (open|read|lookup): (read )?Locked Box/Read Me")
async def test_a_permission_error_on_a_notecard_does_not_speak_of_scripts(mounted: Mount) -> None:
    m = mounted
    note = m.path("Locked Box", "Read Me")
    assert await m.thread(errno_of, lambda: note.open("a").close()) == errno.EACCES
    said = [line for line in m.log_text().splitlines() if "Read Me" in line]
    assert said and not [line for line in said if "script" in line.lower()], said
