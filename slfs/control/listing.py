"""Control requests that name what is published: list (slfs mcp's slfs_list, slfs top, slfs
status's summary), find (a UUID to its path) and resolve (a path to its UUID). Nothing is fetched
from the viewer: they answer from what the model knows."""

from __future__ import annotations

import errno
from typing import Any

from ..world.fs_errors import FsError
from ..world.tree import Folder, Item
from .context import Commands, MountContext
from .requests import FindParams, ListParams, PathParams


class ListingRequests:
    def __init__(self, ctx: MountContext) -> None:
        self.ctx = ctx

    def register(self, commands: Commands) -> None:
        commands.update(list=(ListParams, self.list), find=(FindParams, self.find),
                        resolve=(PathParams, self.resolve))

    async def list(self, p: ListParams) -> Any:
        """The objects, prims and items in the folder `path` (default the root), with what the
        model knows of each; with `recursive`, everything under it. Nothing is fetched: an item
        whose content is not known yet has size null."""
        node = self.ctx.resolve(p.path or self.ctx.ws.mountpoint)
        if isinstance(node, Item):
            return {"path": self.ctx.scripts.abspath(node), "entries": [self.list_entry(node)]}
        assert isinstance(node, Folder)
        entries: list[dict[str, Any]] = []
        todo = [node]
        while todo:
            folder = todo.pop(0)
            for child in list(folder.entries.values()):
                if isinstance(child, (Item, Folder)):
                    entries.append(self.list_entry(child))
                    if isinstance(child, Folder) and p.recursive:
                        todo.append(child)
        return {"path": self.ctx.scripts.abspath(node), "entries": entries}

    def list_entry(self, node: Item | Folder) -> dict[str, Any]:
        out: dict[str, Any] = {"name": node.name, "path": self.ctx.scripts.abspath(node), "uuid": node.uuid}
        if isinstance(node, Folder):
            out.update(kind="prim" if node.is_child else "object", permissions={"modify": node.writable})
            return out
        info = node.info
        out.update(kind=info.type, size=node.size,
                   permissions={"read": node.readable, "modify": node.writable, "save": node.saveable,
                                "why_not": node.save_refusal()})
        if node.is_script:
            report = self.ctx.ws.compiles.get(node.uuid)
            out.update(language="luau" if info.is_luau else "lsl", vm=info.vm, running=bool(info.running),
                       faulted=bool(info.faulted), state=self.ctx.scripts.state_word(node),
                       preprocessed=node.cache.inworld is not None,
                       last_compile=None if report is None else {
                           "compiled": report.compiled, "at": report.at, "note": report.note,
                           "source": report.source,
                           "errors": sum(1 for d in report.diagnostics if d.level.lower() == "error"),
                           "first": self.first_diagnostic(node)})
        return out

    def first_diagnostic(self, item: Item) -> dict[str, Any] | None:
        """The first error of the item's last compile (else its first line of any level), its row
        mapped to the source as `slfs diag` shows it: what a one-line summary quotes."""
        rows = self.ctx.scripts.diagnostics_of(item)
        errors = [d for d in rows if str(d.get("level", "")).lower() == "error"]
        return (errors or rows)[0] if rows else None

    async def find(self, p: FindParams) -> Any:
        uuid = p.uuid.lower()
        node = self.ctx.tree.find(uuid)
        if node is None or not node.attached:
            raise FsError(errno.ENOENT, f"{uuid} is not published")
        return self.ctx.describe(node)

    async def resolve(self, p: PathParams) -> Any:
        return self.ctx.describe(self.ctx.resolve(p.path))
