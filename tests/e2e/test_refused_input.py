"""Input the mount must refuse without dying or hanging (issue 33): JSON nested too deeply on the
control socket, from the viewer and on `slfs mcp`'s stdin; tool arguments of the wrong type; a Wine
viewer's `editor.open_file` of a file in the mount itself (a lookup through our own mount from the
daemon's thread would wait on itself); and slfs_delete naming the daemon's own trash."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from mcp import Client
from support.mount import Mount, MountFactory
from support.writes import sim_of

from slfs.mcp.server import build_server

CUBE = "Hello Cube"
DEEP = 100_000  # levels: far past the interpreter's recursion limit


class Raw:
    """A bare NDJSON connection to the mount's control socket (blocking; use from a worker thread)."""

    def __init__(self, m: Mount) -> None:
        [entry] = (Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts").glob("*.json")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(json.loads(entry.read_text())["socket"])
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "the daemon closed the control connection"
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return dict(json.loads(line))


def deep_array(levels: int) -> str:
    return "[" * levels + "]" * levels


async def alive(m: Mount) -> None:
    """The mount answers: a stat of an object folder, and the status file read through the mount."""
    assert (await m.thread(os.stat, m.path(CUBE))).st_ino
    assert (await m.status())["state"] == "connected"


async def test_control_socket_answers_a_deep_line_as_a_parse_error(mounted: Mount) -> None:
    m = mounted
    r = await m.thread(Raw, m)
    try:
        assert (await m.thread(r.frame))["type"] == "ready"
        await m.thread(r.send, deep_array(DEEP).encode() + b"\n")
        answer = await m.thread(r.frame)
        assert answer["command"] == "parse" and answer["success"] is False, answer
        assert "nested too deeply" in answer["error"]
        # the same connection answers the next request
        await m.thread(r.send, b'{"type":"status","id":"after"}\n')
        answer = await m.thread(r.frame)
        assert answer["id"] == "after" and answer["success"] is True
        # parseable, but too deep to pass on to the viewer: a bad request naming the field
        params = json.loads(deep_array(100))
        await m.thread(r.send, json.dumps({"type": "viewer_command", "id": 3, "command": "viewer.script.reset_all",
                                           "params": {"deep": params}}).encode() + b"\n")
        answer = await m.thread(r.frame)
        assert answer["id"] == 3 and answer["code"] == "EINVAL", answer
        assert "nested deeper than 32 levels" in answer["error"] and "params" in answer["error"]
    finally:
        r.sock.close()
    await alive(m)


@pytest.mark.allow_log(r"^WARNING slfs\.session\.connection: ignoring an invalid frame from")
@pytest.mark.generations
async def test_a_deep_frame_from_the_viewer_is_an_ignored_frame(mounted: Mount) -> None:
    m = mounted
    sim = sim_of(m)
    assert await sim.send_raw(deep_array(DEEP)) == 1
    assert await sim.send_raw('{"jsonrpc":"2.0","method":"object.update","params":' + deep_array(DEEP) + "}") == 1
    # parseable at the reader's depth or not, a deep unknown field is no crash either
    deep = json.loads(deep_array(500))
    note = {"jsonrpc": "2.0", "method": "runtime.debug", "params": {"object_id": "x", "message": "hi", "odd": deep}}
    assert await sim.send_raw(json.dumps(note)) == 1

    async def logged() -> bool:
        return m.log_text().count("nested too deeply") >= 2

    await m.wait_for(logged, 10, "the deep frames logged as invalid")
    await alive(m)
    assert "ignoring an invalid frame from the viewer: invalid JSON (nested too deeply)" in m.log_text()
    # the connection was kept: the same session reads on
    assert await m.read_bytes(CUBE, "Hello.lsl")


async def test_mcp_stdin_with_a_deep_line_answers_the_next_request(mounted: Mount) -> None:
    m = mounted
    proc = await trio.lowlevel.open_process([sys.executable, "-m", "slfs", "mcp", "--mount", str(m.mnt)],
                                            stdin=-1, stdout=-1, env=m.env)
    assert proc.stdin is not None and proc.stdout is not None
    buf = b""

    async def answer(rid: int) -> dict[str, Any]:
        nonlocal buf
        while True:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                frame = json.loads(line)
                if frame.get("id") == rid:
                    return dict(frame)
            chunk = await proc.stdout.receive_some(65536)  # type: ignore[union-attr]
            assert chunk, "slfs mcp closed its stdout"
            buf += chunk

    async def send(frame: dict[str, Any] | str) -> None:
        text = frame if isinstance(frame, str) else json.dumps(frame)
        await proc.stdin.send_all(text.encode() + b"\n")  # type: ignore[union-attr]

    try:
        with trio.fail_after(60):
            await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
            assert "result" in await answer(1)
            await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await send(deep_array(DEEP))
            await send('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slfs_status","arguments":'
                       + deep_array(DEEP) + "}}")
            await send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "slfs_status", "arguments": {}}})
            status = await answer(2)
            assert status["result"]["isError"] is False, status
            assert proc.returncode is None
    finally:
        proc.kill()
        await proc.wait()


@pytest.mark.generations
async def test_mcp_tool_arguments_are_checked_against_their_schemas(mounted: Mount,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    m = mounted
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME"):
        monkeypatch.setenv(key, m.env[key])
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "not-the-daemons"))  # this server's own, unused
    hello = f"{CUBE}/Hello.lsl"
    async with Client(build_server(), mode="legacy") as client:

        async def refused(name: str, args: dict[str, Any]) -> str:
            res = await client.call_tool(name, args)
            assert res.is_error, f"{name}({args}) was not refused: {res.structured_content}"
            return str(res.content[0].text)  # type: ignore[union-attr]

        if m.generation != "G1":  # G1 has no running flag to set
            stopped = await client.call_tool("slfs_set_running", {"path": hello, "on": False})
            assert not stopped.is_error and stopped.structured_content["state"] == "stopped"  # type: ignore[index]
        text = await refused("slfs_set_running", {"path": hello, "on": "yes"})
        assert text == "slfs_set_running: argument 'on' must be true or false, not string", text
        assert "argument 'tail_s' must be a number, not string" in await refused(
            "slfs_write", {"path": hello, "text": "x", "tail_s": "0"})
        assert "argument 'recursive' must be true or false, not integer" in await refused(
            "slfs_list", {"recursive": 1})
        assert "argument 'since' must be an integer, not boolean" in await refused("slfs_logs", {"since": True})
        assert "unknown argument 'recurse'" in await refused("slfs_list", {"recurse": True})
        assert "missing argument 'path'" in await refused("slfs_read", {})
        if m.generation != "G1":
            # nothing was started by the refused call
            listing = (await client.call_tool("slfs_list", {"path": CUBE})).structured_content
            entry = next(e for e in listing["entries"] if e["name"] == "Hello.lsl")  # type: ignore[index]
            assert entry["running"] is False, entry
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert all(t.input_schema.get("additionalProperties") is False for t in tools.values())

        # slfs_delete names the daemon's trash, not one from this server's environment
        await m.thread(m.path(CUBE, "Doomed").write_text, "a notecard\n")
        gone = await client.call_tool("slfs_delete", {"path": f"{CUBE}/Doomed"})
        assert not gone.is_error, gone.content
        trash = os.path.join(m.env["XDG_DATA_HOME"], "slfs", "trash")
        assert gone.structured_content["trash"] == trash, gone.structured_content  # type: ignore[index]
        assert f"a copy is in {trash}" in gone.content[0].text  # type: ignore[union-attr]
        assert (await m.status())["trash"] == trash


@pytest.mark.viewer(1, reason="the Windows path mode names its generation itself")
async def test_wine_viewer_opening_a_file_of_the_mount_is_answered_at_once(mount_factory: MountFactory,
                                                                           tmp_path: Path) -> None:
    prefix = tmp_path / "wineprefix"
    (prefix / "dosdevices").mkdir(parents=True)  # the sim adds c: and z: (-> /), as Wine's first run does
    m = await mount_factory(sim_kwargs={"windows_paths": "wine", "wine_prefix": prefix},
                            options=["windows_paths=wine", f"wine_prefix={prefix}"])
    sim = sim_of(m)
    hello = await m.thread(os.path.realpath, m.path(CUBE, "Hello.lsl"))
    # Z: is the Unix root; the mount's part in another case (Windows ignores it), so a translation that
    # looked through the mount would list its folders, from the daemon's own thread.
    windows = "Z:" + str(m.mnt).replace("/", "\\") + "\\HELLO CUBE\\hello.LSL"
    with trio.fail_after(1):
        (resp,) = await sim.execute_on_clients("editor.open_file", {"path": windows, "line": 3})
    assert resp.error is None, resp.error
    with trio.fail_after(5):
        await alive(m)

    async def opened() -> bool:
        text = (await m.read_bytes(".slfs", "events")).decode()
        return any(e["type"] == "viewer.open_file" and e.get("opened") == hello
                   for e in (json.loads(x) for x in text.splitlines() if x.strip()))

    await m.wait_for(opened, 10, "the open_file event naming the mount's file")
