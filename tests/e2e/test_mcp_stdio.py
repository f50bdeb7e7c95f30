"""A real `slfs mcp` session: the verb as a subprocess on stdio, driven by the MCP SDK's stdio
client, against a real mount on the simulator (as an agent's client runs it from contrib/mcp/)."""

from __future__ import annotations

import os
import sys
from typing import Any

import trio
from mcp import Client, StdioServerParameters
from support.mount import Mount, MountFactory, force_unmount, is_mounted

from slfs.mcp.tools import NAMES

CUBE = "Hello Cube"
BAD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("oops" @);\n    }\n}\n'
GOOD_LSL = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("%s");\n    }\n}\n'


def stdio(m: Mount, *args: str, env: dict[str, str] | None = None) -> Client:
    params = StdioServerParameters(command=sys.executable, args=["-m", "slfs", "mcp", *args],
                                   env={**m.env, **(env or {})})
    return Client(params, mode="legacy")


def text(res: Any) -> str:
    return str(res.content[0].text)


async def test_stdio_session(mounted: Mount) -> None:
    m = mounted
    with trio.fail_after(90):
        async with stdio(m, "--mount", str(m.mnt)) as client:
            assert client.server_info is not None and client.server_info.name == "slfs"
            assert sorted(t.name for t in (await client.list_tools()).tools) == sorted(NAMES)
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == ["slfs://{+path}"]

            status = await client.call_tool("slfs_status", {})
            assert not status.is_error and status.structured_content["state"] == "connected"  # type: ignore[index]

            bad = await client.call_tool("slfs_write", {"path": f"{CUBE}/Hello.lsl", "text": BAD_LSL})
            assert not bad.is_error and bad.structured_content["compiled"] is False  # type: ignore[index]
            assert "Hello Cube/Hello.lsl:5:27: error" in text(bad)
            good = await client.call_tool("slfs_write", {"path": f"{CUBE}/Hello.lsl", "text": GOOD_LSL % "stdio",
                                                         "tail_s": 5})
            assert good.structured_content["compiled"] is True, text(good)  # type: ignore[index]
            assert "runtime: stdio" in text(good)

            # hostile calls over the wire: each a tool error, the server stays
            huge = await client.call_tool("slfs_write", {"path": f"{CUBE}/Hello.lsl", "text": "x" * (16 << 20)})
            assert huge.is_error and "EFBIG" in text(huge)
            assert (await client.call_tool("slfs_nope", {})).is_error
            outside = await client.call_tool("slfs_read", {"path": "../../etc/passwd"})
            assert outside.is_error and "EPERM" in text(outside)
            nul = await client.call_tool("slfs_write", {"path": f"{CUBE}/Hello.lsl", "text": "a\x00b"})
            assert nul.is_error and "NUL" in text(nul)

            res = await client.read_resource(f"slfs://{CUBE.replace(' ', '%20')}/Hello.lsl")
            assert res.contents[0].text == GOOD_LSL % "stdio"  # type: ignore[union-attr]
            diag = await client.read_resource("slfs://diagnostics")
            assert diag.contents[0].text == ""  # type: ignore[union-attr]  # the fix left no diagnostic
            again = await client.call_tool("slfs_status", {})
            assert not again.is_error


async def test_stdio_auto_mount_hint(mounted: Mount, tmp_path: Any) -> None:
    """No mount running: the server starts anyway and each call says how to start one."""
    empty = tmp_path / "norun"
    empty.mkdir(mode=0o700)
    with trio.fail_after(60):
        async with stdio(mounted, env={"XDG_RUNTIME_DIR": str(empty)}) as client:
            res = await client.call_tool("slfs_list", {})
            assert res.is_error and "slfs mount ~/sl" in text(res) and "--auto-mount" in text(res)


async def test_stdio_auto_mount(mount_factory: MountFactory, tmp_path: Any) -> None:
    """--auto-mount with no mount running: ~/sl is mounted for the default viewer port
    ($SLFS_PORT), as `slfs edit` does, and the tools use it."""
    m = await mount_factory(start=False)  # the viewer, and no mount of it
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "SLFS_PORT": str(m.port)}
    sl = home / "sl"
    try:
        with trio.fail_after(90):
            async with stdio(m, "--auto-mount", env=env) as client:
                status = await client.call_tool("slfs_status", {})
                assert not status.is_error, text(status)
                data = status.structured_content
                assert data is not None and data["state"] == "connected"
                assert data["mount"] == os.path.realpath(sl) and data["endpoint"] == f"127.0.0.1:{m.port}"
                listed = await client.call_tool("slfs_list", {})
                assert not listed.is_error, text(listed)
            assert is_mounted(sl)  # the mount outlives the session, as slfs edit's does
    finally:
        await m.run(sys.executable, "-m", "slfs", "umount", sl, check=False, timeout=30)
        await trio.to_thread.run_sync(force_unmount, sl)
    assert not is_mounted(sl)
