"""Control requests about scripts and their saves: diag (of items and live files), build,
recompile, run/stop/reset with the state the viewer confirms, resend, and the live-sync requests
(live_subscribe, live_list, script_list)."""

from __future__ import annotations

import errno
import os
from typing import Any

import trio

from ..model.live import LiveScript
from ..protocol.types import ScriptList
from ..world.fs_errors import FsError
from ..world.tree import ROOT_INODE, Item
from .context import Commands, MountContext
from .requests import DiagParams, LiveSubscribeParams, NoParams, PathParams, ResendParams, StateParams

# `run` of a faulted script: a reset or a compiling save clears a fault; neither protocol document
# says a running flag does (viewer-external-editor-json-rpc.md, set_running: "dispatched, not
# applied"), so the confirmation wait is short (a viewer that restarts it says so at once) and the
# error then says what is known.
FAULTED_WAIT = 2.0


def wait_bound(wait: float | None) -> float | None:
    """`diag`'s `wait` (seconds) as the time to wait, at most 70; None for no wait."""
    if wait is not None and wait > 0:
        return min(wait, 70.0)
    return None


class ScriptRequests:
    def __init__(self, ctx: MountContext) -> None:
        self.ctx = ctx

    def register(self, commands: Commands) -> None:
        commands.update(
            diag=(DiagParams, self.diag), build=(PathParams, self.build), recompile=(PathParams, self.recompile),
            live_subscribe=(LiveSubscribeParams, self.live_subscribe), live_list=(NoParams, self.live_list),
            script_list=(NoParams, self.script_list),
            run=(StateParams, lambda p: self.set_state(p, "run")),
            stop=(StateParams, lambda p: self.set_state(p, "stop")),
            reset=(StateParams, lambda p: self.set_state(p, "reset")),
            resend=(ResendParams, self.resend))

    async def diag(self, p: DiagParams) -> Any:
        live = self.live_named(p.path)
        if live is not None:
            return await self.live_diag(live, p.wait)
        node = self.ctx.resolve(p.path or self.ctx.ws.mountpoint)
        waited: bool | None = None
        bound = wait_bound(p.wait)
        if bound is not None:
            if not isinstance(node, Item) or not node.is_script:
                raise FsError(errno.EINVAL, f"{p.path}: diag --wait names one script")
            # A save through the mount returns with its compile answer: the wait is for a save in
            # progress (another program's close) to end.
            waited = False
            with trio.move_on_after(bound):
                await self.ctx.writer.wait_saved(node)
                waited = True
        items = [node] if isinstance(node, Item) else self.ctx.items_under(node)
        files = []
        diagnostics: list[dict[str, Any]] = []
        if node.inode == ROOT_INODE:
            for ls in list(self.ctx.ws.live.by_id.values()):
                part = await self.live_diag(ls, None)
                diagnostics += part["diagnostics"]
                files += part["files"]
        for item in items:
            report = self.ctx.ws.compiles.get(item.uuid)
            if report is None:
                continue
            diags = self.ctx.scripts.diagnostics_of(item)
            diagnostics.extend(diags)
            files.append({"path": self.ctx.scripts.abspath(item), "compiled": report.compiled, "at": report.at,
                          "note": report.note, "source": report.source})
        out: dict[str, Any] = {"diagnostics": diagnostics, "files": files}
        if waited is not None:
            out["waited"] = waited
        return out

    def live_named(self, path: str | None) -> LiveScript | None:
        """The live script of `MOUNT/.slfs/live/NAME` (or `.slfs/live/NAME`), None for other paths."""
        if not path:
            return None
        mount = self.ctx.ws.mountpoint.rstrip("/")
        norm = os.path.normpath(path)
        rel = norm[len(mount):].lstrip("/") if norm.startswith(mount + "/") else norm
        folder, _, name = rel.rpartition("/")
        if folder != ".slfs/live":
            return None
        ls = self.ctx.ws.live.entries.get(name)
        if ls is None:
            raise FsError(errno.ENOENT, f"{path}: no such live file")
        return ls

    async def live_diag(self, ls: LiveScript, wait: float | None) -> dict[str, Any]:
        """A live file's diagnostics; with `wait` (seconds, at most 70), once the viewer answered
        its last save (a live save is compiled by the viewer after close() returned)."""
        waited = True
        bound = wait_bound(wait)
        if bound is not None and not ls.compiled_since_write:
            waited = False
            with trio.move_on_after(bound):
                while not ls.compiled_since_write and ls.gone is None:
                    await ls.compiled.wait()
                waited = True
        report = self.ctx.ws.live.report(ls)
        files = [] if report is None else [{"path": self.ctx.ws.live.abspath(ls), "compiled": report.compiled,
                                            "at": report.at, "note": report.note, "source": report.source}]
        return {"diagnostics": self.ctx.ws.live.diagnostics_of(ls), "files": files, "waited": waited}

    async def live_subscribe(self, p: LiveSubscribeParams) -> Any:
        temp_path = p.temp_path
        if not temp_path:
            raise FsError(errno.EINVAL, "temp_path is required")
        ls = await self.ctx.ws.live.subscribe(temp_path)
        return {"path": self.ctx.ws.live.abspath(ls), "script_id": ls.script_id, "name": ls.name,
                "temp_path": ls.temp_path, "open_cmd": self.ctx.ws.options.open_cmd}

    async def live_list(self, p: NoParams) -> Any:
        live = self.ctx.ws.live
        return {"scripts": [live.describe(ls) for ls in list(live.by_id.values()) if live.exists(ls)]}

    async def script_list(self, p: NoParams) -> Any:
        res: ScriptList = await self.ctx.ws.calls.call("script.list", "script.list", None, ScriptList)
        # The viewer's own path to its temp dir (a Windows one under Wine or WSL2): ours, to list it.
        temp_dir = await self.ctx.ws.live.translated(res.temp_dir) if res.temp_dir else ""
        return {"temp_dir": temp_dir, "script_ids": list(res.script_ids)}

    async def build(self, p: PathParams) -> Any:
        """`slfs build`: every script under the path that is a built source, expanded and saved
        again unless its expansion is what is in-world already."""
        node = self.ctx.resolve(p.path or self.ctx.ws.mountpoint)
        named = isinstance(node, Item)
        if isinstance(node, Item) and not node.is_script:
            raise FsError(errno.EINVAL, f"{p.path}: not a script")
        items = [node] if isinstance(node, Item) else [
            i for i in self.ctx.items_under(node) if i.is_script and i.readable]
        results: list[dict[str, Any]] = []
        for item in items:
            entry: dict[str, Any] = {"path": self.ctx.scripts.abspath(item)}
            try:
                entry["status"] = await self.ctx.writer.rebuild(item)
            except FsError as exc:
                entry.update(status="failed", error=exc.message, code=errno.errorcode.get(exc.errno, "EIO"))
            if entry["status"] == "plain" and not named:
                continue  # not a built source: nothing to say about it
            results.append(self.with_compile(item, entry))
        return {"results": results}

    async def recompile(self, p: PathParams) -> Any:
        """`slfs recompile FILE`: the script's in-world text saved again, and the compile's answer."""
        item = self.ctx.item(p.path)
        if not item.is_script:
            raise FsError(errno.EINVAL, f"{p.path}: not a script")
        entry: dict[str, Any] = {"path": self.ctx.scripts.abspath(item)}
        try:
            await self.ctx.writer.recompile(item)
            entry["status"] = "saved"
        except FsError as exc:
            entry.update(status="failed", error=exc.message, code=errno.errorcode.get(exc.errno, "EIO"))
        return {"results": [self.with_compile(item, entry)]}

    def with_compile(self, item: Item, entry: dict[str, Any]) -> dict[str, Any]:
        """A build's or recompile's entry, with the compile's answer when it saved or failed."""
        report = self.ctx.ws.compiles.get(item.uuid)
        if entry["status"] in ("saved", "failed") and report is not None:
            entry["compiled"] = report.compiled
            entry["diagnostics"] = self.ctx.scripts.diagnostics_of(item)
            entry["includes"] = list(report.includes)
        return entry

    async def set_state(self, p: StateParams, word: str) -> Any:
        item = self.ctx.item(p.path)
        if not item.is_script:
            raise FsError(errno.EINVAL, f"{p.path}: not a script")
        faulted = bool(item.info.faulted)
        record = item.record
        await self.ctx.scripts.set_state(item, word)
        if word == "reset":
            return await self.reset_confirmed(item, record, faulted)
        want = {"run": True, "stop": False}.get(word)
        if want is not None:
            # set_running answers "dispatched": wait for the viewer's object.update to confirm.
            def confirmed() -> bool:
                return bool(item.info.running) == want and not (want and item.info.faulted)

            wait = p.timeout
            if want and faulted:
                wait = min(wait, FAULTED_WAIT)
            if await self.ctx.ws.wait_for_world(confirmed, wait):
                return {**self.ctx.describe(item), "state": self.ctx.scripts.state_word(item), "confirmed": True}
            if want and item.info.faulted:
                raise FsError(errno.EIO, f"{p.path}: the viewer accepted run, but the script is still faulted "
                              "(stopped by a run-time error); a reset clears that: reset it to start it again")
            raise FsError(errno.ETIMEDOUT, f"{p.path}: the viewer accepted {word} but has not yet confirmed it "
                          f"(last known state: {self.ctx.scripts.state_word(item)})")
        return {**self.ctx.describe(item), "state": self.ctx.scripts.state_word(item), "confirmed": False}

    async def reset_confirmed(self, item: Item, record: object, faulted: bool) -> Any:
        """A reset's answer. The viewer says nothing of a reset, except that a faulted script's
        fault is cleared (an update of the item, after which it may fault again): that one is
        waited for, briefly; any other reset is reported as not yet confirmed, with the state
        last known."""
        confirmed = faulted and await self.ctx.ws.wait_for_world(lambda: item.record is not record, FAULTED_WAIT)
        return {**self.ctx.describe(item), "state": self.ctx.scripts.state_word(item), "confirmed": confirmed}

    async def resend(self, p: ResendParams) -> Any:
        """`slfs resend`: save the newest recovered text of the item at `path` (model/unsent.py)."""
        item = self.ctx.item(p.path)
        out = await self.ctx.writer.unsent.resend(item, force=p.force)
        report = self.ctx.ws.compiles.get(item.uuid)
        if out["sent"] and item.is_script and report is not None:
            out.update(compiled=report.compiled, diagnostics=self.ctx.scripts.diagnostics_of(item))
        return out
