"""Payload types of the viewer's commands: command.list and command.execute, and the commands
slfs knows the required params of (the rest of the protocol's types are in types.py)."""

from __future__ import annotations

from typing import Any

import attrs

from .types import extra_field


@attrs.frozen(kw_only=True)
class CommandExecuteParams:
    command: str | None = None
    params: dict[str, Any] | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class CommandParamInfo:
    type: str
    required: bool | None = None
    description: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class CommandInfo:
    command: str
    description: str | None = None
    params: dict[str, CommandParamInfo] | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class CommandListResponse:
    commands: list[CommandInfo]
    extra: dict[str, Any] = extra_field()


VIEWER_COMMANDS: dict[str, tuple[str, ...]] = {
    "viewer.teleport": ("object_id",),
    "viewer.camera.focus": ("object_id",),
    "viewer.object.save_back_to_contents": ("object_id",),
    "viewer.script.reset_all": ("object_id",),
    "viewer.script.recompile_all": ("object_id", "target"),
}
