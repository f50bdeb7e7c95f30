"""The control verbs of the `slfs` command line: they talk to a running mount's daemon through its
control socket (slfs/control/server.py documents the protocol).

Every verb takes `--json` (then stdout holds only JSON; errors go to stderr, exit status non-zero)
and `--mount MOUNT`. `slfs events` prints one JSON object per line in both modes (JSON lines).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from . import paths, winpaths
from .control.client import ControlClient, ControlError, NoMount, connect, find_mount, mount_path, read_registry
from .protocol import constants
from .protocol.constants import DEFAULT_PORT, NULL_UUID, RECOMPILE_TARGETS
from .protocol.text import printable
from .stats import render as render_stats

VIEWER_VERBS = {
    "teleport": ("viewer.teleport", "teleport to the object of DIR"),
    "focus": ("viewer.camera.focus", "focus the camera on the object of DIR"),
    "save-back": ("viewer.object.save_back_to_contents", "save the object of DIR back to inventory"),
    "reset-all": ("viewer.script.reset_all", "reset every script of the object of DIR"),
}
URI_PREFIX = "vscode://lindenlab.sl-vscode-plugin/connect"
OPEN_URI_MOUNT_TIMEOUT = 30.0
FIND_TIMEOUT = 10.0
DIAG_WAIT = 70.0  # `slfs diag --wait`: how long the daemon waits for the compile of the last save
EDITOR_GRACE = 0.5  # an editor that exits non-zero this soon failed to start


class VerbError(Exception):
    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# --- parsers -------------------------------------------------------------------------------------


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print only JSON on standard output")
    p.add_argument("--mount", metavar="MOUNT", help="the mount to use (default: from the path, the "
                   "current directory, or the only running mount)")


def add_verb_parsers(sub: Any) -> None:
    """Add the control verbs to the `slfs` subparsers."""
    p = sub.add_parser("status", help="connection state, counts and last error of a mount")
    _common(p)
    p.add_argument("mountpoint", nargs="?", metavar="MOUNT")

    p = sub.add_parser("stats", help="request counts and latencies of a mount (FUSE handlers, viewer calls)")
    _common(p)
    p.add_argument("mountpoint", nargs="?", metavar="MOUNT")

    p = sub.add_parser("diag", help="print diagnostics of the last compiles; exit 1 on errors")
    _common(p)
    p.add_argument("--wait", action="store_true",
                   help=f"first wait (up to {DIAG_WAIT:g} s) for the compile of the last save of FILE")
    p.add_argument("path", nargs="?", metavar="PATH")

    p = sub.add_parser("edit", help="live-sync a script open in the viewer's editor (its external editor "
                       "command: slfs edit \"%%s\") and start your editor on the live file")
    _common(p)
    p.add_argument("--wait", action="store_true", help="return when the editor exits, with its exit status")
    p.add_argument("tempfile", metavar="TEMPFILE")

    p = sub.add_parser("live", help="list the live-synced scripts (slfs edit) and their last compile")
    _common(p)

    p = sub.add_parser("build", help="expand and save again the preprocessed scripts under PATH (after an "
                       "include changed); exit 1 when any failed or has compile errors")
    _common(p)
    p.add_argument("paths", nargs="+", metavar="PATH")

    for verb, what in (("run", "start scripts and wait for the viewer to confirm"),
                       ("stop", "stop scripts and wait for the viewer to confirm"),
                       ("reset", "reset scripts")):
        p = sub.add_parser(verb, help=what)
        _common(p)
        p.add_argument("files", nargs="+", metavar="FILE")

    p = sub.add_parser("events", help="print (or follow) the mount's events, one JSON object per line")
    _common(p)
    p.add_argument("-f", "--follow", action="store_true", help="follow new events until interrupted")
    p.add_argument("--since", metavar="CURSOR|DURATION",
                   help="events after the cursor (an event's seq) or within the duration (30s, 10m, 2h, 1d)")

    p = sub.add_parser("open", help="ask the viewer to publish an object and print its path")
    _common(p)
    p.add_argument("uuid", metavar="UUID")

    p = sub.add_parser("close", help="unpublish the object of DIR")
    _common(p)
    p.add_argument("dir", metavar="DIR")

    for verb, (_command, what) in VIEWER_VERBS.items():
        p = sub.add_parser(verb, help=what)
        _common(p)
        p.add_argument("dir", metavar="DIR")

    p = sub.add_parser("recompile", help="recompile every script of the object of DIR")
    _common(p)
    p.add_argument("--target", required=True, choices=RECOMPILE_TARGETS)
    p.add_argument("dir", metavar="DIR")

    p = sub.add_parser("exec", help="run a viewer command (command.execute)")
    _common(p)
    p.add_argument("exec_command", metavar="COMMAND")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE",
                   help="arguments; a VALUE that parses as JSON is passed as that JSON value, else as a string")

    p = sub.add_parser("commands", help="list the viewer's commands (command.list)")
    _common(p)

    p = sub.add_parser("open-uri", help="handle the viewer's launch URI (vscode://lindenlab.sl-vscode-plugin/...)")
    _common(p)
    p.add_argument("-o", dest="options", action="append", default=[], metavar="OPTIONS",
                   help="uri_ports=P1,P2: ports besides the default viewer port a URI may mount for; "
                        "connect_wait=SECONDS: how long a mount it starts waits for the viewer")
    p.add_argument("uri", metavar="URI")


VERBS = ("status", "stats", "diag", "edit", "live", "build", "run", "stop", "reset", "events", "open", "close",
         *VIEWER_VERBS, "recompile", "exec", "commands", "open-uri")


# --- output --------------------------------------------------------------------------------------


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, default=str) + "\n")
    sys.stdout.flush()


def _err(message: str) -> None:
    print(f"slfs: {message}", file=sys.stderr, flush=True)


class PrintableStream:
    """What a verb prints for people (paths, names, diagnostics, runtime lines: network text) goes
    through `printable`, so no escape sequence reaches the terminal; `--json` output is escaped
    already (json.dumps escapes every control and non-ASCII character)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(printable(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def run_verb(args: argparse.Namespace) -> int:
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(out), PrintableStream(err)  # type: ignore[assignment]
    try:
        return _run_verb(args)
    finally:
        if isinstance(sys.stdout, PrintableStream):
            sys.stdout = out
        if isinstance(sys.stderr, PrintableStream):
            sys.stderr = err


def _run_verb(args: argparse.Namespace) -> int:
    handler = HANDLERS[args.command]
    try:
        return handler(args)
    except VerbError as exc:
        _err(str(exc))
        return exc.status
    except ControlError as exc:
        _err(exc.message)
        return 1
    except BrokenPipeError:
        # The reader went away (`slfs events -f | head`): quietly stop.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        return 130


def _client_for(args: argparse.Namespace, path: str | None = None) -> tuple[dict[str, Any], ControlClient]:
    entry = find_mount(getattr(args, "mount", None), path)
    return entry, connect(entry)


# --- verbs ---------------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    mount = args.mount or args.mountpoint
    entry = find_mount(mount)
    with connect(entry) as c:
        data = c.request("status")
    if args.json:
        _emit_json(data)
    else:
        for key, value in data.items():
            print(f"{key}: {' '.join(str(value).split())}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    entry = find_mount(args.mount or args.mountpoint)
    with connect(entry) as c:
        data = c.request("stats")
    if args.json:
        _emit_json(data)
    else:
        sys.stdout.write(render_stats(data))
    return 0


def cmd_diag(args: argparse.Namespace) -> int:
    wait = getattr(args, "wait", False)
    if wait and not args.path:
        raise VerbError("diag --wait: name the FILE whose compile to wait for", 2)
    entry, c = _client_for(args, args.path)
    with c:
        params: dict[str, Any] = {"path": mount_path(entry, args.path)} if args.path else {}
        if wait:
            # The daemon bounds the wait; the request's own deadline only guards against a silent daemon.
            data = c.request("diag", _timeout=DIAG_WAIT + 30, wait=DIAG_WAIT, **params)
        else:
            data = c.request("diag", **params)
    timed_out = bool(wait) and data.get("waited") is False
    diagnostics = data.get("diagnostics", [])
    errors = sum(1 for d in diagnostics if str(d.get("level", "")).lower() == "error")
    failed = [f for f in data.get("files", []) if not f.get("compiled", True)]
    notes = [f"{f['path']}: the compile failed; {f.get('note') or 'the previously compiled version keeps running'}"
             for f in failed]
    if args.json:
        _emit_json({**data, "errors": errors, "notes": notes})
    else:
        for d in diagnostics:
            print(f"{d['path']}:{d['row']}:{d['column']}: {d['level']}: {d['message']}")
        sys.stdout.flush()
        for note in notes:
            print(f"slfs: {note}", file=sys.stderr)
    if timed_out:
        _err(f"{args.path}: no compile result for its last save within {DIAG_WAIT:g} s; "
             "the diagnostics above may be older")
    # A failed compile fails the build even when the viewer sent no error-level line.
    return 1 if errors or failed or timed_out else 0


def cmd_build(args: argparse.Namespace) -> int:
    results: list[dict[str, Any]] = []
    entry = find_mount(args.mount, args.paths[0])
    with connect(entry) as c:
        for path in args.paths:
            try:
                # No deadline: each save waits for the viewer's compile, and a folder may hold many.
                results += c.request("build", _timeout=None, path=mount_path(entry, path))["results"]
            except ControlError as exc:
                if exc.code in ("ECONNRESET", "ESHUTDOWN"):
                    raise
                results.append({"path": path, "status": "failed", "error": exc.message, "code": exc.code})
    bad = [r for r in results if r["status"] == "failed" or r.get("compiled") is False]
    if args.json:
        _emit_json({"results": results, "failed": len(bad)})
        return 1 if bad else 0
    for r in results:
        print(_build_line(r))
        for d in r.get("diagnostics", []):
            print(f"{d['path']}:{d['row']}:{d['column']}: {d['level']}: {d['message']}")
    sys.stdout.flush()
    return 1 if bad else 0


def _build_line(r: dict[str, Any]) -> str:
    status = r["status"]
    if status == "failed":
        return f"{r['path']}: failed: {r.get('error', '')}"
    if status == "plain":
        return f"{r['path']}: not a preprocessed source; nothing to build"
    if status == "saved":
        return f"{r['path']}: saved, {'compiled' if r.get('compiled', True) else 'compile failed'}"
    return f"{r['path']}: unchanged"


def _per_file(args: argparse.Namespace, kind: str, show: Callable[[dict[str, Any]], str]) -> int:
    results: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    entry = find_mount(args.mount, args.files[0])
    with connect(entry) as c:
        for f in args.files:
            sent = mount_path(entry, f)
            try:
                results.append(c.request(kind, path=sent))
            except ControlError as exc:
                if exc.code in ("ECONNRESET", "ESHUTDOWN"):
                    raise
                # The daemon's message names the path it was sent: say it once, as the user wrote it.
                why = exc.message.removeprefix(f"{sent}: ")
                _err(f"{kind} {f}: {why}")
                failed.append({"path": f, "error": exc.message, "code": exc.code})
    if args.json:
        _emit_json({"results": results, "failed": failed})
    else:
        for r in results:
            print(show(r))
    return 1 if failed else 0


def cmd_run_stop(args: argparse.Namespace) -> int:
    return _per_file(args, args.command, lambda r: f"{r['path']}: {r['state']}")


def cmd_reset(args: argparse.Namespace) -> int:
    return _per_file(args, "reset", lambda r: f"{r['path']}: reset (state: {r['state']})")


DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|d)?\s*$")
UNITS = {None: 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_since(text: str) -> tuple[int | None, float | None]:
    """`--since`: an integer is a cursor (events after that seq); a number with a unit is a
    duration (30s, 10m, 2h, 1d). -> (cursor, seconds)."""
    if re.fullmatch(r"\s*\d+\s*", text):
        return int(text), None
    m = DURATION.match(text)
    if m is None:
        raise VerbError(f"--since {text!r}: give a cursor (an integer) or a duration such as 30s, 10m or 2h", 2)
    return None, float(m.group(1)) * UNITS[m.group(2)]


def cmd_events(args: argparse.Namespace) -> int:
    cursor, seconds = parse_since(args.since) if args.since is not None else (None, None)
    _entry, c = _client_for(args)
    with c:
        if seconds is not None or not args.follow:
            params: dict[str, Any] = {}
            if cursor is not None:
                params["since"] = cursor
            if seconds is not None:
                params["seconds"] = seconds
            data = c.request("events", **params)
            for event in data.get("events", []):
                _emit_json(event)
            if not args.follow:
                return 0
            cursor = int(data.get("cursor", 0))
        try:
            for event in c.subscribe(since=cursor if cursor is not None else 0):
                _emit_json(event)
        except KeyboardInterrupt:
            return 0
    return 0


def cmd_open(args: argparse.Namespace) -> int:
    _entry, c = _client_for(args)
    with c:
        data = c.request("open", object_id=args.uuid)
    if args.json:
        _emit_json(data)
    else:
        print(data["path"])
    return 0


def cmd_close(args: argparse.Namespace) -> int:
    entry, c = _client_for(args, args.dir)
    with c:
        data = c.request("close", path=mount_path(entry, args.dir))
    if args.json:
        _emit_json(data)
    else:
        print(f"{data['path']}: unpublished")
    return 0


def _viewer_command(args: argparse.Namespace, command: str, params: dict[str, Any] | None = None) -> int:
    entry, c = _client_for(args, args.dir)
    with c:
        data = c.request("viewer_command", command=command, params=params or {},
                         path=mount_path(entry, args.dir))
    if args.json:
        _emit_json(data)
    else:
        result = data.get("result")
        # A result that only says it worked ({"success": true}, as viewers answer) is "ok" too.
        plain = result in (None, {}, True) or result == {"success": True}
        print(f"{command}: " + ("ok" if plain else json.dumps(result)))
    return 0


def cmd_viewer_verb(args: argparse.Namespace) -> int:
    return _viewer_command(args, VIEWER_VERBS[args.command][0])


def cmd_recompile(args: argparse.Namespace) -> int:
    return _viewer_command(args, "viewer.script.recompile_all", {"target": args.target})


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE arguments; a VALUE that parses as JSON becomes that value, else it stays a string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise VerbError(f"{pair!r}: arguments are KEY=VALUE", 2)
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def cmd_exec(args: argparse.Namespace) -> int:
    params = parse_params(args.params)
    _entry, c = _client_for(args)
    with c:
        data = c.request("viewer_command", command=args.exec_command, params=params)
    if args.json:
        _emit_json(data)
    else:
        print(json.dumps(data.get("result"), indent=2))
    return 0


def cmd_commands(args: argparse.Namespace) -> int:
    _entry, c = _client_for(args)
    with c:
        data = c.request("commands")
    if args.json:
        _emit_json(data)
        return 0
    commands = data.get("commands", []) if isinstance(data, dict) else []
    for cmd in commands:
        params = cmd.get("params") or {}
        args_text = " ".join(f"{k}={v.get('type', '?')}" + ("" if v.get("required") else "?")
                             for k, v in params.items() if isinstance(v, dict))
        line = cmd.get("command", "?") + (f" {args_text}" if args_text else "")
        if cmd.get("description"):
            line += f"  -- {cmd['description']}"
        print(line)
    return 0


# --- open-uri --------------------------------------------------------------------------------------


def parse_uri(uri: str) -> dict[str, Any]:
    """vscode://lindenlab.sl-vscode-plugin/connect?port=P&object=UUID&script=UUID, percent-decoded
    first (some viewers encode the delimiters) -> {"port", "object", "script"}."""
    text = uri.strip()
    for _ in range(3):  # doubly encoded URIs exist too
        decoded = urllib.parse.unquote(text)
        if decoded == text:
            break
        text = decoded
    if not text.lower().startswith(URI_PREFIX):
        raise VerbError(f"{uri}: not a viewer launch URI ({URI_PREFIX}?port=...&object=...)", 2)
    query = text[len(URI_PREFIX):].lstrip("/").lstrip("?")
    fields: dict[str, str] = {}
    for part in re.split(r"[&;]", query):
        key, _, value = part.partition("=")
        if key:
            fields[key.strip().lower()] = value.strip()
    port_text = fields.get("port", "")
    if not port_text.isdigit() or not 1024 <= int(port_text) <= 65535:
        raise VerbError(f"{uri}: the port must be a number from 1024 to 65535 (got {port_text or 'none'!r})", 2)
    uuid_re = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
    md5_re = re.compile(r"^[0-9a-fA-F]{32}$")  # a live-synced script's script_id
    out: dict[str, Any] = {"port": int(port_text), "object": None, "script": None}
    for key in ("object", "script"):
        value = fields.get(key) or ""
        if value:
            if not uuid_re.match(value) and not (key == "script" and md5_re.match(value)):
                raise VerbError(f"{uri}: {key} {value!r} is not a UUID", 2)
            out[key] = value.lower()
    if out["object"] is None and out["script"] is None:
        raise VerbError(f"{uri}: names neither an object nor a script", 2)
    return out


def _mount_for_port(port: int) -> dict[str, Any] | None:
    for entry in read_registry():
        host, _, p = str(entry.get("endpoint", "")).rpartition(":")
        if p == str(port) and host in ("127.0.0.1", "localhost", "::1", "[::1]"):
            return entry
    return None


# The options `slfs open-uri -o` takes (the rest are the mount's own: `slfs mount -o`).
OPEN_URI_OPTIONS = ("uri_ports", "connect_wait")


def _open_uri_options(items: list[str]) -> tuple[tuple[int, ...], float]:
    """(uri_ports, connect_wait) from `slfs open-uri -o ...` (VerbError 2 for anything else)."""
    from .model.options import parse_options

    named = {opt.strip().partition("=")[0] for group in items for opt in group.split(",")
             if opt.strip() and not opt.strip().isdigit()}  # a bare number continues uri_ports=
    other = sorted(named - set(OPEN_URI_OPTIONS))
    if other:
        raise VerbError(f"open-uri takes -o {' and -o '.join(OPEN_URI_OPTIONS)} only, not -o {', '.join(other)} "
                        "(those are mount options: slfs mount -o)", 2)
    try:
        options = parse_options(items)
    except ValueError as exc:
        raise VerbError(f"open-uri: {exc}", 2) from None
    return options.uri_ports, options.connect_wait or OPEN_URI_MOUNT_TIMEOUT


def _check_uri_port(uri: str, port: int, uri_ports: tuple[int, ...]) -> None:
    """A URI comes from a browser, so from any web page: it starts a mount (a connection to
    whatever listens on its port) only for the default viewer port or one the user listed."""
    default = _default_port()
    if port == default or port in uri_ports:
        return
    listed = f" nor in -o uri_ports={','.join(map(str, uri_ports))}" if uri_ports else " and not listed in -o uri_ports"
    _edit_log(f"open-uri {uri}: refused: port {port}")
    raise VerbError(f"{uri}: port {port} is not the default viewer port ({default}){listed}; not mounting for it "
                    f"(a web page can open such a URI; if your viewer listens on {port}, add -o uri_ports={port} "
                    "to the URI handler's command line, or mount it yourself: slfs mount --port "
                    f"{port} MOUNTPOINT)", 2)


def _start_mount(port: int, connect_wait: float = OPEN_URI_MOUNT_TIMEOUT) -> dict[str, Any]:
    """`slfs mount --port PORT ~/sl` in the background (~/sl-PORT when ~/sl is taken); returns its
    registry entry once the daemon answers on its control socket. The daemon unmounts and exits
    when no viewer connects within `connect_wait` (a URI's port may have none of ours)."""
    home = Path.home()
    taken = {str(e.get("mountpoint")) for e in read_registry()}
    mountpoint = home / "sl"
    if str(mountpoint) in taken or os.path.realpath(mountpoint) in taken or os.path.ismount(mountpoint):
        mountpoint = home / f"sl-{port}"
    mountpoint.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([sys.executable, "-m", "slfs", "mount", "--port", str(port),
                          "-o", f"connect_wait={connect_wait:g}", str(mountpoint)],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=OPEN_URI_MOUNT_TIMEOUT + 5, check=False)
    if res.returncode != 0:
        raise VerbError(f"could not mount {mountpoint} for port {port}: "
                        f"{(res.stderr or res.stdout).strip() or f'exit status {res.returncode}'}")
    print(res.stdout.strip(), file=sys.stderr)
    real = os.path.realpath(mountpoint)
    entry = next((e for e in read_registry() if e.get("mountpoint") == real), None)
    if entry is None:
        raise VerbError(f"{mountpoint}: mounted, but the daemon is not in the registry")
    return entry


def _wait_connected(entry: dict[str, Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    state = "unknown"
    while time.monotonic() < deadline:
        try:
            with connect(entry) as c:
                status = c.request("status", _timeout=max(0.5, deadline - time.monotonic()))
            state = str(status.get("state"))
            if state == "connected":
                return
            detail = status.get("state_detail") or status.get("last_error")
            if detail:
                state = f"{state} ({detail})"
        except ControlError as exc:
            state = exc.message
        time.sleep(0.1)
    raise VerbError(f"{entry.get('mountpoint')}: not connected to the viewer on {entry.get('endpoint')} "
                    f"within {timeout:g} s (state: {state})")


# --- live sync: slfs edit, slfs live ---------------------------------------------------------------


def _default_port() -> int:
    """The port `slfs mount` uses without --port (slfs.cli._default_port)."""
    try:
        return int(os.environ.get("SLFS_PORT", DEFAULT_PORT))
    except ValueError:
        return DEFAULT_PORT


def parse_temp_name(path: str) -> tuple[str | None, str, str]:
    """The viewer's temp file name -> (script name, or None for the fallback name; script_id in lower
    case; extension). VerbError (exit status 2) when the name is not one of the viewer's. The viewer
    under Wine or on Windows (slfs in WSL2) names it by its Windows path: `\\` separates too."""
    base = winpaths.basename(path)
    parsed = constants.parse_temp_name(base)
    if parsed is not None:
        return parsed
    raise VerbError(f"{path}: not a temp file of the viewer's script editor (sl_script_NAME_ID.lsl or .luau, "
                    "ID being 32 hex digits); set the viewer's external editor to: slfs edit \"%s\"", 2)


def edit_log_path() -> Path:
    return paths.state_dir() / "edit.log"


EDIT_LOG_MAX = 1 << 20  # edit.log is moved to edit.log.1 beyond this size


def _edit_log(message: str) -> None:
    """A line in edit.log: the viewer starts `slfs edit` without a terminal, so this is where a user
    sees what was started and why no editor window appeared. Never fails."""
    try:
        log = edit_log_path()
        paths.ensure(log.parent)
        try:
            if log.stat().st_size > EDIT_LOG_MAX:
                os.replace(log, log.with_name(log.name + ".1"))
        except FileNotFoundError:
            pass
        with open(log, "a", encoding="utf-8", opener=paths.private_opener) as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} slfs[{os.getpid()}]: {message}\n")
    except OSError:
        pass


def _edit_note(message: str) -> None:
    """On standard error and in edit.log."""
    _err(message)
    _edit_log(message)


_TEMPLATE = re.compile(r"\{path\}|\{line\}")


def editor_argv(path: str, open_cmd: str | None, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """The argument vector of the user's editor on `path`, and where it came from: the mount's
    `-o open_cmd` (split into words as the daemon does, `{path}` replaced, `{line}` being 1, the path
    appended when no word has `{path}`), else $VISUAL, else $EDITOR (split into words, the path
    appended), else xdg-open. Never a shell command line: the path stays one argument."""
    environ = os.environ if env is None else env
    if open_cmd and open_cmd.strip():
        try:
            words = shlex.split(open_cmd)
        except ValueError as exc:
            raise VerbError(f"-o open_cmd={open_cmd!r}: {exc}") from None
        argv = [_TEMPLATE.sub(lambda m: path if m.group(0) == "{path}" else "1", w) for w in words]
        if not any("{path}" in w for w in words):
            argv.append(path)
        return argv, "open_cmd"
    for var in ("VISUAL", "EDITOR"):
        value = environ.get(var, "")
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise VerbError(f"${var}={value!r}: {exc}") from None
        if words:
            return [*words, path], f"${var}"
    return ["xdg-open", path], "xdg-open"


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _log_tail(log: Path, offset: int, limit: int = 2000) -> str:
    """What the editor wrote to edit.log since `offset`, on one line, shortened."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= limit else "..." + text[-limit:]


def run_editor(live: dict[str, Any], out: dict[str, Any], *, wait: bool, json_out: bool) -> int:
    """Start the user's editor on the live file `live["path"]`; print `out["path"]` (or `out` as
    JSON, with "editor" added) once it runs. Without `wait` the editor is detached (its own session,
    stdin from /dev/null, its output appended to edit.log) and this returns at once, or exits 1
    when the editor is not found or exits non-zero within EDITOR_GRACE seconds; with `wait` it runs
    on our terminal and its exit status is returned."""
    argv, source = editor_argv(str(live["path"]), live.get("open_cmd"))
    _edit_note(f"starting the editor ({source}): {shlex.join(argv)}")
    log = edit_log_path()
    offset: int | None = None  # where the editor's output starts in edit.log
    sink: Any = subprocess.DEVNULL
    if not wait:
        try:
            paths.ensure(log.parent)
            sink = open(log, "ab", opener=paths.private_opener)  # noqa: SIM115 - closed below, the child keeps its copy
            offset = sink.tell()
        except OSError:
            sink = subprocess.DEVNULL
    try:
        if wait:
            # Our stdin and stderr, so a terminal editor works in the terminal slfs edit runs in;
            # stdout too unless it must hold only JSON.
            proc = subprocess.Popen(argv, stdout=2 if json_out else None, close_fds=True)
        else:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, close_fds=True,
                                    start_new_session=True)
    except OSError as exc:
        raise VerbError(f"the editor ({source}) could not be started: {shlex.join(argv)}: "
                        f"{exc.strerror or exc}") from None
    finally:
        if sink is not subprocess.DEVNULL:
            sink.close()
    out["editor"] = {"argv": argv, "source": source, "pid": proc.pid}
    if wait:
        if not json_out:
            print(out["path"], flush=True)
        status = _exit_status(proc.wait())
        out["editor"]["status"] = status
        if status:
            _edit_note(f"the editor ({source}) exited with status {status}: {shlex.join(argv)}")
        if json_out:
            _emit_json(out)
        return status
    try:
        returncode: int | None = proc.wait(EDITOR_GRACE)
    except subprocess.TimeoutExpired:
        returncode = None
    if returncode:
        tail = _log_tail(log, offset) if offset is not None else ""
        raise VerbError(f"the editor ({source}) exited with status {_exit_status(returncode)} at once: "
                        f"{shlex.join(argv)}" + (f": {tail}" if tail else ""))
    if returncode is None:
        # It outlives us: no zombie is left to reap, and no warning about a child still running.
        proc.returncode = 0
    if json_out:
        _emit_json(out)
    else:
        print(out["path"], flush=True)
    return 0


def live_subscribe(c: ControlClient, temp_path: str) -> dict[str, Any]:
    """Ask the daemon to subscribe to the viewer's temp file; a refusal is a VerbError (exit 1)."""
    try:
        data: dict[str, Any] = c.request("live_subscribe", temp_path=temp_path)
    except ControlError as exc:
        if exc.code == "EREFUSED":
            raise VerbError(f"{temp_path}: {exc.message}") from None
        raise
    return data


def _edit_mount(mount: str | None) -> dict[str, Any]:
    """The mount `slfs edit` uses: --mount, else as the other verbs find it, else (several running)
    the one of the default port, else (none running) a new one of the default port at ~/sl, as
    `slfs open-uri` does; connected to the viewer."""
    if mount:
        entry = find_mount(mount)
    else:
        try:
            entry = find_mount()
        except NoMount as exc:
            port = _default_port()
            found = _mount_for_port(port)
            if found is not None:
                entry = found
            elif exc.code == "ENOENT":
                _edit_note(f"no slfs mount is running: mounting one for port {port}")
                entry = _start_mount(port)
            else:
                raise
    _wait_connected(entry, OPEN_URI_MOUNT_TIMEOUT)
    return entry


def cmd_edit(args: argparse.Namespace) -> int:
    _edit_log("slfs edit " + shlex.join([*(["--mount", args.mount] if args.mount else []),
                                         *(["--wait"] if args.wait else []), args.tempfile]))
    try:
        parse_temp_name(args.tempfile)
        # A Windows path (the viewer under Wine, or on Windows with slfs in WSL2) goes to the daemon
        # as the viewer gave it: the daemon translates it with the mount's -o windows_paths options,
        # as it does the handshake's challenge file.
        temp_path = args.tempfile if winpaths.is_windows_path(args.tempfile) else os.path.abspath(args.tempfile)
        entry = _edit_mount(args.mount)
        with connect(entry) as c:
            live = live_subscribe(c, temp_path)
        return run_editor(live, {**live, "mount": entry["mountpoint"]}, wait=args.wait, json_out=args.json)
    except (VerbError, ControlError) as exc:
        _edit_log(f"error: {exc}")  # run_verb prints it on standard error
        raise


def _live_line(s: dict[str, Any]) -> str:
    compiled = s.get("compiled")
    if compiled is None:
        last = "none"
    elif compiled:
        last = "ok"
    else:
        n = int(s.get("errors") or 0)
        last = f"failed ({n} error{'' if n == 1 else 's'})"
    item = f"  item {s['item']}" if s.get("item") else ""
    return f"{s.get('path')}  {s.get('script_id')}{item}  last compile: {last}"


def cmd_live(args: argparse.Namespace) -> int:
    _entry, c = _client_for(args)
    with c:
        data = c.request("live_list")
    if args.json:
        _emit_json(data)
    else:
        for s in data.get("scripts", []):
            print(_live_line(s))
    return 0


def find_temp_file(temp_dir: str, script_id: str) -> str | None:
    """The viewer's temp file of `script_id` in `temp_dir` (sl_script_*_ID.lsl|.luau or
    sl_script_ID.lsl|.luau, the ID compared in any case), the newest when several; else None."""
    want = script_id.lower()
    hits: list[tuple[float, str]] = []
    try:
        names = os.listdir(temp_dir)
    except OSError:
        return None
    for name in names:
        parsed = constants.parse_temp_name(name)
        if parsed is None or parsed[1] != want:
            continue
        path = os.path.join(temp_dir, name)
        try:
            hits.append((os.stat(path).st_mtime, path))
        except OSError:
            continue
    return max(hits)[1] if hits else None




def live_ids(script: str, object_id: str | None) -> list[str]:
    """The script_ids a launch URI's `script=` may mean: the value itself, and, for an item UUID,
    the MD5 of `<prim uuid>_<item uuid>` the viewer names its temp file by (the null prim for an
    inventory script)."""
    script = script.lower()
    if len(script) != 36:
        return [script]
    prims = [object_id.lower()] if object_id else []
    return [script, *(hashlib.md5(f"{prim}_{script}".encode()).hexdigest() for prim in [*prims, NULL_UUID])]


def _live_temp_for(entry: dict[str, Any], candidates: list[str]) -> str | None:
    """The temp file of the first of `candidates` the viewer live-syncs (`script_list`), else None."""
    with connect(entry) as c:
        try:
            data = c.request("script_list")
        except ControlError as exc:
            if exc.code in ("ECONNRESET", "ESHUTDOWN"):
                raise
            if exc.code == "EINVAL":  # e.g. a Windows temp_dir the mount cannot translate (-o windows_paths)
                _err(f"script.list: {exc.message}; looking for the script in the published objects")
            return None  # a viewer or daemon without live sync: the published objects only
    ids = {str(i).lower() for i in (data or {}).get("script_ids") or []}
    script_id = next((i for i in candidates if i in ids), None)
    if script_id is None or not data.get("temp_dir"):
        return None
    temp = find_temp_file(str(data["temp_dir"]), script_id)
    if temp is None:
        _err(f"script {script_id} is live-synced, but no temp file of it is in {data['temp_dir']}; "
             "looking for it in the published objects")
    return temp


def cmd_open_uri(args: argparse.Namespace) -> int:
    uri_ports, connect_wait = _open_uri_options(getattr(args, "options", []))
    target = parse_uri(args.uri)
    port = target["port"]
    wait = OPEN_URI_MOUNT_TIMEOUT
    if args.mount:
        entry = find_mount(args.mount)  # a mount the user names: theirs, whatever its port
    else:
        found = _mount_for_port(port)  # a mount the user started for the port: used as it is
        if found is None:
            _check_uri_port(args.uri, port, uri_ports)
            found, wait = _start_mount(port, connect_wait), connect_wait
        entry = found
    _wait_connected(entry, wait)
    out: dict[str, Any] = {"mount": entry["mountpoint"], "port": port, "object": None, "script": None}
    temp = _live_temp_for(entry, live_ids(target["script"], target["object"])) if target["script"] else None
    if temp is not None:
        # A script open in the viewer's own editor: live-sync it as `slfs edit TEMPFILE` would.
        try:
            with connect(entry) as c:
                live = live_subscribe(c, temp)
            out.update(live=live, path=live["path"])
            return run_editor(live, out, wait=False, json_out=args.json)
        except (VerbError, ControlError) as exc:
            _edit_log(f"open-uri {args.uri}: error: {exc}")
            raise
    with connect(entry) as c:
        if target["object"]:
            try:
                out["object"] = c.request("find", uuid=target["object"])
            except ControlError as exc:
                if exc.code != "ENOENT":
                    raise
                out["object"] = c.request("open", object_id=target["object"])
        if target["script"]:
            deadline = time.monotonic() + FIND_TIMEOUT
            while True:
                try:
                    out["script"] = c.request("find", uuid=target["script"])
                    break
                except ControlError as exc:
                    if exc.code != "ENOENT" or time.monotonic() > deadline:
                        raise ControlError(f"script {target['script']}: {exc.message}", exc.code) from None
                time.sleep(0.1)
    out["path"] = (out["script"] or out["object"])["path"]
    if args.json:
        _emit_json(out)
    else:
        print(out["path"])
    return 0


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "status": cmd_status,
    "stats": cmd_stats,
    "diag": cmd_diag,
    "edit": cmd_edit,
    "live": cmd_live,
    "build": cmd_build,
    "run": cmd_run_stop,
    "stop": cmd_run_stop,
    "reset": cmd_reset,
    "events": cmd_events,
    "open": cmd_open,
    "close": cmd_close,
    **{verb: cmd_viewer_verb for verb in VIEWER_VERBS},
    "recompile": cmd_recompile,
    "exec": cmd_exec,
    "commands": cmd_commands,
    "open-uri": cmd_open_uri,
}

__all__ = ["HANDLERS", "VERBS", "NoMount", "add_verb_parsers", "editor_argv", "find_temp_file", "parse_params",
           "parse_since", "parse_temp_name", "parse_uri", "run_editor", "run_verb"]
