"""`slfs push` and `slfs pull` (the logic: slfs/client/push.py).

    slfs push [--plan] [--delete] [--stopped] [--force] [--no-rollback] [--verbose] [--json] [--mount M] SRC DEST
    slfs push --watch [--exec CMD] [--delay S] ... SRC DEST
    slfs pull [--delete] [--json] OBJECT_DIR LOCAL_DIR

Text: one line per item on stdout (`create PATH`, `update PATH`, `unchanged PATH` with
--verbose, `delete PATH`, `skip PATH: reason`, `conflict PATH: reason`), then on a failure the
failing item's diagnostics as `SRC/path:ROW:COL: error: MESSAGE`; messages on stderr; a progress bar
on stderr when it is a terminal. --json: one object per item (and per step while applying, with
"phase"), then {"summary": {...}, "exit": N}. Exit 0, 1 on a failure or a refused conflict, 130
when interrupted (after the rollback), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from typing import Any

from ..client import ClientError, MountClient
from ..client import pull as pulling
from ..client import push as pushing
from ..client import push_plan as planning
from ..client.push import Outcome, Pusher
from ..client.push_plan import Bases, Plan, Step
from ..protocol.text import printable
from .output import VerbError, emit_json, err

DELAY = 1.0  # --watch: how long a burst of changes may go on before the push


def add_parsers(sub: Any, common: Any) -> None:
    p = sub.add_parser("push", help="deploy a local tree onto an object as one step: plan, saves held stopped, "
                       "started together, rolled back on any failure")
    common(p)
    p.add_argument("--plan", action="store_true", help="print what would change, change nothing")
    p.add_argument("--delete", action="store_true", help="delete in-world items that have no local file")
    p.add_argument("--stopped", action="store_true", help="leave every script the push saves stopped")
    p.add_argument("--force", action="store_true", help="overwrite items changed in-world since the last push/pull")
    p.add_argument("--no-rollback", action="store_true", help="on a failure, leave what was saved")
    p.add_argument("--verbose", "-v", action="store_true", help="list unchanged items too")
    p.add_argument("--watch", action="store_true", help="push again whenever SRC changes, until interrupted")
    p.add_argument("--exec", dest="exec_cmd", metavar="CMD",
                   help="with --watch: run CMD (no shell) before each push; a failing CMD skips that push")
    p.add_argument("--delay", type=float, default=DELAY, metavar="S",
                   help=f"with --watch: wait for S seconds of quiet before pushing (default {DELAY:g})")
    p.add_argument("src", metavar="SRC")
    p.add_argument("dest", metavar="DEST")

    p = sub.add_parser("pull", help="copy an object's readable items into a local tree (the form the mount shows)")
    common(p)
    p.add_argument("--delete", action="store_true", help="remove local files with no in-world item")
    p.add_argument("object_dir", metavar="OBJECT_DIR")
    p.add_argument("local_dir", metavar="LOCAL_DIR")


# --- output ------------------------------------------------------------------------------------


class Out:
    """What a push prints: text lines or JSON objects, and the progress bar."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.json = bool(args.json)
        self.verbose = bool(getattr(args, "verbose", False))
        self.bar = not self.json and sys.stderr.isatty()
        self.total = 0
        self.done = 0

    def step(self, s: Step) -> None:
        if self.json:
            emit_json(s.as_json())
            return
        if s.action == "unchanged" and not self.verbose:
            return
        print(f"{s.action} {s.rel}" + (f": {s.reason}" if s.reason else ""))

    def progress(self, s: Step, phase: str) -> None:
        if self.json:
            emit_json(s.as_json())
            return
        self.done += 1
        if self.bar and self.total:
            width = 24
            filled = width * min(self.done, self.total) // self.total
            name = s.rel if len(s.rel) <= 40 else "..." + s.rel[-37:]
            line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {phase} {name}"
            _raw_stderr().write("\r\x1b[K" + printable(line))  # the bar's own controls, around clean text
            _raw_stderr().flush()

    def end_bar(self) -> None:
        if self.bar and self.done:
            _raw_stderr().write("\r\x1b[K")
            _raw_stderr().flush()

    def summary(self, last: dict[str, Any]) -> None:
        if self.json:
            emit_json(last)
        sys.stdout.flush()


def _raw_stderr() -> Any:
    """Standard error itself, not the PrintableStream the verbs print through (which would show the
    bar's carriage return and line erase as U+FFFD)."""
    return getattr(sys.stderr, "stream", sys.stderr)


# --- push --------------------------------------------------------------------------------------


def cmd_push(args: argparse.Namespace) -> int:
    if (args.exec_cmd is not None or args.delay != DELAY) and not args.watch:
        raise VerbError("--exec and --delay go with --watch", 2)
    if args.watch and args.plan:
        raise VerbError("--watch pushes; it does not go with --plan", 2)
    if not (args.delay >= 0 and args.delay <= 3600):
        raise VerbError("--delay: give seconds between 0 and 3600", 2)
    argv: list[str] = []
    if args.exec_cmd is not None:
        try:
            argv = shlex.split(args.exec_cmd)
        except ValueError as exc:
            raise VerbError(f"--exec: {exc}", 2) from None
        if not argv:
            raise VerbError("--exec: an empty command", 2)
    if not os.path.isdir(args.src):
        raise VerbError(f"{args.src}: not a directory", 2)
    client = MountClient.find(args.mount, None if _is_uuid(args.dest) else args.dest)
    dest = pushing.resolve_dest(client, args.dest)
    if not args.watch:
        return push_once(args, client, dest)
    return watch(args, client, dest, argv)


def _is_uuid(text: str) -> bool:
    import re

    return bool(re.fullmatch(r"[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}", text)) and not os.path.exists(text)


def push_once(args: argparse.Namespace, client: MountClient, dest: str) -> int:
    out = Out(args)
    plan, outcome = run_push(client, dest, args.src, plan_only=args.plan, delete=args.delete, force=args.force,
                             stopped=args.stopped, rollback=not args.no_rollback, out=out)
    return report(args, out, plan, outcome)


def run_push(client: MountClient, dest: str, src: str, *, plan_only: bool, delete: bool, force: bool,
             stopped: bool, rollback: bool, out: Out) -> tuple[Plan, Outcome | None]:
    """The plan (printed through `out`), then unless `plan_only` (or on a conflict) the apply."""

    def on_plan(plan: Plan) -> None:
        for s in plan.steps:
            out.step(s)
        sys.stdout.flush()
        new_scripts = [s for s in plan.of("create") if s.is_script]
        starts = 0 if stopped else len(new_scripts) + len(
            [s for s in plan.of("update") if s.is_script and s.inworld and s.inworld.get("running")])
        out.total = len(plan.of("create", "update", "delete")) + len(new_scripts) + starts

    try:
        return pushing.run(client, dest, src, plan_only=plan_only, delete=delete, force=force, stopped=stopped,
                           rollback=rollback, on_plan=on_plan, progress=out.progress)
    finally:
        out.end_bar()


def report(args: argparse.Namespace, out: Out, plan: Plan, outcome: Outcome | None) -> int:
    last = pushing.summary_json(plan, outcome, args.src)
    status = int(last["exit"])
    if outcome is None:  # --plan
        out.summary(last)
        return 0
    if outcome.error == "conflicts":
        names = ", ".join(s.rel for s in plan.of("conflict")[:5])
        err(f"{len(plan.of('conflict'))} item(s) changed in-world since the last push/pull ({names}): nothing "
            "pushed; pull them, or push with --force to overwrite")
        out.summary(last)
        return status
    if not out.json:
        for d in last.get("diagnostics", []):
            print(pushing.diagnostic_line(d))
        sys.stdout.flush()
    for w in outcome.warnings:
        err(w)
    if outcome.error is not None:
        err(f"push failed: {outcome.error}")
        if outcome.rolled_back and not outcome.rollback_errors:
            err("rolled back: updated items have their previous text and run state, created items are removed; "
                "nothing was deleted")
        elif outcome.rolled_back:
            err(f"the rollback failed for {len(outcome.rollback_errors)} item(s), which may still hold the pushed "
                "text: " + "; ".join(outcome.rollback_errors))
            err("once the viewer answers again, push again, or `slfs restore` them; nothing was deleted")
        elif outcome.deleting:
            err("the pushed items stay as pushed (deletes come last and are not rolled back)")
        else:
            err("not rolled back (--no-rollback): the items saved so far stay")
    if outcome.error is None and not out.json:
        counts = ", ".join(f"{n} {a}" for a, n in plan.summary().items() if n and a != "unchanged") or "nothing"
        started = sum(1 for st in plan.steps if st.phase == "started")
        err(f"pushed onto {plan.dest}: {counts}" + (f"; {started} script(s) started" if started else ""))
    out.summary(last)
    return status


# --- watch -------------------------------------------------------------------------------------


def _watched(path: str) -> bool:
    from ..world.naming_rules import is_overlay_name

    return not any(is_overlay_name(part) for part in path.split(os.sep) if part)


def _snapshot(paths: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for p in paths:
        try:
            with open(p, "rb") as f:
                out[p] = planning.digest_of(f.read(planning.READ_LIMIT + 1))
        except OSError:
            out[p] = None
    return out


def watch(args: argparse.Namespace, client: MountClient, dest: str, argv: list[str]) -> int:
    """The first push, then one per burst of changes in SRC (and, with --exec, in the directory
    the build runs in): the build first (a failing one skips that push). Changes that leave every
    file as the last round saw it (the build's own copies, an editor's save of the same text) do
    nothing."""
    import watchfiles

    src = os.path.abspath(args.src)
    roots = [src]
    cwd = os.getcwd()
    if argv and not (src == cwd or src.startswith(cwd.rstrip(os.sep) + os.sep)):
        roots.append(cwd)
    elif argv:
        roots = [cwd]
    known: dict[str, str | None] = {}

    def note_tree() -> None:
        try:
            known.update({f.path: planning.digest_of(f.data) for f in planning.scan_tree(src)})
        except (ClientError, OSError):
            pass

    def round_() -> int:
        if argv:
            code = build(argv)
            if code != 0:
                err(f"the build ({shlex.join(argv)}) failed with exit status {code}: not pushed")
                return 1
        status = push_once(args, client, dest)
        note_tree()
        if status == 130:  # Ctrl-C during the push: rolled back; the watch ends too
            raise KeyboardInterrupt
        return status

    watching = False
    try:
        round_()
        for changes in watchfiles.watch(*roots, debounce=int(args.delay * 1000), step=50, rust_timeout=500,
                                        yield_on_timeout=True, watch_filter=_watched_under(roots),
                                        raise_interrupt=True):
            if not changes:
                if not watching:  # the watcher runs now: anything changed since the first push is pushed
                    watching = True
                    err(f"watching {', '.join(roots)} (Ctrl-C ends)")
                    files = {f.path: planning.digest_of(f.data) for f in planning.scan_tree(src)}
                    if any(known.get(p) != d for p, d in files.items()):
                        known.update(files)
                        round_()
                continue
            changed = sorted({p for _c, p in changes})
            now = _snapshot(changed)
            if all(known.get(p, "?") == d for p, d in now.items()):
                continue  # nothing is other than the last round left it
            known.update(now)
            err(f"{len(changed)} change(s): pushing again")
            round_()
    except KeyboardInterrupt:
        return 0
    return 0


def _watched_under(roots: list[str]) -> Any:
    """The watch filter: a path whose part under its watched root is a dot name or an editor's
    backup is not watched (`.git/`, `x.lsl~`)."""
    def keep(_change: Any, path: str) -> bool:
        for root in roots:
            if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
                return _watched(os.path.relpath(path, root))
        return _watched(path)
    return keep


def build(argv: list[str]) -> int:
    """Run the build without a shell; its output goes to stderr (stdout may be --json's)."""
    try:
        return subprocess.run(argv, stdout=sys.stderr, stderr=sys.stderr, check=False).returncode
    except OSError as exc:
        err(f"the build could not start: {argv[0]}: {exc.strerror or exc}")
        return 127


# --- pull --------------------------------------------------------------------------------------


def cmd_pull(args: argparse.Namespace) -> int:
    client = MountClient.find(args.mount, None if _is_uuid(args.object_dir) else args.object_dir)
    dest = pushing.resolve_dest(client, args.object_dir)
    if os.path.exists(args.local_dir) and not os.path.isdir(args.local_dir):
        raise VerbError(f"{args.local_dir}: not a directory", 2)
    state = Pusher(client.entry).state(dest)
    pulled = pulling.pull(state, args.local_dir, Bases(args.local_dir), delete=args.delete)
    out = Out(args)
    out.verbose = True
    for s in pulled.steps:
        if s.action != "unchanged" or out.json:
            out.step(s)
    out.summary({"summary": pulled.summary(), "exit": pulled.exit})
    if not out.json:
        counts = ", ".join(f"{n} {a}" for a, n in pulled.summary().items() if n) or "nothing"
        err(f"pulled into {args.local_dir}: {counts}")
    return pulled.exit
