"""Tool results: structured content with a short text beside it, and tool errors that say what
the errno means for an agent (never a crashed server). Paths in answers are made mount-relative,
as agents name them."""

from __future__ import annotations

import json
import re
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from ..client import ClientError
from ..protocol.text import printable
from .confine import relative

# What each errno name means to an agent that gets it back from a tool.
MEANINGS = {
    "EACCES": "no modify permission on this item or its prim, or no permission to read it",
    "EPERM": "not allowed here",
    "ESTALE": "changed in-world since you read it; re-read first",
    "ENOENT": "no such object, prim or item",
    "EEXIST": "already exists",
    "EISDIR": "a folder, not an item",
    "ENOTDIR": "not a folder",
    "EINVAL": "invalid argument",
    "EFBIG": "too large for an item (scripts hold 262,144 bytes, notecards 65,536)",
    "ENAMETOOLONG": "name too long (in-world names hold at most 63 bytes)",
    "EILSEQ": "not valid text, or a name the viewer cannot hold (in-world names are printable ASCII)",
    "EXDEV": "items move only within their prim and keep their kind",
    "EIO": "the viewer refused it or is away (slfs_status says which)",
    "ETIMEDOUT": "the viewer did not answer in time",
    "EAGAIN": "the region is not available right now; try again",
    "ENOSPC": "no space left for the trash or recovery copy",
    "EOPNOTSUPP": "this viewer does not support that",
    "ENOTSUP": "this viewer does not support that",
    "ECONNREFUSED": "the mount's daemon is not answering (is the mount running?)",
    "ECONNRESET": "the mount's daemon went away",
    "ESHUTDOWN": "the mount is shutting down",
}

# A script's file name in a message (an error on a notecard never speaks of scripts).
SCRIPT_NAME = re.compile(r"\.(lsl|luau)(?=[:\s,)]|$)")


def fail(exc: ClientError, mountpoint: str | None = None) -> ToolError:
    """A ClientError as the tool error an agent reads: the reason, then the errno and its meaning."""
    message = exc.message
    if mountpoint:
        message = message.replace(mountpoint.rstrip("/") + "/", "")
    meaning = MEANINGS.get(exc.code or "")
    if exc.code == "EACCES" and SCRIPT_NAME.search(message):
        meaning = f"{meaning} (a script needs copy and modify permission to be read)"
    if exc.code:
        message += f" [{exc.code}" + (f": {meaning}]" if meaning else "]")
    return ToolError(printable(message))


def relativize(mountpoint: str, data: Any, key: str | None = None) -> Any:
    """`data` with every `path` (and `includes` entry) inside the mount made mount-relative."""
    if isinstance(data, dict):
        return {k: relativize(mountpoint, v, k) for k, v in data.items()}
    if isinstance(data, list):
        return [relativize(mountpoint, v, key) for v in data]
    if isinstance(data, str) and key in ("path", "includes"):
        return relative(mountpoint, data)
    if isinstance(data, str) and key == "notes":  # "ABSPATH: what happened"
        return data.replace(mountpoint.rstrip("/") + "/", "")
    return data


def done(text: str, data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: `data` as structured content, `text` a short line for people and models
    that read only text (the JSON follows it, for clients without structured content)."""
    body = printable(text) + "\n" + json.dumps(data, default=str, ensure_ascii=True)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=data)
