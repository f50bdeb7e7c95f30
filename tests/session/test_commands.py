from typing import Any

import pytest

from slfs.protocol.rpc_errors import RpcError
from slfs.session.commands import command_list, validate_command


def test_command_list() -> None:
    cmds = {c["command"]: c for c in command_list()["commands"]}
    assert set(cmds) == {"editor.open_file", "editor.show_message"}
    assert cmds["editor.open_file"]["params"]["path"]["required"] is True
    assert cmds["editor.open_file"]["params"]["line"]["required"] is False
    assert cmds["editor.show_message"]["params"]["message"]["required"] is True


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (None, "Invalid params: command is required"),
        ({}, "Invalid params: command is required"),
        ({"command": "viewer.teleport"}, "Invalid params: Unknown command: viewer.teleport"),
        ({"command": "rm -rf /"}, "Invalid params: Unknown command: rm -rf /"),
        ({"command": "editor.open_file"}, "Invalid params: path is required"),
        ({"command": "editor.open_file", "params": {"path": 3}}, "Invalid params: path must be a string"),
        ({"command": "editor.open_file", "params": {"path": "a", "line": "x"}},
         "Invalid params: line must be a number"),
        ({"command": "editor.show_message", "params": {}}, "Invalid params: message is required"),
        ({"command": "editor.show_message", "params": []}, "Invalid params: params must be an object"),
        ([1, 2], "Invalid params: params must be an object"),
    ],
)
def test_invalid(params: Any, message: str) -> None:
    with pytest.raises(RpcError) as info:
        validate_command(params)
    assert info.value.code == -32602
    assert info.value.message == message


def test_valid() -> None:
    assert validate_command({"command": "editor.open_file", "params": {"path": "/x", "line": 3}}) == (
        "editor.open_file", {"path": "/x", "line": 3})
    assert validate_command({"command": "editor.show_message", "params": {"message": "hi"}}) == (
        "editor.show_message", {"message": "hi"})
