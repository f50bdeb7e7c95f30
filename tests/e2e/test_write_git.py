"""Write path, end to end: git working in an object directory (.git lives in the local overlay)."""

from __future__ import annotations

from support.mount import Mount
from support.writes import (
    MAIN,
    MAIN_TEXT,
    NOTE,
    NOTE_TEXT,
    TOOL,
    TOOL_TEXT,
    assert_writes,
    content,
    item_ids,
    mark,
    need,
    saves,
    settle,
    sh,
    writes,
)

GIT = "git -c user.name=T -c user.email=t@example.com -c init.defaultBranch=main -c advice.detachedHead=false"


async def git_repo(m: Mount) -> None:
    need("git")
    t = mark(m)
    await sh(m, f"{GIT} init -q && {GIT} add -A && {GIT} commit -qm init", cwd=m.path("Box"))
    assert (await sh(m, f"{GIT} status --porcelain", cwd=m.path("Box"))) == ""
    assert_writes(m, t, [])  # .git is local: nothing reaches the viewer


async def test_git_init_add_commit_checkout(wm: Mount) -> None:
    m = wm
    await git_repo(m)
    box = m.path("Box")
    await sh(m, "echo scribble > Note && echo '// x' >> Main.lsl", cwd=box)
    await settle(m)
    assert content(m, NOTE) == "scribble\n"
    t = mark(m)
    await sh(m, f"{GIT} checkout -- Note Main.lsl", cwd=box)
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT and content(m, MAIN) == MAIN_TEXT
    assert item_ids(m)["Note"] == NOTE and item_ids(m)["Main"] == MAIN
    assert sorted(writes(m, t)) == sorted(saves(NOTE) + saves(MAIN))
    assert (await sh(m, f"{GIT} status --porcelain", cwd=box)) == ""
    assert m.sim.item(MAIN).running  # type: ignore[union-attr]


async def test_git_stash_and_pop(wm: Mount) -> None:
    m = wm
    await git_repo(m)
    box = m.path("Box")
    await sh(m, "echo stashed >> Note", cwd=box)
    t = mark(m)
    await sh(m, f"{GIT} stash -q", cwd=box)
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT
    assert_writes(m, t, saves(NOTE))
    t = mark(m)
    await sh(m, f"{GIT} stash pop -q", cwd=box)
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT + "stashed\n"
    assert item_ids(m)["Note"] == NOTE
    assert_writes(m, t, saves(NOTE))


async def test_git_reset_hard(wm: Mount) -> None:
    m = wm
    await git_repo(m)
    box = m.path("Box")
    await sh(m, "echo a > Note && echo 'print(2)' > Tool.luau", cwd=box)
    t = mark(m)
    await sh(m, f"{GIT} reset -q --hard", cwd=box)
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT and content(m, TOOL) == TOOL_TEXT
    assert item_ids(m)["Note"] == NOTE and item_ids(m)["Tool"] == TOOL
    assert sorted(writes(m, t)) == sorted(saves(NOTE) + saves(TOOL))
    assert (await sh(m, f"{GIT} status --porcelain", cwd=box)) == ""


async def test_git_switch_branches_adding_and_removing(wm: Mount) -> None:
    m = wm
    await git_repo(m)
    box = m.path("Box")
    await sh(m, f"{GIT} checkout -qb feature && echo extra > Extra && {GIT} rm -q Tool.luau && "
                f"{GIT} add Extra && {GIT} commit -qm feature", cwd=box)
    await settle(m)
    ids = item_ids(m)
    assert "Tool" not in ids and content(m, ids["Extra"]) == "extra\n"
    extra = ids["Extra"]
    t = mark(m)
    await sh(m, f"{GIT} checkout -q main", cwd=box)
    await settle(m)
    ids = item_ids(m)
    assert "Extra" not in ids
    assert content(m, ids["Tool"]) == TOOL_TEXT
    assert m.sim.item(ids["Tool"]).subtype == 1  # type: ignore[union-attr]
    assert sorted(writes(m, t)) == sorted([("object.item.create", "Tool"), ("object.content.save", ids["Tool"]),
                                           ("object.item.delete", extra)])
    assert (await sh(m, f"{GIT} status --porcelain", cwd=box)) == ""
    t = mark(m)
    await sh(m, f"{GIT} checkout -q feature && {GIT} checkout -q main", cwd=box)
    await settle(m)
    assert (await sh(m, f"{GIT} status --porcelain", cwd=box)) == ""
    assert content(m, item_ids(m)["Note"]) == NOTE_TEXT and item_ids(m)["Note"] == NOTE

