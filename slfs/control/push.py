"""The control socket's requests for `slfs push` and `slfs pull` (server.py registers them). The
push's logic (plan, order, rollback, conflicts) is the client's (slfs/client/push.py); these are
the steps it needs that the mount's files cannot give:

- `push_state {path}`: the object or prim at `path` and its child prims, each item with its kind,
  run state, permissions and the digest of the text the mount shows (fetched, at most
  FETCH_PARALLEL at a time, when never fetched: a push compares every item).
- `push_create {path, name, content}`: a new item in the prim folder `path` (a script is created
  holding the viewer's default text: push_save stores its text, stopped).
- `push_save {path, content | restore, running, expect, main, root}`: save into the item at `path`
  the text `content` (or the version of digest `restore`: what it held before the push, kept here
  and in the history) with the run state `running` (null: as it runs), refused with ESTALE when
  it no longer holds the text of digest `expect`. A built source's quoted includes are searched
  from the local file `main` inside the tree `root`.
- `push_delete {path}`: delete the item now (trash copy and history version first).
- `push_run {paths, running}`: start (or stop) the scripts together and wait for the viewer to
  confirm; a viewer without object.script.set_running (G1) answers ENOSYS for each.
"""

from __future__ import annotations

import errno
import os
import time
from collections import OrderedDict
from typing import Any

import attrs
import trio

from ..local.history_store import digest_of
from ..model.sources import BuildFailed
from ..protocol.rpc_errors import METHOD_NOT_FOUND
from ..world.fs_errors import FsError
from ..world.tree import Folder, Item
from .context import Commands, MountContext
from .requests import CONFIRM_TIMEOUT

FETCH_PARALLEL = 16  # content fetches in flight for push_state (as -o prefetch's default)
KEPT_TEXTS = 512  # texts kept from before a push's saves, for its rollback
NO_SET_RUNNING = ("the viewer has no object.script.set_running (a first-generation viewer): scripts cannot "
                  "be started or stopped from outside; start them in the viewer")


@attrs.frozen(kw_only=True)
class PushStateParams:
    path: str | None = None


@attrs.frozen(kw_only=True)
class PushCreateParams:
    path: str | None = None
    name: str = ""
    content: str = ""


@attrs.frozen(kw_only=True)
class PushSaveParams:
    path: str | None = None
    content: str | None = None
    restore: str | None = None
    running: bool | None = None
    expect: str | None = None
    main: str | None = None
    root: str | None = None
    check: bool = False  # only say whether the source builds to what is in-world (nothing is sent)


@attrs.frozen(kw_only=True)
class PushRunParams:
    paths: list[str] = attrs.field(factory=list)
    running: bool = True
    timeout: float = CONFIRM_TIMEOUT


class PushRequests:
    def __init__(self, ctx: MountContext) -> None:
        self.ctx = ctx
        self.ws = ctx.ws
        # digest -> (text, in-world text when it differs: an envelope), from before a push's saves
        self._kept: OrderedDict[str, tuple[bytes, bytes | None]] = OrderedDict()

    def register(self, commands: Commands) -> None:
        commands.update(push_state=(PushStateParams, self.state), push_create=(PushCreateParams, self.create),
                        push_save=(PushSaveParams, self.save), push_delete=(PushStateParams, self.delete),
                        push_run=(PushRunParams, self.run))

    def _keep(self, data: bytes, inworld: bytes | None) -> str:
        digest = digest_of(data)
        self._kept[digest] = (data, inworld)
        self._kept.move_to_end(digest)
        while len(self._kept) > KEPT_TEXTS:
            self._kept.popitem(last=False)
        return digest

    # --- push_state -----------------------------------------------------------------------------

    async def state(self, p: PushStateParams) -> dict[str, Any]:
        node = self.ctx.resolve(p.path)
        if not isinstance(node, Folder) or node is self.ws.tree.root:
            raise FsError(errno.ENOTDIR, f"{p.path}: not an object or prim folder")
        prims: list[tuple[str, Folder]] = [("", node)]
        if not node.is_child:
            prims += [(name, f) for name, f in list(node.entries.items()) if isinstance(f, Folder)]
        items: list[tuple[dict[str, Any], Item]] = []
        out_prims = []
        for rel, folder in prims:
            entries = []
            for name, child in list(folder.entries.items()):
                if not isinstance(child, Item):
                    continue
                info = child.info
                entry: dict[str, Any] = {
                    "name": name, "item_id": child.uuid, "type": info.type, "luau": bool(info.is_luau),
                    "running": bool(info.running) if child.is_script else None, "faulted": bool(info.faulted),
                    "readable": child.readable, "writable": child.writable, "why_not": child.save_refusal(),
                    "digest": None, "error": None}
                entries.append(entry)
                items.append((entry, child))
            out_prims.append({"dir": rel, "uuid": folder.uuid, "path": self.ctx.scripts.abspath(folder),
                              "writable": folder.writable, "items": entries})
        limit = trio.CapacityLimiter(FETCH_PARALLEL)

        async def digest(entry: dict[str, Any], item: Item) -> None:
            if not item.readable:
                entry["error"] = "not readable (needs copy and modify permission)"
                return
            async with limit:
                try:
                    data = await self.ws.content.read_content(item)
                except FsError as exc:
                    entry["error"] = exc.message
                    return
            entry["digest"] = digest_of(data)
            entry["size"] = len(data)

        async with trio.open_nursery() as nursery:
            for entry, item in items:
                nursery.start_soon(digest, entry, item)
        obj = node.object_folder
        return {"path": self.ctx.scripts.abspath(node), "uuid": node.uuid, "object_id": obj.uuid,
                "is_child": node.is_child, "connected": self.ws.connected, "prims": out_prims}

    # --- push_create, push_save, push_delete ---------------------------------------------------

    async def create(self, p: PushCreateParams) -> dict[str, Any]:
        folder = self.ctx.resolve(p.path)
        if not isinstance(folder, Folder) or folder is self.ws.tree.root:
            raise FsError(errno.ENOTDIR, f"{p.path}: not an object or prim folder")
        if not p.name or "/" in p.name:
            raise FsError(errno.EINVAL, f"bad push_create request: name {p.name!r}")
        item = await self.ctx.writer.push_create(folder, p.name, p.content.encode("utf-8"))
        return {"path": self.ctx.scripts.abspath(item), "item_id": item.uuid, "type": item.info.type}

    async def save(self, p: PushSaveParams) -> dict[str, Any]:
        item = self.ctx.item(p.path)
        if (p.content is None) == (p.restore is None):
            raise FsError(errno.EINVAL, "bad push_save request: give content or restore")
        verbatim: bytes | None = None
        data: bytes | None
        if p.content is not None:
            data = p.content.encode("utf-8")
        else:
            assert p.restore is not None
            kept = self._kept.get(p.restore)
            if kept is not None:
                data, verbatim = kept
            else:
                data = await self.ws.history.blob(p.restore)
            if data is None:
                raise FsError(errno.ENOENT, f"{p.path}: the text to restore ({p.restore[:12]}) is neither kept "
                              "nor in the history")
        if p.restore is not None and item.readable:
            # A rollback: what the item holds now is read from the viewer, not taken from the cache
            # (a save cut off may have landed); a viewer that is away fails the restore, and the
            # push says the item was not restored.
            await self.ws.content.read_content(item, fresh=True)
        expect: bytes | None = None
        before: str | None = None
        if p.expect is not None and item.readable:
            current = await self.ws.content.read_content(item)
            if digest_of(current) != p.expect:
                raise FsError(errno.ESTALE, f"{p.path}: changed in-world since the push planned it")
            expect = current
            before = self._keep(current, item.cache.inworld)
        root = main = None
        if p.root is not None and p.main is not None:
            root, main = os.path.realpath(p.root), os.path.abspath(p.main)
        if p.check:
            return {"path": self.ctx.scripts.abspath(item), "item_id": item.uuid,
                    "unchanged": await self._builds_unchanged(item, data, main, root)}
        running_before = bool(item.info.running) if item.is_script else None
        started = time.time()
        out: dict[str, Any] = {"path": self.ctx.scripts.abspath(item), "item_id": item.uuid, "sent": False,
                               "before": before, "running_before": running_before, "digest": digest_of(data)}
        try:
            out["sent"] = await self.ctx.writer.push_save(item, data, running=p.running, expect=expect,
                                                             main=main, local_root=root, verbatim=verbatim)
        except FsError as exc:
            report = self.ws.compiles.get(item.uuid)
            if not (item.is_script and report is not None and not report.compiled and report.at >= started):
                raise
            # The source could not be built (an include not found, a preprocessor error): nothing
            # was sent; its diagnostics name the local files, as a failed compile's do.
            return {**out, "compiled": False, "note": exc.message,
                    "diagnostics": self.ctx.scripts.diagnostics_of(item)}
        report = self.ws.compiles.get(item.uuid)
        if item.is_script and report is not None:
            out.update(compiled=report.compiled, note=report.note,
                       diagnostics=self.ctx.scripts.diagnostics_of(item))
        return out

    async def _builds_unchanged(self, item: Item, data: bytes, main: str | None, root: str | None) -> bool:
        """Whether saving `data` would store what is in-world (a built source: its expansion too,
        so a changed include is a change); a source that cannot be built is a change."""
        if not item.is_script or item.cache.inworld is None:
            return True  # not built: the text alone says it, and the client compared it
        text = data.decode("utf-8", "replace")
        sources = self.ctx.writer.sources
        if not sources.wants_build(item, text):
            return False  # it would go in-world verbatim now: not what the envelope holds
        try:
            build = await sources.build_text(text, main or self.ctx.scripts.abspath(item), luau=item.info.is_luau,
                                             enveloped=True, vm=item.info.vm or self.ws.options.vm, local_root=root)
        except (FsError, BuildFailed):
            return False  # recorded nowhere: the push's save reports it
        return build is None or sources.unchanged(item, build)

    async def delete(self, p: PushStateParams) -> dict[str, Any]:
        item = self.ctx.item(p.path)
        folder = item.folder
        assert folder is not None
        path = self.ctx.scripts.abspath(item)
        await self.ctx.writer.delete_now(folder, item)
        return {"path": path, "item_id": item.uuid}

    # --- push_run -------------------------------------------------------------------------------

    async def run(self, p: PushRunParams) -> dict[str, Any]:
        items = [self.ctx.item(path) for path in p.paths]
        for path, item in zip(p.paths, items, strict=True):
            if not item.is_script:
                raise FsError(errno.EINVAL, f"{path}: not a script")
        word = "run" if p.running else "stop"
        results: list[dict[str, Any]] = [{"path": self.ctx.scripts.abspath(i), "item_id": i.uuid} for i in items]

        async def one(entry: dict[str, Any], item: Item) -> None:
            try:
                await self.ctx.scripts.set_state(item, word)
            except FsError as exc:
                if exc.rpc_code == METHOD_NOT_FOUND:
                    entry.update(error=NO_SET_RUNNING, code="ENOSYS")
                else:
                    entry.update(error=exc.message, code=errno.errorcode.get(exc.errno, "EIO"))

        pairs = list(zip(results, items, strict=True))
        if pairs:
            # The first alone: a viewer without set_running (G1) says so once, not once per script.
            await one(*pairs[0])
            if pairs[0][0].get("code") == "ENOSYS":
                for entry, _item in pairs[1:]:
                    entry.update(error=NO_SET_RUNNING, code="ENOSYS")
                pairs = []
        async with trio.open_nursery() as nursery:  # the others sent together
            for entry, item in pairs[1:]:
                nursery.start_soon(one, entry, item)
        asked = [(e, i) for e, i in zip(results, items, strict=True) if "error" not in e]

        def confirmed() -> bool:
            return all(bool(i.info.running) == p.running for _e, i in asked)

        await self.ws.wait_for_world(confirmed, p.timeout)
        for entry, item in zip(results, items, strict=True):
            entry["state"] = self.ctx.scripts.state_word(item)
            if "error" not in entry:
                entry["confirmed"] = bool(item.info.running) == p.running
        return {"results": results}
