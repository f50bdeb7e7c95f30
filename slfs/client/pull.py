"""`slfs pull`: an object's readable items into a local tree, in the form the mount shows, and
the bases noted so a later push from that tree knows what it holds."""

from __future__ import annotations

import os
import posixpath
import tempfile
from typing import Any

import attrs

from .push_plan import ACTIONS, READ_LIMIT, Bases, Step, digest_of, libraries, scan_tree


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
                step.decide("skip", str(entry.get("error") or "its text cannot be read"))
                steps.append(step)
                continue
            target = os.path.join(folder, entry["name"])
            if os.path.isfile(target):
                with open(target, "rb") as f:
                    if digest_of(f.read(READ_LIMIT + 1)) == entry["digest"]:
                        step.decide("unchanged")
                        bases.note(entry["item_id"], "pulled", entry["digest"])
                        steps.append(step)
                        continue
                step.decide("update")
            try:
                with open(step.mount_path, "rb") as f:
                    data = f.read(READ_LIMIT + 1)
            except OSError as exc:
                step.decide("skip", f"cannot read it from the mount: {exc.strerror or exc}")
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
