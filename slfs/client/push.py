"""`slfs push` and `slfs pull`: a local tree onto an in-world object as one step, and back. The
logic is here, shared by the CLI (slfs/cli/push.py) and the MCP tools; the daemon gives only the
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
import hashlib
import json
import os
import posixpath
import re
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from .. import paths
from ..model.errors import NameRefused
from ..model.naming_rules import is_overlay_name, parse_remote_name, size_limit
from . import mounts
from .errors import ClientError

SAVE_WINDOW = 8  # saves in flight at once (each waits for its compile)
MAX_FILES = 5000  # files of SRC looked at
MAX_DEPTH = 8  # directory levels of SRC looked into
READ_LIMIT = 4 * 262_144  # bytes of one local file read (the largest item is 262,144)
CONFLICT = "changed in-world since the last push/pull"
UNKNOWN_OUTCOME = ("EIO", "ETIMEDOUT", "ECONNRESET", "ESHUTDOWN", "ENOTCONN", None)
ACTIONS = ("create", "update", "unchanged", "delete", "skip", "conflict")

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)', re.M)


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the local tree ----------------------------------------------------------------------------


@attrs.define
class LocalFile:
    rel: str  # SRC-relative, with '/'
    path: str  # absolute
    data: bytes
    oversize: bool = False

    @property
    def prim_dir(self) -> str:
        return posixpath.dirname(self.rel)

    @property
    def name(self) -> str:
        return posixpath.basename(self.rel)


def scan_tree(src: str) -> list[LocalFile]:
    """The files of SRC (dot names and editor backups left out, at most MAX_FILES, MAX_DEPTH deep)."""
    if not os.path.isdir(src):
        raise ClientError(f"{src}: not a directory", "ENOTDIR")
    out: list[LocalFile] = []
    root = os.path.abspath(src)
    for dirpath, dirnames, filenames in os.walk(root):
        depth = 0 if dirpath == root else os.path.relpath(dirpath, root).count(os.sep) + 1
        dirnames[:] = sorted(d for d in dirnames if not is_overlay_name(d) and depth < MAX_DEPTH)
        for name in sorted(filenames):
            if is_overlay_name(name):
                continue
            path = os.path.join(dirpath, name)
            if not os.path.isfile(path):
                continue
            if len(out) >= MAX_FILES:
                raise ClientError(f"{src}: more than {MAX_FILES} files; push a smaller tree", "EFBIG")
            with open(path, "rb") as f:
                data = f.read(READ_LIMIT + 1)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            out.append(LocalFile(rel, path, data[:READ_LIMIT], oversize=len(data) > READ_LIMIT))
    return out


def libraries(files: list[LocalFile]) -> set[str]:
    """The SRC-relative paths other SRC files `#include` or `require` (searched as the mount does:
    the including file's folder first; a name that climbs out of SRC is not a file of it)."""
    by_rel = {f.rel: f for f in files}
    out: set[str] = set()
    for f in files:
        try:
            text = f.data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        names: list[str] = [m.group(1) or m.group(2) for m in _INCLUDE.finditer(text)]
        if f.name.endswith(".luau") or "require" in text:
            from ..sources import luau

            try:
                for name, _row, _col in luau.requires(text):
                    names += list(luau.candidates(name))
            except Exception:  # a text the scanner cannot read includes nothing
                pass
        for name in names:
            for base in (f.prim_dir, ""):
                rel = posixpath.normpath(posixpath.join(base, name))
                if rel in by_rel and rel != f.rel:
                    out.add(rel)
                    break
    return out


# --- bases -------------------------------------------------------------------------------------


class Bases:
    """The digests this SRC last pushed into and pulled from each item: state_dir/push/KEY.json."""

    def __init__(self, src: str) -> None:
        self.src = os.path.realpath(src)
        key = hashlib.sha256(self.src.encode()).hexdigest()[:32]
        self.path = paths.state_dir() / "push" / f"{key}.json"
        self.items: dict[str, dict[str, str]] = {}
        try:
            data = json.loads(self.path.read_text())
            if isinstance(data, dict) and data.get("src") == self.src and isinstance(data.get("items"), dict):
                self.items = {k: v for k, v in data["items"].items() if isinstance(v, dict)}
        except (OSError, ValueError):
            pass

    def known(self, item_id: str) -> set[str]:
        entry = self.items.get(item_id, {})
        return {v for k, v in entry.items() if k in ("pushed", "pulled") and isinstance(v, str)}

    def note(self, item_id: str, how: str, digest: str) -> None:
        self.items.setdefault(item_id, {})[how] = digest

    def forget(self, item_id: str) -> None:
        self.items.pop(item_id, None)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".base-")
        with os.fdopen(fd, "w") as f:
            json.dump({"src": self.src, "items": self.items}, f)
        os.replace(tmp, self.path)


# --- the plan ----------------------------------------------------------------------------------


@attrs.define
class Step:
    action: str  # ACTIONS
    rel: str  # SRC-relative path
    item_id: str | None = None
    reason: str | None = None
    local: LocalFile | None = None
    inworld: dict[str, Any] | None = None  # push_state's entry
    prim_path: str = ""  # the prim folder in the mount
    kind: str = "notecard"
    luau: bool = False
    # while applying
    phase: str | None = None
    diagnostics: list[dict[str, Any]] = attrs.field(factory=list)
    sent: bool = False
    before: str | None = None  # digest of the text before our save

    @property
    def is_script(self) -> bool:
        return self.kind == "script"

    @property
    def mount_path(self) -> str:
        return posixpath.join(self.prim_path, posixpath.basename(self.rel))

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.action, "path": self.rel, "item_id": self.item_id,
                               "reason": self.reason}
        if self.phase is not None:
            out["phase"] = self.phase
        return out


@attrs.define
class Plan:
    src: str
    dest: str  # the object or prim folder in the mount
    steps: list[Step]
    state: dict[str, Any]

    def of(self, *actions: str) -> list[Step]:
        return [s for s in self.steps if s.action in actions]

    def summary(self) -> dict[str, int]:
        return {a: len(self.of(a)) for a in ACTIONS}


def make_plan(state: dict[str, Any], src: str, files: list[LocalFile], bases: Bases, *, delete: bool,
              force: bool) -> Plan:
    """Every local file (and with `delete` every in-world item with none) against the object."""
    prims = {p["dir"]: p for p in state["prims"]}
    libs = libraries(files)
    steps: list[Step] = []
    local_names: dict[str, set[str]] = {}
    for f in files:
        prim = prims.get(f.prim_dir)
        if prim is None:
            if f.rel in libs:
                continue  # an include kept in a folder of its own: never pushed
            steps.append(Step("skip", f.rel, reason=f"no prim {f.prim_dir!r} in the object (child prims are "
                              "folders named as on the mount)" if "/" not in f.prim_dir else
                              "in a folder deeper than a prim's", local=f))
            continue
        local_names.setdefault(f.prim_dir, set()).add(f.name)
        entry = next((i for i in prim["items"] if i["name"] == f.name), None)
        step = Step("create", f.rel, local=f, prim_path=prim["path"], inworld=entry)
        if entry is None:
            if f.rel in libs:
                continue  # a library: pushed only onto an item of its name
            try:
                want = parse_remote_name(f.name)
            except NameRefused as exc:
                steps.append(attrs.evolve(step, action="skip", reason=f"a name the viewer cannot hold: "
                                          f"{exc.message.split(': ', 1)[-1]}"))
                continue
            step.kind, step.luau = want.type, want.subtype == 1
            why = _too_big(f, want.type) or (None if prim["writable"] else "no modify permission on the prim")
            steps.append(attrs.evolve(step, action="skip", reason=why) if why else step)
            continue
        step.item_id, step.kind, step.luau = entry["item_id"], entry["type"], bool(entry.get("luau"))
        why = _refusal(entry) or _too_big(f, entry["type"])
        if entry.get("digest") is not None and entry.get("digest") == digest_of(f.data):
            step.action = "unchanged"  # nothing to send, whatever the permissions
        elif why is not None:
            step.action, step.reason = "skip", why
        elif not force and (known := bases.known(entry["item_id"])) and entry.get("digest") not in known:
            step.action, step.reason = "conflict", CONFLICT
        else:
            step.action = "update"
        steps.append(step)
    if delete:
        for rel_dir, prim in prims.items():
            if rel_dir and rel_dir not in local_names and not os.path.isdir(os.path.join(src, rel_dir)):
                continue  # a child prim SRC has no folder for: left alone
            for entry in prim["items"]:
                if entry["name"] in local_names.get(rel_dir, set()):
                    continue
                rel = posixpath.join(rel_dir, entry["name"])
                step = Step("delete", rel, item_id=entry["item_id"], inworld=entry, prim_path=prim["path"],
                            kind=entry["type"], luau=bool(entry.get("luau")))
                if not entry.get("writable", True):
                    step.action, step.reason = "skip", "no modify permission"
                elif not force and (known := bases.known(entry["item_id"])) and entry.get("digest") not in known:
                    step.action, step.reason = "conflict", CONFLICT
                steps.append(step)
    return Plan(src, state["path"], steps, state)


def _refusal(entry: dict[str, Any]) -> str | None:
    if not entry.get("writable", True):
        return "no modify permission"
    if not entry.get("readable", True):
        return "no copy permission (its text cannot be read, so it cannot be compared)"
    if entry.get("why_not"):
        return str(entry["why_not"])
    if entry.get("digest") is None:
        return f"its text cannot be read: {entry.get('error') or 'unknown error'}"
    return None


def _too_big(f: LocalFile, kind: str) -> str | None:
    limit = size_limit(kind)
    if f.oversize or len(f.data) > limit:
        return f"over the size limit ({kind}s hold at most {limit:,} bytes)"
    try:
        f.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    return None


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
            if not (_INCLUDE.search(text) or "require" in text):
                continue
            calls.append((s, "push_save", {"path": s.mount_path, "content": text, "check": True,
                                           "main": os.path.join(root, s.rel), "root": root}))

        def checked(step: Step, result: Any) -> bool:
            if isinstance(result, ClientError) or not result.get("unchanged", True):
                step.action = "update"  # a changed include (or one that no longer builds)
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
            step.item_id, step.phase = result["item_id"], "created"
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


# --- pull --------------------------------------------------------------------------------------


@attrs.define
class Pulled:
    steps: list[Step]
    exit: int = 0

    def summary(self) -> dict[str, int]:
        return {a: sum(1 for s in self.steps if s.action == a) for a in ACTIONS}


def pull(state: dict[str, Any], local: str, bases: Bases, *, delete: bool) -> Pulled:
    """Copy the object's readable items into `local` in the form the mount shows, leaving
    identical files alone; `delete`: remove local files with no item (not dot names, backups or
    files other local files include)."""
    os.makedirs(local, exist_ok=True)
    steps: list[Step] = []
    seen: set[str] = set()
    for prim in state["prims"]:
        folder = os.path.join(local, prim["dir"]) if prim["dir"] else local
        for entry in prim["items"]:
            rel = posixpath.join(prim["dir"], entry["name"])
            seen.add(rel)
            step = Step("create", rel, item_id=entry["item_id"], inworld=entry, prim_path=prim["path"],
                        kind=entry["type"])
            if not entry.get("readable", True) or entry.get("digest") is None:
                step.action = "skip"
                step.reason = str(entry.get("error") or "its text cannot be read")
                steps.append(step)
                continue
            target = os.path.join(folder, entry["name"])
            if os.path.isfile(target):
                with open(target, "rb") as f:
                    if digest_of(f.read(READ_LIMIT + 1)) == entry["digest"]:
                        step.action = "unchanged"
                        bases.note(entry["item_id"], "pulled", entry["digest"])
                        steps.append(step)
                        continue
                step.action = "update"
            try:
                with open(step.mount_path, "rb") as f:
                    data = f.read(READ_LIMIT + 1)
            except OSError as exc:
                step.action, step.reason = "skip", f"cannot read it from the mount: {exc.strerror or exc}"
                steps.append(step)
                continue
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".slfs-pull-")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
            bases.note(entry["item_id"], "pulled", digest_of(data))
            steps.append(step)
    if delete:
        files = scan_tree(local)
        libs = libraries(files)
        dirs = {p["dir"] for p in state["prims"]}
        for lf in files:
            if lf.rel in seen or lf.rel in libs or lf.prim_dir not in dirs:
                continue
            os.unlink(lf.path)
            steps.append(Step("delete", lf.rel))
    bases.save()
    return Pulled(steps)


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
