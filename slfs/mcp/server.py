"""The MCP server: the `slfs_*` tools (tools.py) and the resources, on stdio (`slfs mcp`)."""

from __future__ import annotations

import inspect
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from mcp.types import Tool as MCPTool

from .. import __version__
from .arguments import closed, problems
from .resources import add_resources
from .tools import NAMES, Tools, tool_annotations

INSTRUCTIONS = """\
slfs mounts what the Second Life viewer publishes: each object is a folder, each child prim a
subfolder 'Name@1a2b3c4d', each script a .lsl or .luau file, each notecard a file. Paths are
relative to the mount. To fix a script: slfs_list, slfs_read, slfs_write (it returns the compile
verdict with diagnostics and the runtime output that follows), then slfs_logs or slfs_wait with the
returned cursor for later output."""


class StrictServer(MCPServer):
    """The SDK's server, with each tool's arguments validated strictly against the schema the tool
    declares (arguments.py) before it runs: a wrong type is a tool error naming the argument."""

    async def list_tools(self) -> list[MCPTool]:
        return [t.model_copy(update={"input_schema": closed(t.input_schema)}) for t in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
                        ) -> CallToolResult | InputRequiredResult:
        schema = next((t.input_schema for t in await self.list_tools() if t.name == name), None)
        if schema is not None:
            wrong = problems(schema, arguments)
            if wrong:
                raise ToolError(f"{name}: " + "; ".join(wrong))
        return await super().call_tool(name, arguments, context)


def build_server(mount: str | None = None, auto_mount: bool = False) -> MCPServer:
    tools = Tools(mount, auto_mount)
    server: MCPServer = StrictServer(name="slfs", title="slfs: the Second Life viewer's objects", version=__version__,
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
