"""Control requests to the viewer itself: open and close (publish and unpublish an object), the
viewer's commands (command.list, command.execute) checked against what it offers."""

from __future__ import annotations

import errno
from typing import Any

from ..protocol.command_types import VIEWER_COMMANDS, CommandExecuteParams, CommandInfo, CommandListResponse
from ..protocol.rpc_errors import METHOD_NOT_FOUND
from ..protocol.types import ObjectRequestParams, ObjectUnpublishParams
from ..world.fs_errors import FsError
from .context import Commands, MountContext
from .requests import NoParams, OpenParams, PathParams, ViewerCommandParams


class ViewerRequests:
    def __init__(self, ctx: MountContext) -> None:
        self.ctx = ctx
        self._offered: tuple[Any, dict[str, CommandInfo]] | None = None  # (session info, command.list)

    def register(self, commands: Commands) -> None:
        commands.update(open=(OpenParams, self.open), close=(PathParams, self.close),
                        viewer_command=(ViewerCommandParams, self.viewer_command),
                        commands=(NoParams, self.commands))

    async def open(self, p: OpenParams) -> Any:
        object_id = p.object_id.lower()
        if not object_id:
            raise FsError(errno.EINVAL, "an object UUID is required")
        await self.ctx.ws.calls.call(f"open {object_id}", "object.request", ObjectRequestParams(object_id=object_id))
        if await self.ctx.ws.wait_for_world(lambda: object_id in self.ctx.tree.objects,
                                        p.timeout):
            return self.ctx.describe(self.ctx.tree.objects[object_id])
        raise FsError(errno.ETIMEDOUT, f"the viewer accepted the request for {object_id} but did not publish it")

    async def close(self, p: PathParams) -> Any:
        obj = self.ctx.object_of(p.path)
        await self.ctx.ws.calls.call(f"close {obj.name}", "object.unpublish", ObjectUnpublishParams(object_id=obj.uuid))
        return self.ctx.describe(obj)

    async def viewer_command(self, p: ViewerCommandParams) -> Any:
        command = p.command
        if not command:
            raise FsError(errno.EINVAL, "a command is required")
        params = dict(p.params)
        if p.path:
            params.setdefault("object_id", self.ctx.object_of(p.path).uuid)
        offered = await self.offered_commands()
        spec = offered.get(command)
        if spec is None:
            names = ", ".join(sorted(offered)) or "none"
            raise FsError(errno.EOPNOTSUPP, f"the viewer does not offer {command} (its command.list offers: {names})")
        required = {name for name, param in (spec.params or {}).items() if param.required}
        missing = sorted(k for k in required.union(VIEWER_COMMANDS.get(command, ())) if k not in params)
        if missing:
            raise FsError(errno.EINVAL, f"{command} needs {', '.join(missing)}")
        result = await self.ctx.ws.calls.call(command, "command.execute",
                                              CommandExecuteParams(command=command, params=params))
        return {"command": command, "result": result}

    async def offered_commands(self) -> dict[str, CommandInfo]:
        """The viewer's command.list, asked once per session: what a command is checked against
        before anything is sent. The handshake's `commands` feature is not asked: no viewer
        consults its features (viewer-source.md §2), and G1 has no command.list at all."""
        info = self.ctx.ws.info
        if info is not None and self._offered is not None and self._offered[0] is info:
            return self._offered[1]
        try:
            res: CommandListResponse = await self.ctx.ws.calls.call("commands", "command.list", {}, CommandListResponse)
        except FsError as exc:
            if exc.rpc_code == METHOD_NOT_FOUND:
                raise FsError(errno.EOPNOTSUPP, "the viewer offers no commands (it has no command.list; "
                              "viewers before Alchemy's explorer have none)") from None
            raise
        offered = {c.command: c for c in res.commands}
        self._offered = (info, offered)
        return offered

    async def commands(self, p: NoParams) -> Any:
        try:
            return await self.ctx.ws.calls.call("commands", "command.list", {})
        except FsError as exc:
            if exc.rpc_code == METHOD_NOT_FOUND:
                return {"commands": []}  # G1: no command.list, so no commands
            raise
