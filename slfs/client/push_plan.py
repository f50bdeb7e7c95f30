"""The plan of `slfs push`: the local tree (SRC) read in the form the mount shows, the bases
(what this SRC last pushed into and pulled from each item) and the step per item: create, update,
unchanged, delete, skip or conflict. Pure but for reading SRC and the bases file."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import tempfile
from typing import Any

import attrs

from .. import paths
from ..world.fs_errors import NameRefused
from ..world.naming_rules import is_overlay_name, parse_remote_name, size_limit
from .client_error import ClientError

MAX_FILES = 5000  # files of SRC looked at
MAX_DEPTH = 8  # directory levels of SRC looked into
READ_LIMIT = 4 * 262_144  # bytes of one local file read (the largest item is 262,144)
CONFLICT = "changed in-world since the last push/pull"
ACTIONS = ("create", "update", "unchanged", "delete", "skip", "conflict")

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)', re.M)


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def may_include(text: str) -> bool:
    """Whether a script may be built from other files (an #include, a require)."""
    return bool(_INCLUDE.search(text)) or "require" in text


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

    # The plan (make_plan, pull's plan) and the push that applies it go through these: `action`,
    # `reason` and `item_id` are written here only.

    def decide(self, action: str, reason: str | None = None) -> None:
        """What is done with it (ACTIONS), and why when given (a skip, a conflict)."""
        self.action = action
        if reason is not None:
            self.reason = reason

    def is_item(self, item_id: str) -> None:
        """The in-world item it is (found in the mount, or made by its create)."""
        self.item_id = item_id

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
        step.is_item(entry["item_id"])
        step.kind, step.luau = entry["type"], bool(entry.get("luau"))
        why = _refusal(entry) or _too_big(f, entry["type"])
        if entry.get("digest") is not None and entry.get("digest") == digest_of(f.data):
            step.decide("unchanged")  # nothing to send, whatever the permissions
        elif why is not None:
            step.decide("skip", why)
        elif not force and (known := bases.known(entry["item_id"])) and entry.get("digest") not in known:
            step.decide("conflict", CONFLICT)
        else:
            step.decide("update")
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
                    step.decide("skip", "no modify permission")
                elif not force and (known := bases.known(entry["item_id"])) and entry.get("digest") not in known:
                    step.decide("conflict", CONFLICT)
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
