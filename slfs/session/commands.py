"""The editor commands the viewer may invoke with command.execute, and their validation.

slfs runs nothing itself: a validated command is handed to the listener, which decides what to do.
"""

from __future__ import annotations

from typing import Any

from slfs.protocol.rpc_errors import INVALID_PARAMS, RpcError

# command -> (description, {param: (type, required, description)})
EDITOR_COMMANDS: dict[str, tuple[str, dict[str, tuple[str, bool, str]]]] = {
    "editor.open_file": (
        "Open a file in the editor.",
        {
            "path": ("string", True, "Path of the file to open"),
            "line": ("number", False, "Line to show"),
        },
    ),
    "editor.show_message": (
        "Show a notification.",
        {
            "message": ("string", True, "Text to show"),
            "level": ("string", False, "info, warn or error"),
        },
    ),
}


def command_list() -> dict[str, Any]:
    """The result of command.list."""
    commands = []
    for name, (description, params) in sorted(EDITOR_COMMANDS.items()):
        commands.append(
            {
                "command": name,
                "description": description,
                "params": {
                    p: {"type": t, "required": req, "description": d} for p, (t, req, d) in params.items()
                },
            }
        )
    return {"commands": commands}


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return True


def validate_command(params: Any) -> tuple[str, dict[str, Any]]:
    """Check command.execute params; return (command, its params) or raise RpcError -32602."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError.standard(INVALID_PARAMS, "params must be an object")
    command = params.get("command")
    if command is None or command == "":
        raise RpcError.standard(INVALID_PARAMS, "command is required")
    if not isinstance(command, str):
        raise RpcError.standard(INVALID_PARAMS, "command must be a string")
    spec = EDITOR_COMMANDS.get(command)
    if spec is None:
        raise RpcError.standard(INVALID_PARAMS, f"Unknown command: {command}")
    args = params.get("params")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise RpcError.standard(INVALID_PARAMS, "params must be an object")
    for name, (kind, required, _desc) in spec[1].items():
        if name not in args or args[name] is None:
            if required:
                raise RpcError.standard(INVALID_PARAMS, f"{name} is required")
            continue
        if not _type_ok(kind, args[name]):
            raise RpcError.standard(INVALID_PARAMS, f"{name} must be a {kind}")
    return command, dict(args)
