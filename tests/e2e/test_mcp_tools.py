"""`slfs mcp`'s tools, driven by the MCP SDK's own client over memory streams (the JSON-RPC
handshake and framing of a real session) against a real mount on the simulator: every tool, its
schema, its errors, hostile arguments and cancellation."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from mcp import Client
from mcp.types import CallToolResult
from support.mount import Mount

from slfs.client import waits
from slfs.mcp.server import build_server
from slfs.mcp.tools import NAMES

pytestmark = pytest.mark.generations

CUBE = "Hello Cube"
NOTES = "Notes\u2215Todo"  # the notecard "Notes/Todo"
BAD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("oops" @);\n    }\n}\n'
GOOD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("%s");\n    }\n}\n'


@asynccontextmanager
async def session(m: Mount, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> AsyncIterator[Client]:
    """An MCP session with a server for the mount `m` (found in its registry, as `slfs mcp` finds it)."""
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(key, m.env[key])
    async with Client(build_server(**kw), mode="legacy") as client:
        yield client


async def call(client: Client, name: str, **args: Any) -> dict[str, Any]:
    res = await client.call_tool(name, args)
    assert not res.is_error, f"{name}({args}): {res.content}"
    assert res.structured_content is not None and res.content
    return res.structured_content


async def refused(client: Client, name: str, **args: Any) -> str:
    res: CallToolResult = await client.call_tool(name, args)
    assert res.is_error, f"{name}({args}) was not refused: {res.structured_content}"
    text = res.content[0].text  # type: ignore[union-attr]
    assert isinstance(text, str)
    return text


async def test_tools_and_schemas(mounted: Mount, monkeypatch: pytest.MonkeyPatch) -> None:
    async with session(mounted, monkeypatch) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == sorted(NAMES)
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40, tool.name
            assert tool.input_schema["type"] == "object"
        write = tools["slfs_write"].input_schema
        assert write["required"] == ["path", "text"]
        assert write["properties"]["tail_s"]["default"] == 1.5 and write["properties"]["tail_s"]["maximum"] == 10
        assert "description" in write["properties"]["path"]
        assert tools["slfs_read"].annotations.read_only_hint  # type: ignore[union-attr]
        assert tools["slfs_delete"].annotations.destructive_hint  # type: ignore[union-attr]


async def test_worked_session(mounted: Mount, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's session: list, read, write a broken script, see the diagnostics, fix it, see the
    compile and the runtime output."""
    m = mounted
    async with session(m, monkeypatch) as client:
        status = await call(client, "slfs_status")
        assert status["state"] == "connected" and status["objects"] == 6 and status["mount"] == str(m.mnt)
        assert isinstance(status["cursor"], int)
        # G1 announces neither commands nor unified diagnostics (viewer-source.md §1); the others all five
        assert status["viewer_generation"].startswith("G0/G1" if m.generation == "G1" else "G2-G4"), status
        assert "live_sync" in status["viewer_features"]

        objects = await call(client, "slfs_list")
        assert {e["name"]: e["kind"] for e in objects["entries"]}[CUBE] == "object"
        cube = {e["name"]: e for e in (await call(client, "slfs_list", path=CUBE))["entries"]}
        hello = cube["Hello.lsl"]
        assert hello["path"] == f"{CUBE}/Hello.lsl" and hello["kind"] == "script" and hello["language"] == "lsl"
        assert hello["permissions"]["modify"] and hello["state"] in ("running", "stopped")
        assert cube["Counter.luau"]["language"] == "luau"
        assert cube[NOTES]["kind"] == "notecard" and "running" not in cube[NOTES]
        every = await call(client, "slfs_list", recursive=True)
        assert any(e["path"] == f"{CUBE}/Hello.lsl" for e in every["entries"])

        shown = await m.thread(m.path(CUBE, "Hello.lsl").read_text)
        assert (await call(client, "slfs_read", path=f"{CUBE}/Hello.lsl"))["text"] == shown
        assert (await call(client, "slfs_read", path=f"{CUBE}/Hello.lsl", inworld=True))["text"] == shown

        bad = await call(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text=BAD_LSL)
        assert bad["compiled"] is False and bad["kind"] == "script"
        assert [(d["path"], d["row"], d["level"]) for d in bad["diagnostics"]] == [(f"{CUBE}/Hello.lsl", 5, "error")]
        diags = await call(client, "slfs_diagnostics", path=CUBE)
        assert any(d["path"] == f"{CUBE}/Hello.lsl" and d["row"] == 5 for d in diags["diagnostics"])
        assert diags["errors"] >= 1 and diags["notes"][0].startswith(f"{CUBE}/Hello.lsl: the compile failed")

        good = await call(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text=GOOD_LSL % "fixed by an agent",
                          tail_s=5)
        assert good["compiled"] is True and good["diagnostics"] == []
        assert await m.thread(m.path(CUBE, "Hello.lsl").read_text) == GOOD_LSL % "fixed by an agent"
        logs = await call(client, "slfs_logs", path=CUBE, since=bad["cursor"])
        assert logs["cursor"] >= good["cursor"]
        said = [e.get("message") for e in good["runtime"]]
        if m.generation == "G1":
            # G1 forwards runtime output only for a prim with a live-sync subscription (viewer-source.md §4)
            assert said == [] and logs["events"] == []
        else:
            assert "fixed by an agent" in said, good
            assert "fixed by an agent" in [e.get("message") for e in logs["events"]]

        # a save from an old read: refused with if_match once someone else saved meanwhile
        read = await call(client, "slfs_read", path=f"{CUBE}/Hello.lsl")
        await m.thread(m.path(CUBE, "Hello.lsl").write_text, GOOD_LSL % "someone else")
        text = await refused(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text=GOOD_LSL % "stale",
                             if_match=read["sha256"])
        assert "ESTALE" in text and "re-read first" in text
        assert await m.thread(m.path(CUBE, "Hello.lsl").read_text) == GOOD_LSL % "someone else"
        fresh = await call(client, "slfs_read", path=f"{CUBE}/Hello.lsl")
        assert (await call(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text=GOOD_LSL % "fresh", tail_s=0,
                           if_match=fresh["sha256"]))["compiled"] is True

        made = await call(client, "slfs_write", path=f"{CUBE}/Agent Notes", text="hello\n", create=True)
        assert made["kind"] == "notecard" and made["created"] and made["compiled"] is None
        assert await m.thread(m.path(CUBE, "Agent Notes").read_text) == "hello\n"
        text = await refused(client, "slfs_write", path=f"{CUBE}/Agent Notes", text="again", create=True)
        assert "already exists" in text
        assert "no such item" in await refused(client, "slfs_write", path=f"{CUBE}/Nope.lsl", text="x")


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: stop Hello")
async def test_state_rename_delete(mounted: Mount, monkeypatch: pytest.MonkeyPatch) -> None:
    m = mounted
    async with session(m, monkeypatch) as client:
        if m.generation == "G1":
            text = await refused(client, "slfs_set_running", path=f"{CUBE}/Hello.lsl", on=False)
            assert "does not support that" in text and text.count("Hello Cube/Hello.lsl") == 1, text
        else:
            assert (await call(client, "slfs_set_running", path=f"{CUBE}/Hello.lsl", on=False))["state"] == "stopped"
            assert (await call(client, "slfs_set_running", path=f"{CUBE}/Hello.lsl", on=True))["state"] == "running"
            assert (await call(client, "slfs_reset", path=f"{CUBE}/Hello.lsl"))["path"] == f"{CUBE}/Hello.lsl"
        assert "not a script" in await refused(client, "slfs_reset", path=f"{CUBE}/{NOTES}")

        await call(client, "slfs_write", path=f"{CUBE}/Scratch.lsl", text=GOOD_LSL % "scratch", create=True)
        moved = await call(client, "slfs_rename", path=f"{CUBE}/Scratch.lsl", new_name="Renamed.lsl")
        assert moved["path"] == f"{CUBE}/Renamed.lsl"
        assert await m.thread(os.path.exists, m.path(CUBE, "Renamed.lsl"))
        assert not await m.thread(os.path.exists, m.path(CUBE, "Scratch.lsl"))
        assert "already exists" in await refused(client, "slfs_rename", path=f"{CUBE}/Renamed.lsl",
                                                 new_name="Hello.lsl")
        assert "not a path" in await refused(client, "slfs_rename", path=f"{CUBE}/Renamed.lsl", new_name="../x.lsl")
        gone = await call(client, "slfs_delete", path=f"{CUBE}/Renamed.lsl")
        assert gone["deleted"] and not await m.thread(os.path.exists, m.path(CUBE, "Renamed.lsl"))
        assert "EISDIR" in await refused(client, "slfs_delete", path=CUBE)

        built = await call(client, "slfs_build", path=CUBE)
        assert built["failed"] == 0

        if m.generation == "G1":
            assert "does not support that" in await refused(client, "slfs_command",
                                                            command="viewer.script.reset_all", object=CUBE)
        else:
            out = await call(client, "slfs_command", command="viewer.script.reset_all", object=CUBE)
            assert out["command"] == "viewer.script.reset_all"
            assert "does not offer" in await refused(client, "slfs_command", command="no.such.command")


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: open: No Modify")
async def test_hostile_arguments(mounted: Mount, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    m = mounted
    async with session(m, monkeypatch) as client:
        for path in ("/etc/passwd", str(m.path(CUBE, "Hello.lsl")), "~/x", f"{CUBE}/../../etc/passwd", ".."):
            text = await refused(client, "slfs_read", path=path)
            assert "EPERM" in text and ("relative" in text or "'..'" in text), text
        assert "EPERM" in await refused(client, "slfs_write", path="/tmp/x.lsl", text="x", create=True)
        # a symlink in the overlay (a dot name lives there) that points outside the mount
        outside = tmp_path / "secret"
        outside.write_text("not yours")
        await m.thread(os.symlink, str(outside), str(m.path(CUBE, ".link")))
        assert "symbolic link" in await refused(client, "slfs_read", path=f"{CUBE}/.link")
        assert "symbolic link" in await refused(client, "slfs_write", path=f"{CUBE}/.link", text="x")
        assert outside.read_text() == "not yours"
        # the mount's own by-id links are followed: they stay inside
        cube_id = (await call(client, "slfs_list"))["entries"]
        uuid = next(e["uuid"] for e in cube_id if e["name"] == CUBE)
        by_id = await call(client, "slfs_read", path=f".slfs/by-id/{uuid}/Hello.lsl")
        assert by_id["text"] == await m.thread(m.path(CUBE, "Hello.lsl").read_text)
        assert "control files" in await refused(client, "slfs_write", path=f"{CUBE}/.slfs/Hello.lsl.state", text="run")

        huge = "x" * (16 << 20)
        text = await refused(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text=huge)
        assert "EFBIG" in text and "262144" in text
        assert "EFBIG" in await refused(client, "slfs_write", path=f"{CUBE}/{NOTES}", text="y" * 70000)
        assert "NUL" in await refused(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text="default {\x00}")
        assert "NUL" in await refused(client, "slfs_read", path=f"{CUBE}/Hello\x00.lsl")
        assert "Unknown tool" in await refused(client, "slfs_format_disk")
        assert "ENOENT" in await refused(client, "slfs_read", path=f"{CUBE}/Nope.lsl")
        text = await refused(client, "slfs_write", path="No Modify Object/Info", text="changed")
        assert "no modify permission" in text, text
        await refused(client, "slfs_wait", since=-1)  # schema: a cursor is >= 0
        await refused(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text="x", tail_s=1e9)
        assert (await call(client, "slfs_status"))["state"] == "connected"  # the server is still there


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: (lookup|flush): .*not connected to the viewer",
                       r"^WARNING slfs\.model\.workspace: (saving .* failed|daemon stopped before it was saved)")
@pytest.mark.own_mount("stops the viewer")
async def test_viewer_away(mounted: Mount, monkeypatch: pytest.MonkeyPatch) -> None:
    m = mounted
    async with session(m, monkeypatch) as client:
        before = await call(client, "slfs_read", path=f"{CUBE}/Hello.lsl")
        m.stop_sim()

        async def away() -> bool:
            return (await m.status()).get("state") != "connected"
        await m.wait_for(away, 15, "the mount sees the viewer gone")
        status = await call(client, "slfs_status")
        assert status["state"] != "connected"
        with trio.fail_after(60):
            text = await refused(client, "slfs_write", path=f"{CUBE}/Hello.lsl", text=GOOD_LSL % "offline")
        assert "EIO" in text or "ETIMEDOUT" in text or "EAGAIN" in text, text
        # the mount still reads (a failed save stays in the file's buffer, as for any program, and
        # in the recovery folder); the server answers on
        shown = await m.thread(m.path(CUBE, "Hello.lsl").read_text)
        assert shown != before["text"]
        assert (await call(client, "slfs_read", path=f"{CUBE}/Hello.lsl"))["text"] == shown
        # what was never fetched needs the viewer: a clear error, not a hang
        assert "EIO" in await refused(client, "slfs_read", path=f"{CUBE}/Counter.luau")
        assert (await call(client, "slfs_logs"))["cursor"] >= status["cursor"]


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: deleting Hello")
async def test_wait_and_cancel(mounted: Mount, monkeypatch: pytest.MonkeyPatch) -> None:
    m = mounted
    cancelled: list[bool] = []
    real_cancel = waits.EventWait.cancel

    def spy(self: waits.EventWait) -> None:
        cancelled.append(True)
        real_cancel(self)

    monkeypatch.setattr(waits.EventWait, "cancel", spy)
    async with session(m, monkeypatch) as client:
        cursor = (await call(client, "slfs_status"))["cursor"]
        nothing = await call(client, "slfs_wait", since=cursor, timeout_s=0.5, path="House")
        assert nothing["events"] == [] and nothing["timed_out"]

        # a wait the client cancels (notifications/cancelled) ends on the server at once
        start = trio.current_time()
        with trio.move_on_after(1.0):
            await client.call_tool("slfs_wait", {"since": cursor, "timeout_s": 120, "path": "House"})
        for _ in range(100):
            if cancelled:
                break
            await trio.sleep(0.05)
        assert cancelled, "the server's wait was not cancelled"
        assert trio.current_time() - start < 10
        assert (await call(client, "slfs_status"))["state"] == "connected"

        # a save's runtime window is cancellable too; the save itself is done by then
        cancelled.clear()
        with trio.move_on_after(3.0):
            await client.call_tool("slfs_write", {"path": f"{CUBE}/Hello.lsl", "text": GOOD_LSL % "cut short",
                                                  "tail_s": 10})
        for _ in range(100):
            if cancelled:
                break
            await trio.sleep(0.05)
        assert cancelled, "the save's runtime window was not cancelled"
        assert await m.thread(m.path(CUBE, "Hello.lsl").read_text) == GOOD_LSL % "cut short"

        # the next compile after the cursor
        async def save() -> None:
            await trio.sleep(0.3)  # the scenario: the compile comes while the wait is already waiting
            await m.thread(m.path(CUBE, "Hello.lsl").write_text, GOOD_LSL % "waited for")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(save)
            got = await call(client, "slfs_wait", since=cursor, timeout_s=30, path=CUBE)
        assert got["events"] and got["events"][0]["type"] in ("compile", "runtime.debug")
        assert got["cursor"] > cursor


async def test_no_mount(mounted: Mount, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    empty = tmp_path / "norun"
    empty.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(empty))
    async with Client(build_server(), mode="legacy") as client:
        text = await refused(client, "slfs_status")
        assert "no slfs mount is running" in text and "slfs mount ~/sl" in text
    monkeypatch.setenv("XDG_RUNTIME_DIR", mounted.env["XDG_RUNTIME_DIR"])
    async with Client(build_server(str(tmp_path)), mode="legacy") as client:
        assert "not an slfs mount" in await refused(client, "slfs_status")
