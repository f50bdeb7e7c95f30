"""The MCP server: the `slfs_*` tools (tools.py) and the resources, on stdio (`slfs mcp`)."""

from __future__ import annotations

import inspect

from mcp.server.mcpserver import MCPServer

from .. import __version__
from .resources import add_resources
from .tools import NAMES, Tools, tool_annotations

INSTRUCTIONS = """\
slfs mounts what the Second Life viewer publishes: each object is a folder, each child prim a
subfolder 'Name@1a2b3c4d', each script a .lsl or .luau file, each notecard a file. Paths are
relative to the mount. To fix a script: slfs_list, slfs_read, slfs_write (it returns the compile
verdict with diagnostics and the runtime output that follows), then slfs_logs or slfs_wait with the
returned cursor for later output."""


def build_server(mount: str | None = None, auto_mount: bool = False) -> MCPServer:
    tools = Tools(mount, auto_mount)
    server: MCPServer = MCPServer(name="slfs", title="slfs: the Second Life viewer's objects", version=__version__,
                                  instructions=INSTRUCTIONS, log_level="WARNING")
    for name in NAMES:
        fn = getattr(tools, name)
        server.add_tool(fn, name=name, description=inspect.cleandoc(fn.__doc__ or ""),
                        annotations=tool_annotations(name), structured_output=False)
    add_resources(server, tools)
    return server


def run_stdio(mount: str | None = None, auto_mount: bool = False) -> int:
    import anyio

    server = build_server(mount, auto_mount)
    anyio.run(server.run_stdio_async)
    return 0
