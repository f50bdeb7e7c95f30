"""Resources: each item's text as `slfs://OBJECT/PRIM/ITEM` (the mount-relative path, as for the
tools), and the root diagnostics as `slfs://diagnostics` (`MOUNT/.slfs/diagnostics`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from ..client import files as client_files
from .calls import blocking
from .confine import confine

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from .tools import Tools


def add_resources(server: MCPServer, tools: Tools) -> None:
    async def read(path: str) -> str:
        try:
            client = await tools.client()
            full = await blocking(confine, client.mountpoint, path, what=path, mountpoint=client.mountpoint)
            text, _cut = await blocking(client_files.read_text, full, what=f"read {path}",
                                        mountpoint=client.mountpoint)
        except ToolError as exc:
            raise ResourceError(str(exc)) from None
        return text

    @server.resource("slfs://diagnostics", name="diagnostics", mime_type="text/plain",
                     description="every current compile diagnostic of the mount, one "
                                 "'PATH:ROW:COL: LEVEL: MESSAGE' line each")
    async def diagnostics() -> str:
        return await read(".slfs/diagnostics")

    @server.resource("slfs://{+path}", name="item", mime_type="text/plain",
                     description="an item's text, by its path relative to the mount: "
                                 "slfs://OBJECT/PRIM/ITEM, e.g. slfs://Hello%20Cube/Hello.lsl")
    async def item(path: str) -> str:
        return await read(path)
