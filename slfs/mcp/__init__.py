"""`slfs mcp`: a running mount as a Model Context Protocol server on stdio, for coding agents.

server.py builds the server (tools, resources) and runs it; tools.py holds the tools, each a thin
call into the client layer (slfs/client), as the CLI verbs are; confine.py checks every path an
agent names; calls.py bounds each blocking call and makes long waits cancellable; results.py turns
answers and errors into MCP results (structured content and a short text, or a tool error).
"""
