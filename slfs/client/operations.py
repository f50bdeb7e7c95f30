"""One running mount's daemon, as the CLI verbs and the MCP server ask it: a method per operation,
structured results, ClientError when it fails; nothing printed. Each method uses a connection of
its own, so one client serves a whole session of calls (a restarted daemon is found again).

A per-file operation names each file once: a failure carries the path as the user gave it and the
daemon's reason without the path it was sent (`FileFailure`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import attrs

from ..event_types import SlfsEvent, event_from_json
from . import mounts
from .client_error import ClientError
from .connection import REQUEST_TIMEOUT
from .temp_files import find_temp_file

DIAG_WAIT = 70.0  # `diag --wait`: how long the daemon waits for the compile of the last save
FIND_TIMEOUT = 10.0  # how long an item named by a launch URI may take to be published


@attrs.frozen
class EventPage:
    """The events a mount kept that a request asked for, typed, and its cursor (the last seq) then."""

    events: list[SlfsEvent]
    cursor: int


@attrs.frozen
class FileFailure:
    """A file a per-file operation failed on."""

    path: str  # as the user named it
    reason: str  # why, without the path (the daemon's message names the path it was sent)
    error: str  # the daemon's whole message
    code: str | None

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "error": self.error, "code": self.code}


@attrs.frozen
class PerFile:
    """run, stop, reset: the daemon's answer for each file that worked, and the failures."""

    results: list[dict[str, Any]]
    failures: list[FileFailure]


@attrs.frozen
class Diagnostics:
    """diag: the daemon's answer, its error-level count, a note per file whose compile failed, and
    (with a wait) whether no compile result came in time."""

    data: dict[str, Any]
    errors: int
    notes: list[str]
    timed_out: bool

    @property
    def failed(self) -> bool:
        # A failed compile fails the build even when the viewer sent no error-level line.
        return bool(self.errors or self.notes or self.timed_out)

    def as_json(self) -> dict[str, Any]:
        return {**self.data, "errors": self.errors, "notes": self.notes}


@attrs.frozen
class Built:
    """build: one result per preprocessed script (or per path that failed)."""

    results: list[dict[str, Any]]

    @property
    def bad(self) -> list[dict[str, Any]]:
        return [r for r in self.results if r["status"] == "failed" or r.get("compiled") is False]


@attrs.frozen
class LiveTemp:
    """Which viewer temp file a launch URI's script is open in, if any, and why none was used."""

    path: str | None
    note: str | None = None


class MountClient:
    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry  # the mount's registry entry
        self.mountpoint = str(entry["mountpoint"])

    @classmethod
    def find(cls, mount: str | None = None, path: str | None = None) -> MountClient:
        """The mount named by --mount, else the one holding `path` (see mounts.find_mount)."""
        return cls(mounts.find_mount(mount, path))

    def path_of(self, arg: str) -> str:
        """How a user's path is named to the daemon."""
        return mounts.mount_path(self.entry, arg)

    def request(self, kind: str, /, _timeout: float | None = REQUEST_TIMEOUT, **params: Any) -> Any:
        with mounts.connect(self.entry) as c:
            return c.request(kind, _timeout=_timeout, **params)

    # --- the mount --------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return dict(self.request("status"))

    def stats(self) -> dict[str, Any]:
        return dict(self.request("stats"))

    def events(self, since: int | None = None, seconds: float | None = None) -> EventPage:
        """The events kept after the cursor `since` and/or within the last `seconds`, typed, and
        the cursor now."""
        params: dict[str, Any] = {}
        if since is not None:
            params["since"] = since
        if seconds is not None:
            params["seconds"] = seconds
        data = dict(self.request("events", **params))
        return EventPage([event_from_json(e) for e in data.get("events") or []], int(data.get("cursor") or 0))

    def cursor(self) -> int:
        """The event cursor now: later events have a higher seq."""
        return self.events(seconds=0).cursor

    def follow(self, since: int) -> Iterator[SlfsEvent]:
        """Events after the cursor `since`, typed, as they come, until the mount shuts down."""
        with mounts.connect(self.entry) as c:
            yield from c.events(since=since)

    # --- scripts ----------------------------------------------------------------------------

    def diag(self, path: str | None = None, *, wait: bool = False, wait_s: float = DIAG_WAIT) -> Diagnostics:
        """Diagnostics of the last compiles (of `path`'s file or folder); with `wait`, first wait up
        to `wait_s` (at most DIAG_WAIT) s for the compile of the last save of the file `path`."""
        if wait and not path:
            raise ClientError("diag: name the file whose compile to wait for", "EINVAL")
        params: dict[str, Any] = {"path": self.path_of(path)} if path else {}
        if wait:
            # The daemon bounds the wait; the request's own deadline only guards against a silent daemon.
            wait_s = min(wait_s, DIAG_WAIT)
            data = self.request("diag", _timeout=wait_s + 30, wait=wait_s, **params)
        else:
            data = self.request("diag", **params)
        diagnostics = data.get("diagnostics", [])
        failed = [f for f in data.get("files", []) if not f.get("compiled", True)]
        return Diagnostics(
            data=data,
            errors=sum(1 for d in diagnostics if str(d.get("level", "")).lower() == "error"),
            notes=[f"{f['path']}: the compile failed; "
                   f"{f.get('note') or 'the previously compiled version keeps running'}" for f in failed],
            timed_out=wait and data.get("waited") is False)

    def build(self, paths: list[str], verb: str = "build") -> Built:
        """Expand and save again the preprocessed scripts under each path (`recompile`: save each
        script's in-world text again, whatever it is)."""
        results: list[dict[str, Any]] = []
        with mounts.connect(self.entry) as c:
            for path in paths:
                try:
                    # No deadline: each save waits for the viewer's compile, and a folder may hold many.
                    results += c.request(verb, _timeout=None, path=self.path_of(path))["results"]
                except ClientError as exc:
                    if exc.connection_lost:
                        raise
                    results.append({"path": path, "status": "failed", "error": exc.message, "code": exc.code})
        return Built(results)

    def set_state(self, word: str, files: list[str]) -> PerFile:
        """run, stop (each waits for the viewer to confirm) or reset each file."""
        results: list[dict[str, Any]] = []
        failures: list[FileFailure] = []
        with mounts.connect(self.entry) as c:
            for f in files:
                sent = self.path_of(f)
                try:
                    results.append(c.request(word, path=sent))
                except ClientError as exc:
                    if exc.connection_lost:
                        raise
                    failures.append(FileFailure(f, exc.message.removeprefix(f"{sent}: "), exc.message, exc.code))
        return PerFile(results, failures)

    # --- objects and the viewer -------------------------------------------------------------

    def open_object(self, object_id: str) -> dict[str, Any]:
        """Ask the viewer to publish an object; its {"path", "uuid"}."""
        return dict(self.request("open", object_id=object_id))

    def close(self, path: str) -> dict[str, Any]:
        """Unpublish the object of the folder `path`."""
        return dict(self.request("close", path=self.path_of(path)))

    def resolve(self, path: str) -> dict[str, Any]:
        """The published object, prim or item at `path`: {"path", "uuid"}; ClientError ENOENT if none."""
        return dict(self.request("resolve", path=self.path_of(path)))

    def listing(self, path: str | None = None, *, recursive: bool = False) -> dict[str, Any]:
        """{"path", "entries": [...]}: the objects, prims and items in the folder `path` (the root
        by default; with `recursive`, everything under it), each with its kind, language, VM, run
        state, permissions, size (null until fetched) and last compile."""
        params: dict[str, Any] = {"recursive": recursive}
        if path:
            params["path"] = self.path_of(path)
        return dict(self.request("list", **params))

    def lookup(self, uuid: str) -> dict[str, Any]:
        """The published object or item of `uuid`: {"path", "uuid"}; ClientError ENOENT if none."""
        return dict(self.request("find", uuid=uuid))

    def locate(self, object_id: str | None, script_id: str | None) -> dict[str, Any]:
        """{"object", "script"} of a launch URI: the object published (asked of the viewer when it
        is not yet), the script found once it is (for up to FIND_TIMEOUT s)."""
        out: dict[str, Any] = {"object": None, "script": None}
        with mounts.connect(self.entry) as c:
            if object_id:
                try:
                    out["object"] = c.request("find", uuid=object_id)
                except ClientError as exc:
                    if exc.code != "ENOENT":
                        raise
                    out["object"] = c.request("open", object_id=object_id)
            if script_id:
                deadline = time.monotonic() + FIND_TIMEOUT
                while True:
                    try:
                        out["script"] = c.request("find", uuid=script_id)
                        break
                    except ClientError as exc:
                        if exc.code != "ENOENT" or time.monotonic() > deadline:
                            raise ClientError(f"script {script_id}: {exc.message}", exc.code) from None
                    time.sleep(0.1)
        return out

    def viewer_command(self, command: str, params: dict[str, Any] | None = None,
                       path: str | None = None) -> dict[str, Any]:
        """Run a viewer command (for the object of the folder `path`, when given); {"result": ...}."""
        request: dict[str, Any] = {"command": command, "params": params or {}}
        if path is not None:
            request["path"] = self.path_of(path)
        return dict(self.request("viewer_command", **request))

    def commands(self) -> Any:
        """The viewer's commands (command.list): {"commands": [...]}."""
        return self.request("commands")

    # --- live sync --------------------------------------------------------------------------

    def live_subscribe(self, temp_path: str) -> dict[str, Any]:
        """Live-sync the viewer's temp file: the live file's {"path", "script_id", "open_cmd", ...}."""
        try:
            return dict(self.request("live_subscribe", temp_path=temp_path))
        except ClientError as exc:
            if exc.code == "EREFUSED":
                raise ClientError(f"{temp_path}: {exc.message}", exc.code) from None
            raise

    def live_list(self) -> dict[str, Any]:
        """The live-synced scripts: {"scripts": [...]}."""
        return dict(self.request("live_list"))

    def live_temp(self, candidates: list[str]) -> LiveTemp:
        """The temp file of the first of `candidates` the viewer live-syncs (`script_list`), if any."""
        try:
            data = self.request("script_list")
        except ClientError as exc:
            if exc.connection_lost:
                raise
            if exc.code == "EINVAL":  # e.g. a Windows temp_dir the mount cannot translate (-o windows_paths)
                return LiveTemp(None, f"script.list: {exc.message}; looking for the script in the published objects")
            return LiveTemp(None)  # a viewer or daemon without live sync: the published objects only
        ids = {str(i).lower() for i in (data or {}).get("script_ids") or []}
        script_id = next((i for i in candidates if i in ids), None)
        if script_id is None or not data.get("temp_dir"):
            return LiveTemp(None)
        temp = find_temp_file(str(data["temp_dir"]), script_id)
        if temp is None:
            return LiveTemp(None, f"script {script_id} is live-synced, but no temp file of it is in "
                                  f"{data['temp_dir']}; looking for it in the published objects")
        return LiveTemp(temp)

    # --- history ----------------------------------------------------------------------------

    def history(self, path: str, *, deleted: bool = False) -> dict[str, Any]:
        """The versions of the item at `path`, newest first ({"path", "item_id", "exists",
        "versions"}); with `deleted`, the items gone from the object or prim at `path` ({"items"})."""
        params: dict[str, Any] = {"path": self.path_of(path)}
        if deleted:
            params["deleted"] = True
        return dict(self.request("history", **params))

    def resend(self, path: str, *, force: bool = False) -> dict[str, Any]:
        """Save the newest recovered text of the item at `path` (ESTALE when it changed in-world
        since that text was based on it, unless `force`); {"path", "recovery", "sent", ...}."""
        params: dict[str, Any] = {"path": self.path_of(path)}
        if force:
            params["force"] = True
        # No deadline: a script's save waits for the viewer's compile.
        return dict(self.request("resend", _timeout=None, **params))

    def restore(self, path: str, version: str | None = None) -> dict[str, Any]:
        """Save a version of the item at `path` (default: the newest that differs from it) as a
        normal save; {"path", "restored", "version", "created", ...}."""
        params: dict[str, Any] = {"path": self.path_of(path)}
        if version:
            params["version"] = version
        # No deadline: a script's save waits for the viewer's compile.
        return dict(self.request("restore", _timeout=None, **params))
