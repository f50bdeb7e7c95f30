"""`slfs push` all or nothing, on every simulated viewer generation: a compile error in the 7th of
10 items, a refused create, and Ctrl-C mid-push each leave the object as it was (texts and run
states, created items gone); `--no-rollback` leaves what was saved."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from support.mount import MountFactory
from support.push import (
    DOOR_DIR,
    HINGE,
    LUAU,
    SITE,
    A,
    B,
    C,
    calls,
    inworld,
    lsl,
    make_src,
    mark,
    names,
    push,
    push_mount,
    settled,
    site_files,
)

pytestmark = pytest.mark.generations()

BEFORE = {A: (lsl("a"), True), B: (lsl("b"), False), C: (LUAU, True), HINGE: (lsl("hinge"), True)}


def ten_changes(tmp_path: Path, broken: str = "A.lsl") -> Path:
    """6 new scripts (saved first, as created) and 4 updates: A.lsl is the 7th save."""
    files = site_files()
    for i in range(1, 7):
        files[f"N{i}.lsl"] = lsl(f"n{i}")
    files["A.lsl"] = lsl("a2")
    files["B.lsl"] = lsl("b2")
    files["C.luau"] = "local y = 2\nprint(y)\n"
    files[f"{DOOR_DIR}/Hinge.lsl"] = lsl("hinge2")
    files[broken] = 'default\n{\n    state_entry()\n    {\n        syntax error here;\n    }\n}\n'
    return make_src(tmp_path / "src", files)


async def as_before(m: object) -> None:
    await settled(m)  # type: ignore[arg-type]
    for item_id, (text, running) in BEFORE.items():
        it = inworld(m, item_id)  # type: ignore[arg-type]
        assert it.content == text, item_id
        assert bool(it.running) == running, item_id
    assert not [n for n in names(m) if n.startswith("N")]  # type: ignore[arg-type]


async def test_a_compile_error_in_the_7th_of_10_rolls_all_back(mount_factory: MountFactory,
                                                               tmp_path: Path) -> None:
    m = await push_mount(mount_factory)
    src = ten_changes(tmp_path)
    at = mark(m)
    rc, out, err = await push(m, src)
    assert rc == 1, (out, err)
    assert f"{src}/A.lsl:5:" in out and ": error: " in out, out
    assert "push failed: A.lsl: the compile failed" in err and "rolled back" in err
    await as_before(m)
    # Nothing was started while the push ran, and created scripts were removed.
    created = {p["name"] for meth, p in calls(m, at, ("object.item.create",))}
    assert created == {f"N{i}" for i in range(1, 7)}
    assert len(calls(m, at, ("object.item.delete",))) == 6
    starts = [p for meth, p in calls(m, at, ("object.script.set_running",)) if p.get("running")]
    assert starts == []


async def test_no_rollback_leaves_what_was_saved(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await push_mount(mount_factory)
    src = ten_changes(tmp_path)
    rc, _out, err = await push(m, src, "--no-rollback")
    assert rc == 1 and "not rolled back" in err
    await settled(m)
    assert "N1" in names(m)
    assert "syntax error" in inworld(m, A).content


async def test_a_refused_create_rolls_back(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await push_mount(mount_factory)
    files = site_files()
    files["A.lsl"] = lsl("a2")
    files["N1.lsl"] = lsl("n1")
    files["N2.lsl"] = lsl("n2")
    src = make_src(tmp_path / "src", files)
    sim = m.sim
    assert sim is not None
    sim.refuse_next_create(SITE)
    sim.refuse_next_create(SITE)  # one of the two creates is refused, whichever goes first
    rc, _out, err = await push(m, src)
    assert rc == 1 and "push failed: N" in err and "rolled back" in err, err
    await as_before(m)


async def test_ctrl_c_mid_push_rolls_back(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await push_mount(mount_factory, sim_kwargs={"method_latency_ms": {"object.content.save": 400}})
    src = ten_changes(tmp_path, broken="N6.lsl")
    (src / "N6.lsl").write_text(lsl("n6"))
    at = mark(m)
    argv = [sys.executable, "-m", "slfs", "push", str(src), str(m.path("Site"))]
    proc = await trio.lowlevel.open_process(argv, env=m.env)
    try:
        async def saving() -> bool:
            return bool(calls(m, at, ("object.content.save",)))
        await m.wait_for(saving, 30, "the push's first save")
        proc.send_signal(signal.SIGINT)
        with trio.fail_after(60):
            rc = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
    assert rc == 130
    await as_before(m)


async def test_a_refused_save_rolls_back(mount_factory: MountFactory, tmp_path: Path) -> None:
    from slfs.protocol.rpc_errors import RpcError

    m = await push_mount(mount_factory)
    files = site_files()
    files["A.lsl"] = lsl("a2")
    files["B.lsl"] = lsl("b2")
    files[f"{DOOR_DIR}/Hinge.lsl"] = lsl("hinge2")
    files["N1.lsl"] = lsl("n1")
    src = make_src(tmp_path / "src", files)
    assert m.sim is not None
    m.sim.fail_next("object.content.save", RpcError(-32003, "Permission denied"))
    rc, out, err = await push(m, src)
    assert rc == 1 and "push failed:" in err and "rolled back" in err, (out, err)
    await as_before(m)


@pytest.mark.allow_log(r"this viewer cannot do that")  # G1: no set_running
async def test_progress_bar_on_a_terminal(mount_factory: MountFactory, tmp_path: Path) -> None:
    import shlex
    import shutil

    if shutil.which("script") is None:
        pytest.skip("script(1) is not installed")
    m = await push_mount(mount_factory)
    files = site_files()
    files["A.lsl"] = lsl("a-tty")
    src = make_src(tmp_path / "src", files)
    command = shlex.join([sys.executable, "-m", "slfs", "push", str(src), str(m.path("Site"))])
    res = await m.run("script", "-qefc", command, "/dev/null", check=False, timeout=60)
    text = res.stdout.decode(errors="replace")
    assert res.returncode == 0, text
    assert "update A.lsl" in text and "] 1/" in text and "A.lsl" in text  # the bar: done/total and the name
    assert "\r\x1b[K[" in text and "\ufffd" not in text  # drawn in place, not shown as replacement characters
    await settled(m)
    assert inworld(m, A).content == lsl("a-tty")


@pytest.mark.allow_log(r"not connected to the viewer|dropped")
async def test_a_dropped_session_fails_and_says_what_it_could_not_restore(mount_factory: MountFactory,
                                                                          tmp_path: Path) -> None:
    """The viewer goes away mid-push: the push fails (exit 1); the rollback cannot reach it either,
    and says which items it could not restore. Once the viewer is back, every item holds its old
    text or is one of those named: nothing is claimed that did not happen."""
    m = await push_mount(mount_factory, options=["reconnect_wait=1"],
                         sim_kwargs={"method_latency_ms": {"object.content.save": 300}})
    files = site_files()
    files["A.lsl"] = lsl("a2")
    files["B.lsl"] = lsl("b2")
    files[f"{DOOR_DIR}/Hinge.lsl"] = lsl("hinge2")
    src = make_src(tmp_path / "src", files)
    world = m.sim.world  # type: ignore[union-attr]
    at = mark(m)
    argv = [sys.executable, "-m", "slfs", "push", str(src), str(m.path("Site"))]
    proc = await trio.lowlevel.open_process(argv, env=m.env, stderr=subprocess.PIPE)
    err = bytearray()
    try:
        async with trio.open_nursery() as nursery:
            async def read_err() -> None:
                assert proc.stderr is not None
                async for chunk in proc.stderr:
                    err.extend(chunk)
            nursery.start_soon(read_err)

            async def saving() -> bool:
                return bool(calls(m, at, ("object.content.save",)))
            await m.wait_for(saving, 30, "the push's first save")
            m.stop_sim()
            with trio.fail_after(90):
                rc = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
    text = bytes(err).decode()
    assert rc == 1, text
    assert "push failed:" in text and "the rollback failed for" in text, text
    await m.start_sim(world)
    await m.wait_live("connected", 30)
    await m.explore_published()
    await settled(m)
    for item_id, rel in ((A, "A.lsl"), (B, "B.lsl"), (HINGE, f"{DOOR_DIR}/Hinge.lsl")):
        if inworld(m, item_id).content != BEFORE[item_id][0]:
            assert f"{rel}: not restored" in text, (rel, text)
