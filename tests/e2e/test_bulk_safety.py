"""Bulk work is safe: a re-created file starts empty, an oversize write is refused whole, identical
text is never saved again, times programs set are kept (rsync -a settles), and an emptied text goes
to the viewer, which decides. Each case is checked from the simulator's call log."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import slfs
from support.mount import Mount, MountFactory
from support.writes import (
    GRACE,
    MAIN,
    MAIN_TEXT,
    NOTE,
    NOTE_TEXT,
    assert_writes,
    content,
    item_ids,
    listing,
    mark,
    need,
    recovery_files,
    saves,
    settle,
    sh,
    write_file,
    write_mount,
    writes,
)

from slfs.world.naming_rules import NOTECARD_MAX, SCRIPT_MAX

pytestmark = pytest.mark.generations("G1", "G2", "G3", "G4")

async def mtime(m: Mount, *parts: str) -> int:
    st = await m.thread(os.stat, m.path(*parts))  # never on the trio thread: the simulator runs there
    return int(st.st_mtime_ns)


async def remount(m: Mount) -> None:
    await m.restart_daemon(options=[f"delete_grace={GRACE}"])
    if m.generation == "G1":
        await m.explore_published()


NEW_MAIN = "default { state_entry() { llOwnerSay(\"new\"); } }\n"


async def test_rm_then_a_new_file_of_the_name_holds_exactly_the_new_text(mount_factory: MountFactory) -> None:
    m = await write_mount(mount_factory)
    t = mark(m)
    # What bash's `>` does after an rm: open(O_CREAT|O_TRUNC), a flush of the duplicated fd before
    # the write, the write, the close. The item is kept; its old text is not.
    await sh(m, f"cd {m.path('Box')} && rm Main.lsl && printf '%s' '{NEW_MAIN}' > Main.lsl")
    await settle(m)
    assert content(m, MAIN) == NEW_MAIN
    assert item_ids(m)["Main"] == MAIN
    assert_writes(m, t, saves(MAIN))
    assert (await m.read_bytes("Box", "Main.lsl")) == NEW_MAIN.encode()


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: release:", r"^WARNING slfs\.model\.workspace:")
async def test_an_rm_then_touch_keeps_the_item(mount_factory: MountFactory, viewer_generation: str | None) -> None:
    m = await write_mount(mount_factory)
    t = mark(m)
    await sh(m, f"cd {m.path('Box')} && rm Note && touch Note", check=False)
    await settle(m)
    assert item_ids(m)["Note"] == NOTE
    # An empty text goes to the viewer: the documents and G4 store it, G1-G3 refuse it and the
    # file shows the in-world text again.
    refuses = viewer_generation in ("G1", "G2", "G3")
    assert content(m, NOTE) == (NOTE_TEXT if refuses else "")
    assert (await m.read_bytes("Box", "Note")) == (NOTE_TEXT.encode() if refuses else b"")
    assert_writes(m, t, saves(NOTE))


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: setattr:",
    r"^WARNING slfs\.fs\.guarded: write:",
    r"^WARNING slfs\.model\.workspace:",
)
@pytest.mark.parametrize("how", ["cp", "dd", "append", "truncate"])
async def test_an_oversize_script_is_refused_whole(mount_factory: MountFactory, how: str, tmp_path: Path) -> None:
    need("dd", "truncate")
    m = await write_mount(mount_factory)
    big = tmp_path / "big.lsl"
    big.write_bytes(b"// x\n" * (SCRIPT_MAX // 5 + 1))
    target = m.path("Box", "Main.lsl")
    t = mark(m)
    script = {
        "cp": f"cp {big} {target}",
        "dd": f"dd if={big} of={target} bs=4096 status=none",
        "append": f"cat {big} >> {target}",
        "truncate": f"truncate -s {SCRIPT_MAX + 1} {target}",
    }[how]
    out = await sh(m, script, check=False)
    assert "File too large" in out, out
    await settle(m)
    assert_writes(m, t, [])
    assert content(m, MAIN) == MAIN_TEXT
    assert (await m.read_bytes("Box", "Main.lsl")) == MAIN_TEXT.encode()
    status = await m.status()
    assert "Main.lsl" in status["last_error"] and "262144" in status["last_error"], status["last_error"]
    assert "nothing was saved" in status["last_error"]
    rc, out, _err = await slfs(m, "events", "--json")
    refused = [e for e in map(json.loads, out.splitlines()) if e["type"] == "refused"]
    assert rc == 0 and refused and refused[-1]["errno"] == "EFBIG" and refused[-1]["path"] == "Box/Main.lsl"


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: write:", r"^WARNING slfs\.model\.workspace:")
async def test_a_new_oversize_file_is_not_created(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await write_mount(mount_factory)
    big_note = tmp_path / "big"
    big_note.write_bytes(b"n" * (NOTECARD_MAX + 4_464))
    big_script = tmp_path / "big.lsl"
    big_script.write_bytes(b"/" * (SCRIPT_MAX + 1))
    t = mark(m)
    out = await sh(m, f"cp {big_note} {m.path('Box', 'Huge')}; cp {big_script} {m.path('Box', 'Huge.lsl')}",
                   check=False)
    assert out.count("File too large") == 2, out
    await settle(m)
    assert_writes(m, t, [])
    assert "Huge" not in listing(m, "Box") and "Huge.lsl" not in listing(m, "Box")
    assert recovery_files(m) == []


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: getattr: read", r"^WARNING slfs\.fs\.guarded: open:")
async def test_identical_text_is_never_saved_again(mount_factory: MountFactory, tmp_path: Path) -> None:
    need("rsync")
    m = await write_mount(mount_factory)
    await m.thread(os.listdir, m.path("Box"))
    copy = tmp_path / "copy"
    await sh(m, f"cp -r {m.path('Box')}/. {copy}/", check=False)  # not Frozen where it cannot be read (G1)
    t = mark(m)
    # cp -r of an unchanged object, a cp of one file, a rename-over of the same text, sed that
    # changes nothing, and a write(2) of the same bytes through an open file.
    await sh(m, f"cp -r {copy}/. {m.path('Box')}/ 2>&1 | grep -v Frozen; "
                f"cp {copy}/Main.lsl {m.path('Box', 'Main.lsl')}; "
                f"sed -i 's/nothing-matches-this//' {m.path('Box', 'Note')}", check=False)
    await m.thread(write_file, m.path("Box", "Main.lsl"), MAIN_TEXT.encode())
    await settle(m)
    assert_writes(m, t, [])
    assert content(m, MAIN) == MAIN_TEXT and content(m, NOTE) == NOTE_TEXT


async def test_times_set_are_kept_and_rsync_settles(mount_factory: MountFactory, tmp_path: Path) -> None:
    need("rsync", "touch")
    m = await write_mount(mount_factory)
    src = tmp_path / "src"
    await sh(m, f"mkdir {src} && cp {m.path('Box', 'Main.lsl')} {m.path('Box', 'Note')} {src}/")
    await sh(m, f"touch -d 2021-06-01T10:00:00.123456789 {src}/Main.lsl")  # the same text, another time
    (src / "Note").write_text("rsynced note\n")
    (src / "Extra").write_text("a new notecard\n")
    t = mark(m)
    await sh(m, f"rsync -a {src}/ {m.path('Box')}/")
    await settle(m)
    assert content(m, NOTE) == "rsynced note\n"
    sent = writes(m, t)
    assert sorted(meth for meth, _ in sent) == ["object.content.save", "object.item.create"], sent
    for name in ("Main.lsl", "Note", "Extra"):
        assert await mtime(m, "Box", name) == os.stat(src / name).st_mtime_ns, name
    t = mark(m)
    second = await sh(m, f"rsync -ai {src}/ {m.path('Box')}/")
    await settle(m)
    assert_writes(m, t, [])
    assert not [line for line in second.splitlines() if line.startswith(">f")], second
    # touch -d is kept, and across a remount of the same viewer.
    await sh(m, f"touch -d 2020-01-02T03:04:05 {m.path('Box', 'Main.lsl')}")
    want = await mtime(m, "Box", "Main.lsl")
    assert want == 1577934245 * 10**9
    note_mtime = await mtime(m, "Box", "Note")
    await remount(m)
    assert await mtime(m, "Box", "Main.lsl") == want
    assert await mtime(m, "Box", "Note") == note_mtime
    t = mark(m)
    third = await sh(m, f"rsync -ai {src}/ {m.path('Box')}/", check=False)
    await settle(m)
    assert [line for line in third.splitlines() if line.startswith(">f")] == [">f..t...... Main.lsl"], third
    assert_writes(m, t, [])


async def test_a_remount_shows_when_the_text_was_first_seen(mount_factory: MountFactory) -> None:
    """A first fetch's mtime is when the history first saw the text (whole microseconds), and it
    never moves while the text does not: editors take a moved mtime for a change on disk."""
    m = await write_mount(mount_factory)
    seen = await mtime(m, "Box", "Note")
    assert seen % 1000 == 0
    await m.read_bytes("Box", "Note")
    assert await mtime(m, "Box", "Note") == seen
    await remount(m)
    assert await mtime(m, "Box", "Note") == seen


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: flush:",
    r"^WARNING slfs\.fs\.guarded: release:",
    r"^WARNING slfs\.model\.workspace:",
)
async def test_an_emptied_notecard_goes_to_the_viewer(mount_factory: MountFactory,
                                                      viewer_generation: str | None) -> None:
    need("truncate")
    m = await write_mount(mount_factory)
    refuses = viewer_generation in ("G1", "G2", "G3")
    for how in (f"truncate -s 0 {m.path('Box', 'Note')}", f": > {m.path('Box', 'Note')}"):
        t = mark(m)
        out = await sh(m, how, check=False)
        await settle(m)
        assert_writes(m, t, saves(NOTE))
        if refuses:
            # truncate(2) by path saves at once, so the refusal is its errno; bash's `>` closes
            # without looking, and the reason is in the status.
            assert "Invalid argument" in out or how.startswith(":"), out
            assert content(m, NOTE) == NOTE_TEXT

            async def shows_inworld_text() -> bool:  # the kernel's cached empty page is invalidated after the refusal
                return (await m.read_bytes("Box", "Note")) == NOTE_TEXT.encode()
            await m.wait_for(shows_inworld_text, 5, "the file showing the in-world text again")
            status = await m.status()
            assert "content is required" in status["last_error"], status["last_error"]
        else:
            assert out == ""
            assert content(m, NOTE) == ""
            assert (await m.read_bytes("Box", "Note")) == b""
            await m.thread(write_file, m.path("Box", "Note"), NOTE_TEXT.encode())
            await settle(m)


async def test_recompile_one_script_saves_its_text_again(mount_factory: MountFactory) -> None:
    """Identical text never goes through the file, so recompiling (and resetting) one script is a
    verb of its own."""
    m = await write_mount(mount_factory)
    t = mark(m)
    rc, out, _err = await slfs(m, "recompile", m.path("Box", "Main.lsl"))
    assert rc == 0 and out.strip().endswith("Main.lsl: recompiled, compiled"), out
    await settle(m)
    assert_writes(m, t, saves(MAIN))
    assert content(m, MAIN) == MAIN_TEXT
    rc, _out, err = await slfs(m, "recompile", m.path("Box"), check=False)
    assert rc == 2 and "--target" in err
    rc, out, err = await slfs(m, "recompile", m.path("Box", "Note"), check=False)
    assert rc == 1 and "not a script" in out + err


async def test_cp_p_keeps_the_source_time(mount_factory: MountFactory, tmp_path: Path) -> None:
    """cp -p sets the time through the open file, before the close that saves it (and creates a
    new file): the saved item shows the source's time."""
    m = await write_mount(mount_factory)
    note, fresh = tmp_path / "Note", tmp_path / "Fresh"
    note.write_text("copied with its time\n")
    fresh.write_text("a new notecard\n")
    await sh(m, f"touch -d 2019-05-06T07:08:09.5 {note} {fresh} && cp -p {note} {fresh} {m.path('Box')}/")
    await settle(m)
    assert content(m, NOTE) == "copied with its time\n"
    for name in ("Note", "Fresh"):
        assert await mtime(m, "Box", name) == os.stat(tmp_path / name).st_mtime_ns, name
