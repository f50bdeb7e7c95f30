"""`slfs push --watch --exec` and the MCP tools `slfs_push` / `slfs_pull`, end to end on a real
mount, on every simulated viewer generation."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from support.mount import Mount, MountFactory
from support.push import SITE, A, calls, inworld, lsl, make_src, mark, names, push_mount, settled, site_files

from slfs.mcp.server import build_server

pytestmark = pytest.mark.generations()


@asynccontextmanager
async def session(m: Mount, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Client]:
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(key, m.env[key])
    async with Client(build_server(), mode="legacy") as client:
        yield client


async def call(client: Client, name: str, **args: Any) -> tuple[bool, Any]:
    res = await client.call_tool(name, args)
    if res.is_error:
        return False, res.content[0].text  # type: ignore[union-attr]
    return True, res.structured_content


@pytest.mark.allow_log(r"this viewer cannot do that")  # G1: no set_running
async def test_mcp_push_and_pull(mount_factory: MountFactory, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    m = await push_mount(mount_factory)
    files = site_files()
    files["A.lsl"] = lsl("from-mcp")
    src = make_src(tmp_path / "src", files)
    monkeypatch.chdir(tmp_path)  # the agent's project: slfs_push and slfs_pull stay inside it
    async with session(m, monkeypatch) as client:
        at = mark(m)
        ok, plan = await call(client, "slfs_push", src=str(src), dest="Site", plan=True)
        assert ok, plan
        assert {"action": "update", "path": "A.lsl", "item_id": A, "reason": None} in plan["items"]
        assert plan["summary"]["update"] == 1 and plan["summary"]["unchanged"] == 5
        ok, by_id = await call(client, "slfs_push", src=str(src), dest=SITE, plan=True)  # DEST by UUID
        assert ok and by_id["items"] == plan["items"], by_id and plan["exit"] == 0
        await settled(m)
        assert not [c for c in calls(m, at) if c[0] == "object.content.save"]
        ok, done = await call(client, "slfs_push", src=str(src), dest="Site")
        assert ok, done
        await settled(m)
        assert inworld(m, A).content == lsl("from-mcp")
        # A compile error: a tool error naming the local file, rolled back.
        (src / "A.lsl").write_text("default\n{\n    syntax error\n}\n")
        ok, text = await call(client, "slfs_push", src=str(src), dest="Site")
        assert not ok and "rolled back" in text and f"{src}/A.lsl:3:" in text, text
        await settled(m)
        assert inworld(m, A).content == lsl("from-mcp")
        ok, text = await call(client, "slfs_push", src="relative/dir", dest="Site", plan=True)
        assert not ok and "absolute path" in text
        ok, text = await call(client, "slfs_push", src=str(Path.home()), dest="Site", plan=True)
        assert not ok and "outside the directory this server runs in" in text
        local = tmp_path / "local"
        ok, pulled = await call(client, "slfs_pull", object="Site", local_dir=str(local))
        assert ok, pulled
        assert (local / "A.lsl").read_text() == lsl("from-mcp") and pulled["exit"] == 0
        assert {i["path"] for i in pulled["items"]} >= {"A.lsl", "B.lsl", "C.luau", "Readme"}


@pytest.mark.allow_log(r"this viewer cannot do that")  # G1: no set_running
async def test_watch_with_exec_pushes_on_each_edit_and_skips_a_failing_build(mount_factory: MountFactory,
                                                                             tmp_path: Path) -> None:
    m = await push_mount(mount_factory)
    proj = tmp_path / "proj"  # the build's directory: its sources and its output, nothing else
    work = proj / "work"
    work.mkdir(parents=True)
    (work / "A.lsl").write_text(lsl("a"))
    make_src(proj / "src", site_files())
    # The build copies work/A.lsl into the tree (no shell: cp's own arguments).
    argv = [sys.executable, "-m", "slfs", "push", "--watch", "--exec", "cp work/A.lsl src/A.lsl",
            "--delay", "0.2", "src", str(m.path("Site"))]
    proc = await trio.lowlevel.open_process(argv, env=m.env, cwd=str(proj), stderr=subprocess.PIPE)
    assert proc.stderr is not None
    err = bytearray()

    async def read_err() -> None:
        assert proc.stderr is not None
        async for chunk in proc.stderr:
            err.extend(chunk)

    async def holds(text: str) -> bool:
        return inworld(m, A).content == text

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_err)
            await m.wait_for(lambda: _asaid(err, b"watching"), 20, "the watcher started")
            at = mark(m)
            await trio.to_thread.run_sync((work / "A.lsl").write_text, lsl("edit1"))
            await m.wait_for(lambda: holds(lsl("edit1")), 20, "the first edit pushed")
            await trio.to_thread.run_sync((work / "A.lsl").write_text, lsl("edit2"))
            await m.wait_for(lambda: holds(lsl("edit2")), 20, "the second edit pushed")
            saves = [p for meth, p in calls(m, at, ("object.content.save",)) if p.get("item_id") == A]
            assert len(saves) == 2
            # A failing build (its input gone) skips that push.
            await trio.to_thread.run_sync((work / "A.lsl").unlink)
            await m.wait_for(lambda: _asaid(err, b"failed with exit status"), 20, "the failing build reported")
            await settled(m)
            assert inworld(m, A).content == lsl("edit2")
            assert "N" not in names(m)
            proc.send_signal(signal.SIGINT)
            with trio.fail_after(20):
                rc = await proc.wait()
            nursery.cancel_scope.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
    text = bytes(err).decode()
    assert rc == 0, text
    # Two edits and the failing build: three rounds, no more (the build's own copies push nothing).
    assert text.count("pushing again") == 3, text


async def _asaid(buf: bytearray, what: bytes) -> bool:
    return what in buf
