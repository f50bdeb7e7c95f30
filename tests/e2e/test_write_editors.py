"""Write path, end to end: real editors (vim in every backup mode, emacs, nano through tmux)."""

from __future__ import annotations

import os
import uuid

import pytest
import trio
from support.mount import Mount
from support.writes import (
    ARM_DIR,
    MAIN,
    MAIN_TEXT,
    NOTE,
    NOTE_TEXT,
    TOOL,
    TOOL_TEXT,
    assert_writes,
    content,
    item_ids,
    listing,
    mark,
    need,
    saves,
    settle,
)

# G1 differs in ways tests/e2e/test_viewer_generations.py covers (no object.list, set_running or
# commands; notecards need copy+modify; runtime output only for live-sync subscribers).
pytestmark = pytest.mark.generations("G2", "G3", "G4")

BOX = sorted(["Note", "Main.lsl", "Tool.luau", "Frozen", ARM_DIR])


def vim_argv(path: os.PathLike[str], *settings: str) -> list[str]:
    argv = ["vim", "-Nu", "NONE", "-i", "NONE", "-es"]
    for s in settings:
        argv += ["-c", f"set {s}"]
    return [*argv, "-c", "%s/one/ONE/", "-c", "wq", os.fspath(path)]


@pytest.mark.parametrize("settings", [(), ("backupcopy=yes",), ("backupcopy=no",), ("nowritebackup",),
                                      ("backup", "backupcopy=no")],
                         ids=["defaults", "backupcopy=yes", "backupcopy=no", "nowritebackup", "backup"])
async def test_vim(wm: Mount, settings: tuple[str, ...]) -> None:
    need("vim")
    m = wm
    t = mark(m)
    await m.run(*vim_argv(m.path("Box", "Note"), *settings))
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT.replace("one", "ONE")
    assert item_ids(m)["Note"] == NOTE
    assert_writes(m, t, saves(NOTE))
    expected = BOX + (["Note~"] if "backup" in settings else [])
    assert listing(m, "Box") == sorted(expected)
    if "backup" in settings:
        assert (await m.read_bytes("Box", "Note~")) == NOTE_TEXT.encode()


async def test_vim_twice_and_scripts(wm: Mount) -> None:
    need("vim")
    m = wm
    t = mark(m)
    for _ in range(2):
        await m.run("vim", "-Nu", "NONE", "-i", "NONE", "-es", "-c", "%s/one/one!/", "-c", "wq",
                    m.path("Box", "Main.lsl"))
    await m.run("vim", "-Nu", "NONE", "-i", "NONE", "-es", "-c", "$put ='-- end'", "-c", "wq",
                m.path("Box", "Tool.luau"))
    await settle(m)
    assert content(m, MAIN) == MAIN_TEXT.replace("one", "one!!")
    assert content(m, TOOL) == TOOL_TEXT + "-- end\n"
    assert_writes(m, t, saves(MAIN, 2) + saves(TOOL))
    it = m.sim.item(MAIN)  # type: ignore[union-attr]
    assert it.running and it.vm == "mono"


async def test_vim_new_file(wm: Mount) -> None:
    need("vim")
    m = wm
    t = mark(m)
    await m.run("vim", "-Nu", "NONE", "-i", "NONE", "-es", "-c", "call setline(1, 'default { state_entry() { } }')",
                "-c", "wq", m.path("Box", "Fresh.lsl"))
    await settle(m)
    ids = item_ids(m)
    assert content(m, ids["Fresh"]) == "default { state_entry() { } }\n"
    assert_writes(m, t, [("object.item.create", "Fresh"), ("object.content.save", ids["Fresh"])])
    assert m.sim.item(ids["Fresh"]).vm == "mono"  # type: ignore[union-attr]


async def test_emacs_first_and_later_saves(wm: Mount) -> None:
    need("emacs")
    m = wm
    path = m.path("Box", "Note")
    elisp = (f'(progn (find-file "{path}") (goto-char (point-max)) (insert "four\\n") (save-buffer)'
             ' (insert "five\\n") (save-buffer) (kill-emacs 0))')
    t = mark(m)
    await m.run("emacs", "--batch", "-Q", "--eval", elisp, timeout=60)
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT + "four\nfive\n"
    assert item_ids(m)["Note"] == NOTE
    assert_writes(m, t, saves(NOTE, 2))
    # the first save of the session renamed Note to Note~: the backup stays, locally
    assert listing(m, "Box") == sorted([*BOX, "Note~"])
    assert (await m.read_bytes("Box", "Note~")) == NOTE_TEXT.encode()
    assert "Note~" not in item_ids(m)


async def tmux(m: Mount, *args: str) -> str:
    return (await m.run("tmux", *args)).stdout.decode()


async def test_nano_through_tmux(wm: Mount) -> None:
    need("nano", "tmux")
    m = wm
    sock = f"slfs-{uuid.uuid4().hex[:8]}"
    t = mark(m)
    await tmux(m, "-L", sock, "new-session", "-d", "-x", "100", "-y", "30", "-s", "ed",
               f"nano --ignorercfiles '{m.path('Box', 'Note')}'; sleep 0.2")
    try:
        # Keys sent before nano has the terminal in raw mode reach it as ^J (justify), not Enter:
        # wait until it shows the file.
        async def shows(text: str) -> None:
            with trio.fail_after(10):
                while text not in await tmux(m, "-L", sock, "capture-pane", "-p", "-t", "ed"):
                    await trio.sleep(0.05)

        await shows("line one")
        await tmux(m, "-L", sock, "send-keys", "-t", "ed", "zero", "Enter")
        await shows("zero")
        await tmux(m, "-L", sock, "send-keys", "-t", "ed", "C-o")
        await shows("File Name to Write")
        await tmux(m, "-L", sock, "send-keys", "-t", "ed", "Enter")
        await shows("Wrote")
        await tmux(m, "-L", sock, "send-keys", "-t", "ed", "C-x")
        with trio.fail_after(10):
            while (await m.run("tmux", "-L", sock, "has-session", "-t", "ed", check=False)).returncode == 0:
                await trio.sleep(0.1)
    finally:
        await m.run("tmux", "-L", sock, "kill-server", check=False)
    await settle(m)
    assert content(m, NOTE) == "zero\n" + NOTE_TEXT
    assert_writes(m, t, saves(NOTE))
    assert listing(m, "Box") == BOX
