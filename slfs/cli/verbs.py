"""The control verbs of the `slfs` command line: their arguments and what they print, over the client
layer (slfs/client), which talks to a running mount's daemon through its control socket
(slfs/control/server.py documents the protocol). `slfs edit` and `slfs open-uri` do more: edit.py, uri.py.

Every verb takes `--json` (then stdout holds only JSON; errors go to stderr, exit status non-zero)
and `--mount MOUNT`. `slfs events --json` prints one JSON object per line (JSON lines); without it,
one line for people per event (human.py), as `slfs status` on a terminal adds a per-object summary.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from .. import jsontext
from ..client import ClientError, MountClient
from ..client.operations import DIAG_WAIT
from ..event_types import SlfsEvent
from ..protocol.constants import RECOMPILE_TARGETS
from ..stats import render as render_stats
from ..status_text import status_values
from .human import event_line, is_terminal, object_summary, use_colour, write_raw
from .output import PrintableStream, VerbError, begin_run, emit_json, emit_json_error, err
from .push import add_parsers as add_push_parsers
from .push import cmd_pull, cmd_push

VIEWER_VERBS = {
    "teleport": ("viewer.teleport", "teleport to the object of DIR"),
    "focus": ("viewer.camera.focus", "focus the camera on the object of DIR"),
    "save-back": ("viewer.object.save_back_to_contents", "save the object of DIR back to inventory"),
    "reset-all": ("viewer.script.reset_all", "reset every script of the object of DIR"),
}


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

    p = sub.add_parser("events", help="print (or follow) the mount's events: a line each (--json: a JSON object each)")
    _common(p)
    p.add_argument("-f", "--follow", action="store_true",
                   help="follow new events from now on (with --since: from then) until interrupted or the mount "
                        "goes away")
    p.add_argument("--since", metavar="CURSOR|DURATION",
                   help="events after the cursor (an event's seq) or within the duration (30s, 10m, 2h, 1d)")

    p = sub.add_parser("top", help="a live full-screen view of the mount: objects, scripts and their run state, "
                       "compiles, runtime output and events (keys: r run, s stop, x reset, e edit, d diagnostics, "
                       "/ filter, q quit)")
    _common(p)
    p.add_argument("--once", action="store_true", help="print one frame as text and exit")

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

    p = sub.add_parser("recompile", help="recompile one script (FILE: its in-world text saved again, which "
                       "resets it), or with --target every script of the object of the path")
    _common(p)
    p.add_argument("--target", choices=RECOMPILE_TARGETS,
                   help="recompile every script of the object for this VM (viewer.script.recompile_all)")
    p.add_argument("dir", metavar="FILE|DIR")

    p = sub.add_parser("exec", help="run a viewer command (command.execute)")
    _common(p)
    p.add_argument("exec_command", metavar="COMMAND")
    p.add_argument("params", nargs="*", metavar="KEY=VALUE",
                   help="arguments; a VALUE that parses as JSON is passed as that JSON value, else as a string")

    p = sub.add_parser("commands", help="list the viewer's commands (command.list)")
    _common(p)

    p = sub.add_parser("history", help="list the versions of FILE kept in the history, newest first "
                       "(with --deleted: the items gone from the object of DIR)")
    _common(p)
    p.add_argument("--deleted", action="store_true", help="list the items deleted from the object or prim PATH")
    p.add_argument("path", metavar="PATH")

    p = sub.add_parser("restore", help="save a version of FILE from the history (default: the newest that "
                       "differs from what FILE holds) as a normal save")
    _common(p)
    p.add_argument("path", metavar="FILE")
    p.add_argument("version", nargs="?", metavar="VERSION",
                   help="a version's name as `slfs history` lists it (or a prefix, or its id)")

    p = sub.add_parser("resend", help="save the newest recovered text of FILE (a save that failed; `slfs status` "
                       "lists them) as a normal save")
    _common(p)
    p.add_argument("--force", action="store_true",
                   help="send it even though the item changed in-world since the text was based on it")
    p.add_argument("path", metavar="FILE")

    add_push_parsers(sub, _common)

    p = sub.add_parser("open-uri", help="handle the viewer's launch URI (vscode://lindenlab.sl-vscode-plugin/...)")
    _common(p)
    p.add_argument("-o", dest="options", action="append", default=[], metavar="OPTIONS",
                   help="uri_ports=P1,P2: ports besides the default viewer port a URI may mount for; "
                        "connect_wait=SECONDS: how long a mount it starts waits for the viewer")
    p.add_argument("uri", metavar="URI")


VERBS = ("status", "stats", "diag", "edit", "live", "build", "run", "stop", "reset", "events", "top", "open",
         "close",
         *VIEWER_VERBS, "recompile", "exec", "commands", "open-uri", "history", "restore",
         "resend", "push", "pull")


def run_verb(args: argparse.Namespace) -> int:
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(stdout), PrintableStream(stderr)  # type: ignore[assignment]
    try:
        return _run_verb(args)
    finally:
        if isinstance(sys.stdout, PrintableStream):
            sys.stdout = stdout
        if isinstance(sys.stderr, PrintableStream):
            sys.stderr = stderr


def _run_verb(args: argparse.Namespace) -> int:
    handler = HANDLERS[args.command]
    begin_run()
    try:
        return handler(args)
    except VerbError as exc:
        err(str(exc))
        if getattr(args, "json", False):
            emit_json_error(str(exc), None, exc.status)
        return exc.status
    except ClientError as exc:
        err(exc.message)
        if getattr(args, "json", False):
            emit_json_error(exc.message, exc.code, 1)
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



# --- verbs ---------------------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    client = MountClient.find(args.mount or args.mountpoint)
    data = client.status()
    if args.json:
        emit_json(data)
        return 0
    for key, value in data.items():
        for shown in status_values(key, value):
            print(f"{key}: {' '.join(shown.split())}")
    if is_terminal(sys.stdout):
        _status_summary(client)
    return 0


def _status_summary(client: MountClient) -> None:
    """On a terminal: a line per published object, its scripts running/stopped/faulted and failing
    compiles (a listing the daemon answers from what it knows; nothing is fetched)."""
    try:
        listing = client.listing(recursive=True)
    except ClientError as exc:
        err(f"no per-object summary: {exc.message}")
        return
    colour = use_colour(sys.stdout)
    lines = object_summary(listing.get("entries", []), str(client.entry["mountpoint"]), colour)
    sys.stdout.flush()
    write_raw(sys.stdout, "\nscripts per object:\n" + "".join(line + "\n" for line in lines) if lines
              else "\nscripts per object: no object is published\n")


def cmd_stats(args: argparse.Namespace) -> int:
    data = MountClient.find(args.mount or args.mountpoint).stats()
    if args.json:
        emit_json(data)
    else:
        sys.stdout.write(render_stats(data))
    return 0


def _diagnostic_line(d: dict[str, Any]) -> str:
    return f"{d['path']}:{d['row']}:{d['column']}: {d['level']}: {d['message']}"


def cmd_diag(args: argparse.Namespace) -> int:
    wait = getattr(args, "wait", False)
    if wait and not args.path:
        raise VerbError("diag --wait: name the FILE whose compile to wait for", 2)
    result = MountClient.find(args.mount, args.path).diag(args.path, wait=wait)
    if args.json:
        emit_json(result.as_json())
    else:
        for d in result.data.get("diagnostics", []):
            print(_diagnostic_line(d))
        sys.stdout.flush()
        for note in result.notes:
            print(f"slfs: {note}", file=sys.stderr)
    if result.timed_out:
        err(f"{args.path}: no compile result for its last save within {DIAG_WAIT:g} s; "
            "the diagnostics above may be older")
    return 1 if result.failed else 0


def _build_line(r: dict[str, Any]) -> str:
    status = r["status"]
    if status == "failed":
        return f"{r['path']}: failed: {r.get('error', '')}"
    if status == "plain":
        return f"{r['path']}: not a preprocessed source; nothing to build"
    if status == "saved":
        return f"{r['path']}: saved, {'compiled' if r.get('compiled', True) else 'compile failed'}"
    return f"{r['path']}: unchanged"


def cmd_build(args: argparse.Namespace) -> int:
    built = MountClient.find(args.mount, args.paths[0]).build(args.paths)
    bad = built.bad
    if args.json:
        emit_json({"results": built.results, "failed": len(bad)})
        return 1 if bad else 0
    for r in built.results:
        print(_build_line(r))
        for d in r.get("diagnostics", []):
            print(_diagnostic_line(d))
    sys.stdout.flush()
    return 1 if bad else 0


def _per_file(args: argparse.Namespace, word: str, show: Callable[[dict[str, Any]], str]) -> int:
    done = MountClient.find(args.mount, args.files[0]).set_state(word, args.files)
    for f in done.failures:
        err(f"{word} {f.path}: {f.reason}")
    if args.json:
        emit_json({"results": done.results, "failed": [f.as_json() for f in done.failures]})
    else:
        for r in done.results:
            print(show(r))
    return 1 if done.failures else 0


def cmd_run_stop(args: argparse.Namespace) -> int:
    return _per_file(args, args.command, lambda r: f"{r['path']}: {r['state']}")


def cmd_reset(args: argparse.Namespace) -> int:
    return _per_file(args, "reset", lambda r: f"{r['path']}: reset (state: {r['state']}"
                     + ("" if r.get("confirmed") else ", not yet confirmed by the viewer") + ")")


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
    client = MountClient.find(args.mount)
    colour = use_colour(sys.stdout)

    def show(event: SlfsEvent) -> None:
        if args.json:
            emit_json(event.to_json())  # the JSON the daemon sent (event_types keeps what it did not know)
        else:
            write_raw(sys.stdout, event_line(event, colour) + "\n")

    if args.follow and args.since is None:
        cursor = client.cursor()  # like tail -f: from the end (--since for the past)
    elif seconds is not None or not args.follow:
        page = client.events(cursor, seconds)
        for event in page.events:
            show(event)
        if not args.follow:
            return 0
        cursor = page.cursor
    try:
        for event in client.follow(cursor or 0):
            show(event)
    except KeyboardInterrupt:
        return 0
    except ClientError as exc:
        if not exc.connection_lost:
            raise
    err(f"{client.entry['mountpoint']}: the mount went away (unmounted, or its daemon stopped); "
        "no more events")
    return 0


def cmd_top(args: argparse.Namespace) -> int:
    from .top import cmd_top  # the view's modules: only for this verb

    return cmd_top(args)


def cmd_open(args: argparse.Namespace) -> int:
    data = MountClient.find(args.mount).open_object(args.uuid)
    if args.json:
        emit_json(data)
    else:
        print(data["path"])
    return 0


def cmd_close(args: argparse.Namespace) -> int:
    data = MountClient.find(args.mount, args.dir).close(args.dir)
    if args.json:
        emit_json(data)
    else:
        print(f"{data['path']}: unpublished")
    return 0


def _viewer_command(args: argparse.Namespace, command: str, params: dict[str, Any] | None = None) -> int:
    data = MountClient.find(args.mount, args.dir).viewer_command(command, params, args.dir)
    if args.json:
        emit_json(data)
    else:
        result = data.get("result")
        # A result that only says it worked ({"success": true}, as viewers answer) is "ok" too.
        plain = result in (None, {}, True) or result == {"success": True}
        print(f"{command}: " + ("ok" if plain else json.dumps(result)))
    return 0


def cmd_viewer_verb(args: argparse.Namespace) -> int:
    return _viewer_command(args, VIEWER_VERBS[args.command][0])


def cmd_recompile(args: argparse.Namespace) -> int:
    if args.target is not None:  # every script of the object of the path, as before
        return _viewer_command(args, "viewer.script.recompile_all", {"target": args.target})
    if os.path.isdir(args.dir):
        raise VerbError(f"{args.dir}: every script of an object is recompiled for a VM: give --target "
                        f"({'|'.join(RECOMPILE_TARGETS)}); a FILE alone is recompiled as it is", 2)
    done = MountClient.find(args.mount, args.dir).build([args.dir], verb="recompile")
    if args.json:
        emit_json({"results": done.results, "failed": len(done.bad)})
        return 1 if done.bad else 0
    for r in done.results:
        print(_build_line(r).replace(": saved,", ": recompiled,"))
        for d in r.get("diagnostics", []):
            print(_diagnostic_line(d))
    return 1 if done.bad else 0


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """KEY=VALUE arguments; a VALUE that parses as JSON becomes that value, else it stays a string."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise VerbError(f"{pair!r}: arguments are KEY=VALUE", 2)
        try:
            out[key] = jsontext.loads(value)
        except ValueError:  # not JSON, or JSON too deep to decode: the text as it is
            out[key] = value
    return out


def cmd_exec(args: argparse.Namespace) -> int:
    params = parse_params(args.params)
    data = MountClient.find(args.mount).viewer_command(args.exec_command, params)
    if args.json:
        emit_json(data)
    else:
        print(json.dumps(data.get("result"), indent=2))
    return 0


def cmd_commands(args: argparse.Namespace) -> int:
    data = MountClient.find(args.mount).commands()
    if args.json:
        emit_json(data)
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
    data = MountClient.find(args.mount).live_list()
    if args.json:
        emit_json(data)
    else:
        for s in data.get("scripts", []):
            print(_live_line(s))
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    from .edit import cmd_edit  # subprocess, shlex and edit.log: only for this verb

    return cmd_edit(args)


def cmd_open_uri(args: argparse.Namespace) -> int:
    from .uri import cmd_open_uri

    return cmd_open_uri(args)


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def cmd_history(args: argparse.Namespace) -> int:
    client = MountClient.find(args.mount, args.path)
    if args.deleted:
        data = client.history(args.path, deleted=True)
        if args.json:
            emit_json(data)
            return 0
        for i in data["items"]:
            how = "deleted" if i["deleted"] else f"gone (last seen {i['last_origin']})"
            print(f"{i['name']}\t{how} {_when(i['gone_at'])}\t{i['versions']} version(s)\t{i['path']}")
        return 0
    data = client.history(args.path)
    if args.json:
        emit_json(data)
        return 0
    for v in data["versions"]:
        print(f"{v['name']}\t{v['origin']}\t{v['size']} bytes{chr(9) + 'current' if v['current'] else ''}")
    if not data["versions"]:
        err(f"{args.path}: no versions in the history")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    data = MountClient.find(args.mount, args.path).restore(args.path, args.version)
    failed = data.get("compiled") is False
    if args.json:
        emit_json(data)
        return 1 if failed else 0
    verb = "created again from" if data["created"] else "restored"
    compiled = "" if "compiled" not in data else (", compiled" if data["compiled"] else ", compile failed")
    print(f"{data['path']}: {verb} {data['restored']}{compiled}")
    for d in data.get("diagnostics", []):
        print(_diagnostic_line(d))
    return 1 if failed else 0


def cmd_resend(args: argparse.Namespace) -> int:
    data = MountClient.find(args.mount, args.path).resend(args.path, force=args.force)
    failed = data.get("compiled") is False
    if args.json:
        emit_json(data)
        return 1 if failed else 0
    if not data["sent"]:
        print(f"{data['path']}: {data.get('note', 'not sent')}")
        return 0
    compiled = "" if "compiled" not in data else (", compiled" if data["compiled"] else ", compile failed")
    print(f"{data['path']}: resent from {data['recovery'] or 'the text kept in memory'}{compiled}")
    for d in data.get("diagnostics", []):
        print(_diagnostic_line(d))
    return 1 if failed else 0


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
    "top": cmd_top,
    "open": cmd_open,
    "close": cmd_close,
    **{verb: cmd_viewer_verb for verb in VIEWER_VERBS},
    "recompile": cmd_recompile,
    "exec": cmd_exec,
    "commands": cmd_commands,
    "open-uri": cmd_open_uri,
    "history": cmd_history,
    "restore": cmd_restore,
    "resend": cmd_resend,
    "push": cmd_push,
    "pull": cmd_pull,
}
