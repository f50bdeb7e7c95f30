"""Scripts as sources on a real mount, driven by real programs: cat, grep, cp, sed -i, vim, git and
`slfs build` / `slfs diag` over preprocessed scripts, against both viewer versions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import slfs
from support.mount import Mount, MountFactory
from support.sources_world import (  # the same world and texts as the in-process tests
    FIRESTORM_TEXT,
    FS_SCRIPT,
    LIB,
    LIB_TEXT,
    PLAIN,
    PLAIN_TEXT,
    SOURCE,
    sources_world,
)
from support.writes import mark, need, settle, sh

from slfs.sources import envelope

# G1 differs in ways tests/e2e/test_viewer_generations.py covers (no object.list, set_running or
# commands; notecards need copy+modify; runtime output only for live-sync subscribers).
pytestmark = pytest.mark.generations("G2", "G3", "G4")

GIT = "git -c user.name=T -c user.email=t@example.com -c init.defaultBranch=main"


async def sources_mount(mount_factory: MountFactory, *options: str) -> Mount:
    m = await mount_factory(sources_world(), options=["delete_grace=0.5", *options])
    await m.thread(os.listdir, m.mnt)
    return m


def saves_of(m: Mount, item_id: str, since: int = 0) -> list[str]:
    assert m.sim is not None
    return [p["content"] for meth, p in m.sim.calls[since:] if meth == "object.content.save"
            and p.get("item_id") == item_id]


def stored(m: Mount, item_id: str) -> str:
    assert m.sim is not None
    return str(m.sim.item(item_id).content)


async def test_tools_see_the_source_and_cp_of_it_sends_nothing(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await sources_mount(mount_factory)
    assert await m.read_bytes("Box", "Greeter.lsl") == SOURCE.encode()
    grep = await m.run("grep", "-rl", "GREETING", m.mnt)
    assert grep.stdout.decode().split() == [str(m.path("Box", "Greeter.lsl"))]
    assert (await m.run("cat", m.path("Box", ".slfs", "Greeter.lsl.inworld"))).stdout == FIRESTORM_TEXT.encode()
    copy = tmp_path / "Greeter.lsl"
    await m.run("cp", m.path("Box", "Greeter.lsl"), copy)
    t = mark(m)
    await m.run("cp", copy, m.path("Box", "Greeter.lsl"))
    await settle(m)
    assert saves_of(m, FS_SCRIPT, t) == [] and stored(m, FS_SCRIPT) == FIRESTORM_TEXT
    assert (await m.run("getfattr", "-n", "user.sl.preprocessed", "--only-values",
                        m.path("Box", "Greeter.lsl"), check=False)).stdout == b"1"


async def test_vim_edit_of_a_firestorm_script_is_a_new_envelope(mount_factory: MountFactory) -> None:
    need("vim")
    m = await sources_mount(mount_factory)
    await m.run("vim", "-Nu", "NONE", "-i", "NONE", "-es", "-c", "%s/hello/hi there/", "-c", "wq",
                m.path("Box", "Greeter.lsl"))
    await settle(m)
    edited = SOURCE.replace("hello", "hi there")
    got = envelope.unwrap(stored(m, FS_SCRIPT))
    assert got is not None and got.source == edited and 'llOwnerSay("hi there");' in got.expansion
    assert await m.read_bytes("Box", "Greeter.lsl") == edited.encode()
    assert (await m.thread(os.stat, m.path("Box", "Greeter.lsl"))).st_size == len(edited.encode())


async def test_sed_adds_an_include_then_build_follows_the_library(mount_factory: MountFactory) -> None:
    m = await sources_mount(mount_factory)
    plain = m.path("Box", "Plain.lsl")
    await m.run("sed", "-i", '1i #include "lib.lsl"', plain)
    await m.run("sed", "-i", 's/llOwnerSay("plain")/say("built")/', plain)
    await settle(m)
    source = '#include "lib.lsl"\n' + PLAIN_TEXT.replace('llOwnerSay("plain")', 'say("built")')
    assert await m.read_bytes("Box", "Plain.lsl") == source.encode()
    got = envelope.unwrap(stored(m, PLAIN))
    assert got is not None and got.source == source and "llOwnerSay(s);" in got.expansion
    # The library changes: slfs build saves what depends on it, and only that.
    await m.run("sed", "-i", "s/llOwnerSay(s)/llOwnerSay(\"lib: \" + s)/", m.path("Box", "lib.lsl"))
    await settle(m)
    assert stored(m, LIB) == LIB_TEXT.replace("llOwnerSay(s)", 'llOwnerSay("lib: " + s)')
    t = mark(m)
    _rc, out, _err = await slfs(m, "build", m.path("Box"))
    lines = out.splitlines()
    assert f"{m.path('Box', 'Plain.lsl')}: saved, compiled" in lines
    assert f"{m.path('Box', 'Greeter.lsl')}: saved, compiled" in lines or \
        f"{m.path('Box', 'Greeter.lsl')}: unchanged" in lines
    assert len(saves_of(m, PLAIN, t)) == 1
    assert 'llOwnerSay("lib: " + s);' in stored(m, PLAIN)
    t = mark(m)
    _rc, out, _err = await slfs(m, "build", "--json", m.path("Box"))
    data = json.loads(out)
    assert {r["status"] for r in data["results"]} == {"unchanged"} and data["failed"] == 0
    assert saves_of(m, PLAIN, t) == [] and saves_of(m, FS_SCRIPT, t) == []
    compiles = [json.loads(line) for line in m.path(".slfs", "events").read_text().splitlines()]
    compiles = [e for e in compiles if e["type"] == "compile" and e["path"] == "Box/Plain.lsl"]
    assert compiles[-1]["preprocessed"] is True
    assert compiles[-1]["includes"] == [str(m.path("Box", "lib.lsl"))]


async def test_an_error_in_an_include_is_found_by_vim_q(mount_factory: MountFactory, tmp_path: Path) -> None:
    need("vim")
    include = tmp_path / "include"
    include.mkdir()
    (include / "util.lsl").write_text('ok()\n{\n}\nbroken()\n{\n    llOwnerSay("x" @);\n}\n')
    m = await sources_mount(mount_factory, f"include={include}")
    src = tmp_path / "Plain.lsl"
    src.write_text("#include <util.lsl>\n" + PLAIN_TEXT)
    await m.run("cp", src, m.path("Box", "Plain.lsl"))  # stored; its compile fails
    rc, out, _err = await slfs(m, "diag", m.path("Box", "Plain.lsl"), check=False)
    assert rc == 1 and out.startswith(f"{include / 'util.lsl'}:6:"), out
    assert await m.read_bytes(".slfs", "diagnostics") == out.encode()
    # vim -q over the root diagnostics opens the include at the line.
    where = tmp_path / "where"
    await m.run("vim", "-Nu", "NONE", "-i", "NONE", "-es", "-q", m.path(".slfs", "diagnostics"),
                "-c", f"call writefile([expand('%:p') . ':' . line('.')], '{where}')", "-c", "qa!")
    assert where.read_text().strip() == f"{include / 'util.lsl'}:6"


@pytest.mark.allow_log(
    r"^ERROR slfs\.model\.shutdown: unsaved",
    r"^WARNING slfs\.fs\.guarded: flush:",
    r"^WARNING slfs\.model\.workspace: saving",
)
async def test_a_missing_include_fails_cp_and_keeps_the_source(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await sources_mount(mount_factory)
    src = tmp_path / "Plain.lsl"
    src.write_text('#include "nowhere.lsl"\n' + PLAIN_TEXT)
    t = mark(m)
    res = await m.run("cp", src, m.path("Box", "Plain.lsl"), check=False)
    assert res.returncode != 0 and b"Input/output error" in res.stderr
    await settle(m)
    assert saves_of(m, PLAIN, t) == [] and stored(m, PLAIN) == PLAIN_TEXT
    rc, out, _err = await slfs(m, "diag", m.path("Box", "Plain.lsl"), check=False)
    assert rc == 1 and out.startswith(f"{m.path('Box', 'Plain.lsl')}:1:")
    assert 'include not found: "nowhere.lsl"' in out
    recovered = list((Path(m.env["XDG_STATE_HOME"]) / "slfs" / "recovery").iterdir())
    assert [p.read_text() for p in recovered] == [src.read_text()]


async def test_git_keeps_sources(mount_factory: MountFactory) -> None:
    need("git")
    m = await sources_mount(mount_factory)
    box = m.path("Box")
    await sh(m, f"{GIT} init -q && {GIT} add -A && {GIT} commit -qm init", cwd=box)
    assert (await sh(m, f"{GIT} show HEAD:Greeter.lsl", cwd=box)) == SOURCE
    await sh(m, "sed -i s/hello/changed/ Greeter.lsl", cwd=box)
    await settle(m)
    got = envelope.unwrap(stored(m, FS_SCRIPT))
    assert got is not None and got.source == SOURCE.replace("hello", "changed")
    await sh(m, f"{GIT} checkout -- Greeter.lsl", cwd=box)
    await settle(m)
    got = envelope.unwrap(stored(m, FS_SCRIPT))
    assert got is not None and got.source == SOURCE and 'llOwnerSay("hello");' in got.expansion
    assert (await sh(m, f"{GIT} status --porcelain", cwd=box)) == ""
