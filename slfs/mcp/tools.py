"""The `slfs_*` tools: each checks its paths (confine.py), calls the client layer in a worker thread
under a bound (calls.py), and answers with structured content and a short text (results.py).

The mount is found at each call (`--mount`, else the only running one), so a restarted daemon is
found again; with `--auto-mount` a mount of ~/sl is started when none is running, as `slfs edit`
does."""

from __future__ import annotations

import os
import re
from typing import Annotated, Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .. import event_types as ev
from ..client import ClientError, MountClient, NoMount, mounts
from ..client import files as client_files
from ..client.waits import EventWait
from .calls import BUILD_TIMEOUT, SAVE_TIMEOUT, blocking
from .confine import confine, relative
from .results import done, fail, relativize

WAITED = (ev.Compile, *ev.RUNTIME_EVENTS)
MAX_TAIL = 10.0
MAX_WAIT = 300.0
MAX_LOGS = 1000
PUSH_TIMEOUT = 600.0  # a push: every save waits for its compile (at most 8 in flight), then the starts

Path = Annotated[str, Field(description="a path relative to the mount, e.g. 'Hello Cube/Hello.lsl' "
                            "(objects are folders, child prims subfolders 'Name@1a2b3c4d', items files)")]
Folder = Annotated[str, Field(description="a folder relative to the mount ('' for the whole mount)")]
Cursor = Annotated[int, Field(ge=0, description="an event cursor from an earlier answer (its 'cursor'); "
                              "0 for everything still kept")]


class Tools:
    def __init__(self, mount: str | None = None, auto_mount: bool = False) -> None:
        # A client's configuration passes arguments without a shell: "~/sl" is expanded here.
        self.mount = os.path.expanduser(mount) if mount else None
        self.auto_mount = auto_mount

    # --- the mount ------------------------------------------------------------------------------

    def _find(self) -> MountClient:
        try:
            return MountClient.find(self.mount)
        except NoMount as exc:
            if self.auto_mount and exc.code == "ENOENT" and self.mount is None:
                return MountClient(mounts.viewer_mount())
            hint = ("start one with `slfs mount ~/sl` (it follows the viewer's external-editor "
                    "endpoint), or run this server as `slfs mcp --auto-mount`")
            raise ClientError(f"{exc.message}; {hint}" if exc.code == "ENOENT" else exc.message, exc.code) from None

    async def client(self) -> MountClient:
        return await blocking(self._find, timeout=mounts.START_WAIT + 20, what="finding the mount")

    async def _path(self, client: MountClient, path: str, *, write: bool = False) -> str:
        return await blocking(confine, client.mountpoint, path, write=write, what=f"{path}",
                              mountpoint=client.mountpoint)

    async def _call(self, client: MountClient, fn: Any, /, *args: Any, timeout: float = 30.0, what: str = "",
                    **kwargs: Any) -> Any:
        return await blocking(fn, *args, timeout=timeout, what=what or getattr(fn, "__name__", "the call"),
                              mountpoint=client.mountpoint, **kwargs)

    # --- tools ----------------------------------------------------------------------------------

    async def slfs_status(self) -> CallToolResult:
        """The mount and its viewer: connection state (and why), endpoint, viewer and version, its
        features and the generation of viewer code it looks like (G0/G1: no viewer commands, raw
        compile errors, runtime output only for live-sync scripts; G2-G4), agent, object and item
        counts, the last error, the files whose text is not in-world ('unsent': unsaved, recovered
        after a failed save, refused; slfs_resend sends a recovered one), and the event cursor to
        give slfs_wait and slfs_logs. Works while the viewer is away."""
        client = await self.client()
        data = await self._call(client, client.status)
        data["cursor"] = await self._call(client, client.cursor)
        data["mount"] = client.mountpoint
        text = f"{data.get('state')}"
        if data.get("viewer"):
            text += f" to {data.get('viewer')} {data.get('viewer_version', '')} as {data.get('agent', '?')}"
            if data.get("viewer_generation"):
                text += f" (looks like {data['viewer_generation']})"
        elif data.get("state_detail"):
            text += f" ({data['state_detail']})"
        text += f": {data.get('objects')} objects, {data.get('items')} items; cursor {data['cursor']}"
        unsent = data["unsent"] = relativize(client.mountpoint, data.get("unsent") or [])
        if unsent:  # texts a save did not land: slfs_resend sends a recovered one
            text += f"; {len(unsent)} files not in-world: " + ", ".join(f"{u['path']} ({u['state']})" for u in unsent)
        return done(text, data)

    async def slfs_list(self, path: Folder = "", recursive: bool = False) -> CallToolResult:
        """Objects, prims and items in a folder ('' lists the published objects): for each its kind
        (object, prim, script, notecard, ...), and for items the language (lsl, luau), VM, run state
        (running, faulted), permissions (read, modify, save: what may be done), size in bytes (null
        until its text was fetched) and last compile. recursive=true lists everything under it."""
        client = await self.client()
        full = await self._path(client, path)
        data = relativize(client.mountpoint, await self._call(client, client.listing, full, recursive=recursive))
        entries = data.get("entries", [])
        return done(f"{len(entries)} entries in {path or 'the mount'}", data)

    async def slfs_read(self, path: Path, inworld: bool = False) -> CallToolResult:
        """An item's text as the mount shows it (for a preprocessed script, the source); with
        inworld=true the text as stored in-world (the expansion the viewer compiled). Also reads
        the sidecars, e.g. 'Obj/.slfs/Script.lsl.log' or '.slfs/diagnostics'. 'sha256' in the
        answer is what slfs_write's if_match takes."""
        client = await self.client()
        full = await self._path(client, path)
        text, cut = await self._call(client, client_files.read_text, full, inworld=inworld, what=f"read {path}")
        data = {"path": path, "inworld": inworld, "text": text, "truncated": cut, "sha256": client_files.digest(text)}
        note = f" (cut at {client_files.READ_MAX} bytes)" if cut else ""
        return CallToolResult(content=[TextContent(type="text", text=text + note)], structured_content=data)

    async def slfs_write(self, path: Path, text: Annotated[str, Field(description="the whole new text")],
                         create: Annotated[bool, Field(description="make a new item (a .lsl or .luau name "
                                                       "makes a script, any other a notecard); refused "
                                                       "if it exists")] = False,
                         tail_s: Annotated[float, Field(ge=0, le=MAX_TAIL, description="seconds of runtime "
                                                        "output to collect after the save")] = 1.5,
                         if_match: Annotated[str, Field(description="the 'sha256' slfs_read gave: save only if "
                                                        "the text is still the one you read (else ESTALE)")] = ""
                         ) -> CallToolResult:
        """Save an item's whole text in-world (or create it) and return the viewer's verdict:
        compiled or not, diagnostics mapped to source and include lines (path, row, column,
        level, message), and the script's runtime output during tail_s seconds after the save
        (its restart). A failed compile still stores the text; the old compiled version keeps
        running. ESTALE means it changed since you read it (give if_match to be sure): read it
        again first."""
        client = await self.client()
        full = await self._path(client, path, write=True)
        waiter = EventWait(client.entry)
        saved = await blocking(client_files.save, client, full, text, create=create, tail_s=tail_s, waiter=waiter,
                               if_match=if_match or None, timeout=SAVE_TIMEOUT + tail_s, what=f"save {path}",
                               cancel=waiter.cancel, mountpoint=client.mountpoint)
        data = relativize(client.mountpoint, saved.as_json())
        data["path"] = relative(client.mountpoint, full)
        if saved.kind != "script":
            line = f"{path}: saved ({saved.bytes} bytes)"
        elif saved.compiled is None:
            line = f"{path}: saved; {saved.note or 'no compile answer'}"
        elif saved.compiled:
            line = f"{path}: saved, compiled"
        else:
            line = f"{path}: saved, compile failed: {len(saved.diagnostics)} diagnostics"
        lines = [line, *(f"{d.get('path')}:{d.get('row')}:{d.get('column')}: {d.get('level')}: {d.get('message')}"
                         for d in data["diagnostics"])]
        lines += [f"runtime: {e.get('message', '')}" for e in saved.runtime]
        return done("\n".join(lines), data)

    async def slfs_diagnostics(self, path: Folder = "") -> CallToolResult:
        """The diagnostics of the last compiles of the scripts under path ('' for all), mapped to
        source and include lines, and for each compiled file whether it compiled."""
        client = await self.client()
        full = await self._path(client, path)
        result = await self._call(client, client.diag, full if path else None)
        data = relativize(client.mountpoint, result.as_json())
        return done(f"{result.errors} errors in {len(data.get('files', []))} files", data)

    async def slfs_logs(self, path: Folder = "", since: Cursor = 0,
                        limit: Annotated[int, Field(ge=1, le=MAX_LOGS)] = 100) -> CallToolResult:
        """Runtime output (llOwnerSay and other chat, runtime errors with their line and stack)
        of the scripts under path after the cursor `since`, oldest first, at most `limit` (the
        newest kept); 'cursor' in the answer is where to go on from."""
        client = await self.client()
        if path:
            await self._path(client, path)
        page = await self._call(client, client.events, since)
        events = [e.to_json() for e in page.events
                  if isinstance(e, ev.RUNTIME_EVENTS) and client_files.concerns(e, path)]
        out = {"events": events[-limit:], "cursor": page.cursor, "more": max(0, len(events) - limit)}
        return done(f"{len(out['events'])} runtime lines; cursor {out['cursor']}", out)

    async def slfs_wait(self, since: Cursor, timeout_s: Annotated[float, Field(gt=0, le=MAX_WAIT)] = 30.0,
                        path: Folder = "") -> CallToolResult:
        """Wait for the next compile result or runtime output (of the scripts under path) after
        the cursor `since`, at most timeout_s seconds; returns those events and the cursor to go
        on from (events: [] when nothing came). Cancellable."""
        client = await self.client()
        if path:
            await self._path(client, path)
        waiter = EventWait(client.entry)

        def want(event: ev.SlfsEvent) -> bool:
            return isinstance(event, WAITED) and client_files.concerns(event, path)

        got = await blocking(waiter.collect, since, timeout_s, want, first=True, timeout=timeout_s + 10,
                             what="wait", cancel=waiter.cancel, mountpoint=client.mountpoint)
        data = {"events": [e.to_json() for e in got.events], "cursor": got.cursor, "timed_out": not got.events}
        return done(f"{len(got.events)} events; cursor {got.cursor}" if got.events
                    else f"nothing within {timeout_s:g} s; cursor {got.cursor}", data)

    async def _per_file(self, word: str, path: str) -> CallToolResult:
        client = await self.client()
        full = await self._path(client, path)
        done_ = await self._call(client, client.set_state, word, [full], timeout=30.0, what=f"{word} {path}")
        if done_.failures:
            f = done_.failures[0]
            raise fail(ClientError(f.error, f.code), client.mountpoint)
        data = relativize(client.mountpoint, done_.results[0])
        confirmed = "" if data.get("confirmed") else " (not yet confirmed by the viewer)"
        return done(f"{path}: {data.get('state')}{confirmed}", data)

    async def slfs_set_running(self, path: Path, on: bool) -> CallToolResult:
        """Start (on=true) or stop a script, and wait for the viewer to confirm it. A faulted
        script (stopped by a runtime error) needs slfs_reset to start again."""
        return await self._per_file("run" if on else "stop", path)

    async def slfs_reset(self, path: Path) -> CallToolResult:
        """Reset a script (it restarts from state_entry; a fault is cleared)."""
        return await self._per_file("reset", path)

    async def slfs_rename(self, path: Path, new_name: Annotated[str, Field(
            description="the new file name in the same prim (keep the extension: .lsl, .luau)")]) -> CallToolResult:
        """Rename an item within its prim (object.item.modify); moving to another prim or kind is
        not possible (EXDEV), and a name that exists is refused."""
        client = await self.client()
        full = await self._path(client, path, write=True)
        target = await self._call(client, client_files.rename, full, new_name, what=f"rename {path}")
        data = {"path": relative(client.mountpoint, target), "old_path": path}
        return done(f"{path} -> {data['path']}", data)

    async def slfs_delete(self, path: Path) -> CallToolResult:
        """Delete an item, as `rm` does: the name goes at once, the item in-world a few seconds
        later (delete_grace), and a copy is kept in the mount's trash folder (named in the answer)."""
        client = await self.client()
        full = await self._path(client, path, write=True)
        # The daemon's trash, not one from this server's environment (its XDG_DATA_HOME may differ);
        # asked first, so a delete that is done is never reported as a failed call.
        trash = str((await self._call(client, client.status)).get("trash", ""))
        await self._call(client, client_files.delete, full, what=f"delete {path}")
        return done(f"{path}: deleted (a copy is in {trash})", {"path": path, "deleted": True, "trash": trash})

    async def slfs_build(self, path: Folder) -> CallToolResult:
        """Expand and save again the preprocessed scripts under path (after an #include or
        require'd file changed); each result says saved, unchanged or failed, with diagnostics."""
        client = await self.client()
        full = await self._path(client, path)
        built = await self._call(client, client.build, [full], timeout=BUILD_TIMEOUT, what=f"build {path}")
        data = relativize(client.mountpoint, {"results": built.results, "failed": len(built.bad)})
        return done(f"{len(built.results)} scripts, {len(built.bad)} failed", data)

    async def slfs_resend(self, path: Path, force: Annotated[bool, Field(
            description="send it even though the item changed in-world since the text was based on it "
                        "(the history keeps the in-world text)")] = False) -> CallToolResult:
        """Save the newest recovered text of an item: the text of a save that failed (the viewer
        was away, timed out, or refused it), kept in the recovery folder; slfs_status lists them
        ('unsent'). ESTALE when the item changed in-world since that text was based on it: read
        both and decide, then force=true to send it anyway."""
        client = await self.client()
        full = await self._path(client, path, write=True)
        data = await self._call(client, client.resend, full, force=force, timeout=SAVE_TIMEOUT, what=f"resend {path}")
        data = relativize(client.mountpoint, data)
        if not data.get("sent"):
            return done(f"{path}: {data.get('note', 'not sent')}", data)
        compiled = "" if "compiled" not in data else (", compiled" if data["compiled"] else ", compile failed")
        return done(f"{path}: resent{compiled}", data)

    async def slfs_command(self, command: Annotated[str, Field(description="a command the viewer offers, e.g. "
                                                               "'viewer.script.reset_all'")],
                           object: Annotated[str, Field(description="the object's folder, relative to the "
                                                        "mount, for commands about an object ('' for none)")] = "",
                           params: Annotated[dict[str, Any] | None, Field(description="the command's "
                                                                          "parameters")] = None) -> CallToolResult:
        """Run one of the viewer's commands (command.execute), checked against what the viewer
        offers (an unknown one is refused with the list of offered commands)."""
        client = await self.client()
        folder = await self._path(client, object) if object else None
        data = await self._call(client, client.viewer_command, command, params or {}, folder, what=command)
        return done(f"{command}: ok", relativize(client.mountpoint, data))

    async def _folder_or_uuid(self, client: MountClient, dest: str) -> str:
        """An object or prim folder relative to the mount, or an object's UUID (published if need be)."""
        from ..client import push as pushing

        if re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", dest):
            return str(await self._call(client, pushing.resolve_dest, client, dest, what=f"find {dest}"))
        return await self._path(client, dest)

    async def slfs_push(self, src: Annotated[str, Field(description="a local directory (absolute path) laid out as "
                                                        "an object's folder: the root prim's items as files, child "
                                                        "prims as subfolders named as on the mount")],
                        dest: Annotated[str, Field(description="the object or prim folder, relative to the mount, "
                                                   "or an object's UUID")],
                        plan: Annotated[bool, Field(description="only the plan: nothing changes (as slfs push "
                                                    "--plan)")] = False,
                        delete: Annotated[bool, Field(description="delete in-world items with no local file")] = False,
                        stopped: Annotated[bool, Field(description="leave every script the push saves "
                                                       "stopped")] = False,
                        force: Annotated[bool, Field(description="overwrite items changed in-world since the "
                                                     "last push/pull from src")] = False,
                        no_rollback: Annotated[bool, Field(description="on a failure, leave what was saved "
                                                           "(default: put everything back)")] = False
                        ) -> CallToolResult:
        """Deploy a local tree onto an object as one step (as `slfs push`; plan=true first to see
        what would change): the plan (create, update, unchanged, delete, skip with why, conflict),
        then every new or changed item saved with its scripts stopped, the scripts that ran before
        and the new ones started together, deletes last; any failure (a compile error, a refused
        save) rolls all of it back, and the failing item's diagnostics name the local files. Items
        changed in-world since the last push/pull from src are conflicts: nothing is pushed unless
        force=true. Answers {"items": [...], "summary", "exit", ...} as `slfs push --json` prints
        (an error result when exit is not 0)."""
        from ..client import push as pushing

        src = _local_dir(src, "src")
        client = await self.client()
        folder = await self._folder_or_uuid(client, dest)

        def run() -> tuple[Any, Any]:
            return pushing.run(client, folder, src, plan_only=plan, delete=delete, force=force,
                               stopped=stopped, rollback=not no_rollback)

        planned, outcome = await self._call(client, run, timeout=PUSH_TIMEOUT, what=f"push {src} onto {dest}")
        data = {"items": [s.as_json() for s in planned.steps], **pushing.summary_json(planned, outcome, src)}
        counts = ", ".join(f"{n} {a}" for a, n in planned.summary().items() if n) or "nothing to do"
        if outcome is None:
            return done(f"plan for {dest}: {counts}", data)
        if data["exit"]:
            lines = "".join("\n" + pushing.diagnostic_line(d) for d in data.get("diagnostics", []))
            why = "conflicts (force=true overwrites)" if outcome.error == "conflicts" else outcome.error
            result = done(f"push onto {dest} failed: {why}" + ("; rolled back" if outcome.rolled_back else "")
                          + lines, data)
            result.is_error = True
            return result
        return done(f"pushed onto {dest}: {counts}", data)

    async def slfs_pull(self, object: Annotated[str, Field(description="the object or prim folder, relative to "
                                                           "the mount")],
                        local_dir: Annotated[str, Field(description="a local directory (absolute path) to copy "
                                                        "the items into")],
                        delete: Annotated[bool, Field(description="remove local files with no in-world "
                                                      "item")] = False) -> CallToolResult:
        """Copy an object's readable items into a local directory in the form the mount shows
        them (as `slfs pull`), leaving identical files untouched, and record the base later pushes
        from that directory check conflicts against. Answers {"items": [...], "summary", "exit"}."""
        from ..client import pull as pulling
        from ..client import push as pushing
        from ..client import push_plan as planning

        local = _local_dir(local_dir, "local_dir", exist=False)
        client = await self.client()
        folder = await self._folder_or_uuid(client, object)
        if os.path.realpath(local).startswith(os.path.realpath(client.mountpoint).rstrip("/") + "/"):
            raise ToolError("local_dir: a directory outside the mount")

        def run() -> Any:
            state = pushing.Pusher(client.entry).state(folder)
            return pulling.pull(state, local, planning.Bases(local), delete=delete)

        pulled = await self._call(client, run, timeout=PUSH_TIMEOUT, what=f"pull {object}")
        data = {"items": [s.as_json() for s in pulled.steps], "summary": pulled.summary(), "exit": pulled.exit}
        counts = ", ".join(f"{n} {a}" for a, n in pulled.summary().items() if n) or "nothing"
        return done(f"pulled {object} into {local}: {counts}", data)


def _local_dir(path: str, what: str, *, exist: bool = True) -> str:
    """A local directory named by a tool's argument: absolute, inside the directory the server
    runs in (the agent's project: a push never sends, and a pull never writes, anything of the
    user's elsewhere, such as ~/.ssh), and (for src) existing."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        raise ToolError(f"{what}: give an absolute path of a local directory")
    project = os.path.realpath(os.getcwd())
    real = os.path.realpath(path)
    if real != project and not real.startswith(project.rstrip(os.sep) + os.sep):
        raise ToolError(f"{what}: {path} is outside the directory this server runs in ({project}); "
                        "slfs_push and slfs_pull work on local trees inside it")
    if exist and not os.path.isdir(path):
        raise ToolError(f"{what}: {path} is not a directory")
    return os.path.normpath(path)


READ_ONLY = ("slfs_status", "slfs_list", "slfs_read", "slfs_diagnostics", "slfs_logs", "slfs_wait")
DESTRUCTIVE = ("slfs_delete",)
NAMES = ("slfs_status", "slfs_list", "slfs_read", "slfs_write", "slfs_diagnostics", "slfs_logs", "slfs_wait",
         "slfs_set_running", "slfs_reset", "slfs_rename", "slfs_delete", "slfs_build", "slfs_resend",
         "slfs_command", "slfs_push", "slfs_pull")


def tool_annotations(name: str) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=name in READ_ONLY, destructive_hint=name in DESTRUCTIVE,
                           open_world_hint=name not in READ_ONLY)


__all__ = ["NAMES", "ToolError", "Tools", "tool_annotations"]
