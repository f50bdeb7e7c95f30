"""The push plan as pure logic (slfs/client/push.py): libraries, kinds, skips, conflicts, bases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from slfs.client import push as pushing
from slfs.client import push_plan as planning


def entry(name: str, text: str, **kw: Any) -> dict[str, Any]:
    d = {"name": name, "item_id": f"id-{name}", "type": "script" if name.endswith((".lsl", ".luau")) else "notecard",
         "luau": name.endswith(".luau"), "running": True, "faulted": False, "readable": True, "writable": True,
         "why_not": None, "digest": planning.digest_of(text.encode()), "error": None}
    d.update(kw)
    return d


def state(*items: dict[str, Any], door: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    prims = [{"dir": "", "uuid": "root", "path": "/mnt/Obj", "writable": True, "items": list(items)}]
    if door is not None:
        prims.append({"dir": "Door@12345678", "uuid": "door", "path": "/mnt/Obj/Door@12345678", "writable": True,
                      "items": door})
    return {"path": "/mnt/Obj", "prims": prims}


def tree(root: Path, files: dict[str, str]) -> list[planning.LocalFile]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return planning.scan_tree(str(root))


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def actions(plan: planning.Plan) -> dict[str, str]:
    return {s.rel: s.action + (f": {s.reason}" if s.reason else "") for s in plan.steps}


def test_plan_kinds_libraries_skips(tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = tree(src, {"main.lsl": '#include "util.lsl"\n#include "lib/x.lsl"\ndefault {}\n', "util.lsl": "//u\n",
                       "lib/x.lsl": "//x\n", "x.lsl": "note\n", "new.luau": "print(1)\n", "Notes": "n\n",
                       ".git/HEAD": "ref\n", "main.lsl~": "old\n", "Door@12345678/h.lsl": "h\n",
                       "Gone@00000000/g.lsl": "g\n", "a|b.lsl": "bad\n"})
    st = state(entry("main.lsl", "old main"), entry("x.lsl", "note\n", type="notecard"),
               entry("Locked", "l", writable=False), entry("Stale", "s"), door=[entry("h.lsl", "h\n")])
    plan = planning.make_plan(st, str(src), files, planning.Bases(str(src)), delete=True, force=False)
    got = actions(plan)
    assert got["main.lsl"] == "update" and got["x.lsl"] == "unchanged"
    assert "util.lsl" not in got and "lib/x.lsl" not in got  # libraries with no item
    assert got["new.luau"] == "create" and next(s for s in plan.steps if s.rel == "new.luau").luau
    assert got["Notes"] == "create" and next(s for s in plan.steps if s.rel == "Notes").kind == "notecard"
    assert got["Door@12345678/h.lsl"] == "unchanged"
    assert got["Gone@00000000/g.lsl"].startswith("skip: no prim 'Gone@00000000'")
    assert got["a|b.lsl"].startswith("skip: a name the viewer cannot hold")
    assert got["Locked"] == "skip: no modify permission" and got["Stale"] == "delete"
    assert not any(k.startswith(".git") or k.endswith("~") for k in got)
    assert plan.summary() == {"create": 2, "update": 1, "unchanged": 2, "delete": 1, "skip": 3, "conflict": 0}


def test_conflicts_follow_the_bases(tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = tree(src, {"a.lsl": "mine\n"})
    bases = planning.Bases(str(src))
    st = state(entry("a.lsl", "theirs\n"))
    assert actions(planning.make_plan(st, str(src), files, bases, delete=False, force=False)) == {"a.lsl": "update"}
    bases.note("id-a.lsl", "pushed", planning.digest_of(b"pushed\n"))
    bases.save()
    again = planning.Bases(str(src))  # read back from the state dir, not SRC
    assert not list(src.glob(".*"))
    plan = planning.make_plan(st, str(src), files, again, delete=False, force=False)
    assert actions(plan) == {"a.lsl": f"conflict: {planning.CONFLICT}"}
    assert actions(planning.make_plan(st, str(src), files, again, delete=False, force=True)) == {"a.lsl": "update"}
    again.note("id-a.lsl", "pulled", planning.digest_of(b"theirs\n"))
    assert actions(planning.make_plan(st, str(src), files, again, delete=False, force=False)) == {"a.lsl": "update"}


def test_size_limit_and_diagnostic_lines(tmp_path: Path) -> None:
    src = tmp_path / "src"
    files = tree(src, {"Big": "x" * 70_000})
    plan = planning.make_plan(state(), str(src), files, planning.Bases(str(src)), delete=False, force=False)
    assert actions(plan) == {"Big": "skip: over the size limit (notecards hold at most 65,536 bytes)"}
    step = planning.Step("update", "sub/a.lsl", prim_path="/mnt/Obj")
    step.diagnostics = [{"path": str(src / "lib" / "x.lsl"), "row": 3, "column": 2, "level": "ERROR", "message": "m"},
                        {"path": "/mnt/Obj/a.lsl", "row": 1, "column": 1, "level": "WARNING", "message": "w"}]
    (src / "lib").mkdir()
    (src / "lib" / "x.lsl").write_text("")
    lines = [pushing.diagnostic_line(d) for d in pushing.local_diagnostics(step, "src", str(src))]
    assert lines == ["src/lib/x.lsl:3:2: error: m", "src/sub/a.lsl:1:1: warning: w"]
