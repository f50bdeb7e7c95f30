"""`slfs push`: a local tree onto an in-world object as one step (the plan is push_plan.py's, the
way back pull.py's). Shared by the CLI (slfs/cli/push.py) and the MCP tools; the daemon gives only the
steps (control/push.py): the object's items with the digests of their texts, a create, a save
with a run state, a delete now, a start of several scripts together.

A push: the plan (every local file against the in-world items); then creates, saves of every new
or changed item (scripts stopped, at most SAVE_WINDOW in flight), the start of the scripts that
ran before and the new ones, together, and last the deletes. Any failure before the deletes rolls
back: updated items get their text from before the push (kept by the daemon, and in its history)
and their run state, created ones are deleted. Unchanged items are never sent anything.

A base per (SRC, item) is kept in the state dir (never in SRC): the digest of the text this SRC
last pushed into the item and the one it last pulled from it. An item whose in-world text is
neither is a conflict, not overwritten unless forced.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .. import paths
from . import mounts
from .client_error import ClientError
from .push_plan import Bases, Plan, Step, digest_of, make_plan, may_include, scan_tree

SAVE_WINDOW = 8  # saves in flight at once (each waits for its compile)
UNKNOWN_OUTCOME = ("EIO", "ETIMEDOUT", "ECONNRESET", "ESHUTDOWN", "ENOTCONN", None)


# --- applying ----------------------------------------------------------------------------------


class Interrupted(Exception):
    """Ctrl-C during the push (after the rollback)."""


@attrs.define
class Outcome:
    plan: Plan
    exit: int = 0
    failed: Step | None = None
    error: str | None = None
    rolled_back: bool = False
    rollback_errors: list[str] = attrs.field(factory=list)
    warnings: list[str] = attrs.field(factory=list)
    interrupted: bool = False
    deleting: bool = False  # the deletes have begun: no rollback


Progress = Callable[[Step, str], None]  # (step, phase) as each step moves on


def _nothing(_step: Step, _phase: str) -> None:
    pass


class Pusher:
    def __init__(self, entry: dict[str, Any], progress: Progress = _nothing) -> None:
        self.entry = entry
        self.progress = progress

    def request(self, kind: str, /, **params: Any) -> Any:
        with mounts.connect(self.entry) as c:
            return c.request(kind, _timeout=None, **params)

    def state(self, dest: str) -> dict[str, Any]:
        return dict(self.request("push_state", path=dest))

    def pipeline(self, calls: list[tuple[Step, str, dict[str, Any]]],
                 done: Callable[[Step, Any], bool]) -> bool:
        """Send the calls, at most SAVE_WINDOW in flight on one connection; `done(step, data or
        ClientError)` says whether to go on. Ctrl-C stops sending and waits for the answers of what
        is in flight (so the rollback knows what landed), then raises Interrupted."""
        interrupted = False
        stop = False
        with mounts.connect(self.entry) as c:
            pending: dict[str, Step] = {}
            todo = list(calls)
            n = 0
            while todo or pending:
                try:
                    while todo and not stop and not interrupted and len(pending) < SAVE_WINDOW:
                        step, kind, params = todo.pop(0)
                        n += 1
                        rid = f"push{os.getpid()}-{n}"
                        pending[rid] = step
                        c.send({**params, "id": rid, "type": kind})
                    if not pending:
                        break
                    frame = c.read_frame(timeout=None)
                    if frame.get("type") != "response" or frame.get("id") not in pending:
                        continue
                    step = pending.pop(frame["id"])
                    result: Any = frame.get("data") if frame.get("success") else \
                        ClientError(str(frame.get("error") or "failed"), frame.get("code"))
                    if not done(step, result):
                        stop = True
                except KeyboardInterrupt:
                    interrupted = True
        if interrupted:
            raise Interrupted()
        return not stop

    def check_builds(self, plan: Plan) -> None:
        """An unchanged source whose in-world text is built from includes is a change when its
        includes changed: the daemon builds it (nothing is sent) and compares the expansion."""
        root = os.path.realpath(plan.src)
        calls = []
        for s in plan.of("unchanged"):
            if not s.is_script or s.local is None:
                continue
            text = s.local.data.decode("utf-8", "replace")
            if not may_include(text):
                continue
            calls.append((s, "push_save", {"path": s.mount_path, "content": text, "check": True,
                                           "main": os.path.join(root, s.rel), "root": root}))

        def checked(step: Step, result: Any) -> bool:
            if isinstance(result, ClientError) or not result.get("unchanged", True):
                step.decide("update")  # a changed include (or one that no longer builds)
            return True

        if calls:
            self.pipeline(calls, checked)

    # --- push ------------------------------------------------------------------------------------

    def apply(self, plan: Plan, *, stopped: bool = False, rollback: bool = True) -> Outcome:
        out = Outcome(plan)
        try:
            self._apply(plan, out, stopped=stopped)
        except _DeleteFailed:
            return out  # the pushed items stay (started): deletes come last and are not rolled back
        except (Interrupted, KeyboardInterrupt):
            out.interrupted = True
            out.error = out.error or "interrupted"
        except ClientError as exc:
            out.error = exc.message
        if out.error is None:
            return out
        out.exit = 130 if out.interrupted else 1
        if out.deleting:
            # Deletes come last and are not rolled back: the pushed items stay as pushed.
            out.error = f"{out.error} during the deletes; the pushed items stay as pushed"
            return out
        if rollback:
            with _no_interrupts():
                self._rollback(plan, out)
        return out

    def _apply(self, plan: Plan, out: Outcome, *, stopped: bool) -> None:
        root = os.path.realpath(plan.src)
        creates = plan.of("create")
        updates = plan.of("update")
        calls: list[tuple[Step, str, dict[str, Any]]] = []
        for s in creates:
            assert s.local is not None
            calls.append((s, "push_create", {"path": s.prim_path, "name": s.local.name,
                                             "content": "" if s.is_script else s.local.data.decode("utf-8")}))

        def created(step: Step, result: Any) -> bool:
            if isinstance(result, ClientError):
                out.failed, out.error = step, f"{step.rel}: {result.message}"
                return False
            step.is_item(result["item_id"])
            step.phase = "created"
            self.progress(step, "created")
            return True

        if calls and not self.pipeline(calls, created):
            return
        saves = [s for s in creates if s.is_script] + updates

        def params(s: Step) -> dict[str, Any]:
            assert s.local is not None
            p: dict[str, Any] = {"path": s.mount_path, "content": s.local.data.decode("utf-8"),
                                 "main": os.path.join(root, s.rel), "root": root}
            if s.is_script:
                p["running"] = False
            if s.action == "update" and s.inworld is not None:
                p["expect"] = s.inworld.get("digest")
            return p

        def saved(step: Step, result: Any) -> bool:
            if isinstance(result, ClientError):
                # A save cut off (a lost link, a timeout) may have landed: the rollback restores it
                # (nothing is sent when the item holds its old text). A refusal sent nothing.
                step.sent = step.action == "update" and result.code in UNKNOWN_OUTCOME
                out.failed, out.error = step, f"{step.rel}: {result.message}"
                return False
            step.sent, step.before = bool(result.get("sent")), result.get("before")
            step.diagnostics = list(result.get("diagnostics") or [])
            if result.get("compiled") is False:
                step.phase = "compile failed"
                why = f" ({result['note']})" if not step.sent and result.get("note") else ""
                out.failed, out.error = step, f"{step.rel}: the compile failed{why}"
                self.progress(step, "compile failed")
                return False
            step.phase = "saved"
            self.progress(step, "saved")
            return True

        if saves and not self.pipeline([(s, "push_save", params(s)) for s in saves], saved):
            return
        # Start together: the scripts that ran before, and the new ones.
        if not stopped:
            start = [s for s in creates if s.is_script] + \
                    [s for s in updates if s.is_script and s.inworld and s.inworld.get("running")]
            if start:
                data = self.request("push_run", paths=[s.mount_path for s in start], running=True)
                problems = []
                for s, r in zip(start, data["results"], strict=True):
                    if r.get("code") == "ENOSYS":
                        s.phase = "not started"
                        out.warnings.append(f"{s.rel}: not started: {r['error']}")
                    elif r.get("error") or not r.get("confirmed"):
                        problems.append(f"{s.rel}: {r.get('error') or 'the viewer did not confirm its start'} "
                                        f"(state: {r.get('state')})")
                    else:
                        s.phase = "started"
                        self.progress(s, "started")
                if problems:
                    out.error = "; ".join(problems)
                    return
        out.deleting = True
        for s in plan.of("delete"):
            try:
                self.request("push_delete", path=s.mount_path)
            except ClientError as exc:
                # Deletes come last: the pushed items stay; what was deleted is in the trash and history.
                out.error = f"{s.rel}: not deleted: {exc.message}"
                out.failed = s
                out.exit = 1
                raise _DeleteFailed() from None
            s.phase = "deleted"
            self.progress(s, "deleted")

    def _rollback(self, plan: Plan, out: Outcome) -> None:
        """Updated items get their text and run state back, created ones are removed."""
        restore: list[tuple[Step, str, dict[str, Any]]] = []
        for s in plan.of("update"):
            if not s.sent or s.inworld is None or s.inworld.get("digest") is None:
                continue
            p: dict[str, Any] = {"path": s.mount_path, "restore": s.inworld["digest"]}
            if s.is_script:
                p["running"] = bool(s.inworld.get("running"))
            restore.append((s, "push_save", p))

        def restored(step: Step, result: Any) -> bool:
            if isinstance(result, ClientError):
                out.rollback_errors.append(f"{step.rel}: not restored: {result.message}")
            else:
                step.phase = "restored"
                self.progress(step, "restored")
            return True

        try:
            if restore:
                self.pipeline(restore, restored)
            for s in plan.of("create"):
                if s.item_id is None:
                    continue
                try:
                    self.request("push_delete", path=s.mount_path)
                    s.phase = "removed"
                    self.progress(s, "removed")
                except ClientError as exc:
                    out.rollback_errors.append(f"{s.rel}: the created item was not removed: {exc.message}")
        except (ClientError, Interrupted) as exc:
            out.rollback_errors.append(f"the rollback stopped: {getattr(exc, 'message', 'interrupted')}")
        out.rolled_back = True


class _DeleteFailed(ClientError):
    def __init__(self) -> None:
        super().__init__("a delete failed", "EIO")


@contextlib.contextmanager
def _no_interrupts() -> Iterator[None]:
    """Ctrl-C is ignored while the rollback runs (in the main thread; elsewhere nothing to do)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def run(client: Any, dest: str, src: str, *, plan_only: bool, delete: bool = False, force: bool = False,
        stopped: bool = False, rollback: bool = True, on_plan: Callable[[Plan], None] | None = None,
        progress: Progress = _nothing) -> tuple[Plan, Outcome | None]:
    """A push of the tree `src` onto the folder `dest` (a mount path) of the mount `client`
    (a MountClient): the plan (given to `on_plan`), then unless `plan_only` the apply. Any conflict
    (unless `force`) refuses the whole push: nothing is changed, exit 1. A push that went through
    records the bases."""
    files = scan_tree(src)
    bases = Bases(src)
    pusher = Pusher(client.entry, progress=progress)
    plan = make_plan(pusher.state(dest), src, files, bases, delete=delete, force=force)
    pusher.check_builds(plan)
    if on_plan is not None:
        on_plan(plan)
    if plan_only:
        return plan, None
    if plan.of("conflict"):
        return plan, Outcome(plan, exit=1, error="conflicts")
    outcome = pusher.apply(plan, stopped=stopped, rollback=rollback)
    if outcome.error is None:
        record_push(plan, bases)
    return plan, outcome


def summary_json(plan: Plan, outcome: Outcome | None, src_shown: str) -> dict[str, Any]:
    """The last JSON object of a push: {"summary", "exit"}, and what failed when something did."""
    out: dict[str, Any] = {"summary": plan.summary(), "exit": 0 if outcome is None else outcome.exit}
    if outcome is None:
        return out
    if outcome.error == "conflicts":
        return {**out, "error": "conflicts"}
    if outcome.error is not None:
        diagnostics = local_diagnostics(outcome.failed, src_shown, plan.src) if outcome.failed else []
        out.update(error=outcome.error, failed=outcome.failed.rel if outcome.failed else None,
                   diagnostics=diagnostics, rolled_back=outcome.rolled_back, rollback_errors=outcome.rollback_errors)
    if outcome.warnings:
        out["warnings"] = outcome.warnings
    return out


def record_push(plan: Plan, bases: Bases) -> None:
    """After a push that went through: what SRC holds is what the items hold."""
    for s in plan.steps:
        if s.action in ("create", "update", "unchanged") and s.item_id and s.local is not None:
            bases.note(s.item_id, "pushed", digest_of(s.local.data))
        elif s.action == "delete" and s.item_id:
            bases.forget(s.item_id)
    bases.save()


# --- diagnostics onto the local files ------------------------------------------------------------


def local_diagnostics(step: Step, src_shown: str, src: str) -> list[dict[str, Any]]:
    """The step's diagnostics with their paths as SRC-relative files under `src_shown` (SRC as the
    user named it): a built source's rows name the local files; a plain script's name its item."""
    root = os.path.realpath(src)
    out = []
    for d in step.diagnostics:
        path = str(d.get("path", ""))
        real = os.path.realpath(path) if os.path.isabs(path) and not path.startswith(step.prim_path) else ""
        inside = bool(real) and (real == root or real.startswith(root + os.sep))
        rel = os.path.relpath(real, root) if inside else step.rel
        out.append({**d, "path": os.path.join(src_shown, rel)})
    return out


def diagnostic_line(d: dict[str, Any]) -> str:
    return f"{d['path']}:{d.get('row', 0)}:{d.get('column', 0)}: {str(d.get('level', 'error')).lower()}: " \
           f"{d.get('message', '')}"


def resolve_dest(client: Any, dest: str) -> str:
    """DEST as the mount path of an object or prim folder: a path, or an object's UUID."""
    if re.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", dest) \
            and not os.path.exists(dest):
        try:
            return str(client.lookup(dest.lower())["path"])
        except ClientError as exc:
            if exc.code != "ENOENT":
                raise
            return str(client.open_object(dest.lower())["path"])
    return client.path_of(dest)


def check_src(src: str) -> None:
    if not os.path.isdir(src):
        raise ClientError(f"{src}: not a directory", "ENOTDIR")


def state_path() -> Path:
    return paths.state_dir() / "push"
