"""Write path, end to end: shell and command-line tools that save in place or by rename."""

from __future__ import annotations

import os

import pytest
from support.mount import Mount, MountFactory
from support.writes import (
    ARM_DIR,
    LEFT,
    LEFT_TEXT,
    MAIN,
    MAIN_TEXT,
    NOTE,
    NOTE_TEXT,
    OBJ,
    assert_writes,
    content,
    item_ids,
    listing,
    mark,
    need,
    save_params,
    saves,
    settle,
    sh,
    sim_of,
    write_mount,
    writes,
)


async def test_shell_redirect_truncate(wm: Mount) -> None:
    m = wm
    t = mark(m)
    await sh(m, f"echo hello > '{m.path('Box', 'Note')}'")
    await settle(m)
    assert content(m, NOTE) == "hello\n"
    assert_writes(m, t, saves(NOTE))


async def test_shell_append(wm: Mount) -> None:
    m = wm
    t = mark(m)
    await sh(m, f"echo four >> '{m.path('Box', 'Note')}'")
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT + "four\n"
    assert_writes(m, t, saves(NOTE))


async def test_script_save_keeps_running_and_vm(wm: Mount) -> None:
    m = wm
    t = mark(m)
    new = MAIN_TEXT.replace('"one"', '"two"')
    await m.thread(m.path("Box", "Main.lsl").write_text, new)
    await settle(m)
    assert content(m, MAIN) == new
    assert_writes(m, t, saves(MAIN))
    (params,) = save_params(m, MAIN, t)
    # `running` is always said, as the script runs (G1 stops a script whose save omits it)
    assert params["running"] is True and "vm" not in params
    it = m.sim.item(MAIN)  # type: ignore[union-attr]
    assert it.running and it.vm == "mono"


async def test_cp_short_over_long(wm: Mount, tmp_path: os.PathLike[str]) -> None:
    m = wm
    src = os.path.join(tmp_path, "short")
    with open(src, "w") as f:
        f.write("tiny\n")
    t = mark(m)
    await m.run("cp", src, m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == "tiny\n"
    assert (await m.read_bytes("Box", "Note")) == b"tiny\n"
    assert_writes(m, t, saves(NOTE))


async def test_cp_a_and_install(wm: Mount, tmp_path: os.PathLike[str]) -> None:
    m = wm
    src = os.path.join(tmp_path, "src")
    with open(src, "w") as f:
        f.write("from cp -a\n")
    os.chmod(src, 0o600)
    t = mark(m)
    await m.run("cp", "-a", src, m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == "from cp -a\n"
    assert_writes(m, t, saves(NOTE))
    with open(src, "w") as f:
        f.write("from install\n")
    t = mark(m)
    await m.run("install", "-m", "644", src, m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == "from install\n"
    assert item_ids(m)["Note"] == NOTE
    # install unlinks and creates (or renames over): only saves, never a create or a delete
    assert {w for w in writes(m, t)} == {
        ("object.content.save", NOTE)}


async def test_dd_notrunc_and_offsets(wm: Mount) -> None:
    m = wm
    t = mark(m)
    await sh(m, f"printf 'LINE' | dd of='{m.path('Box', 'Note')}' bs=1 seek=0 conv=notrunc status=none")
    await settle(m)
    assert content(m, NOTE) == "LINE" + NOTE_TEXT[4:]
    assert_writes(m, t, saves(NOTE))

    def at_offsets() -> None:
        fd = os.open(m.path("Box", "Note"), os.O_RDWR)
        try:
            os.pwrite(fd, b"TWO", 14)
            os.pwrite(fd, b"!", len(NOTE_TEXT) + 2)  # beyond the end: a hole of zeros... then text
        finally:
            os.close(fd)

    t = mark(m)
    await m.thread(at_offsets)
    await settle(m)
    expected = ("LINE" + NOTE_TEXT[4:14] + "TWO" + NOTE_TEXT[17:]) + "\0\0!"
    # the viewer cuts script text at NUL, not notecards: the notecard holds exactly what was written
    assert content(m, NOTE) == expected
    assert_writes(m, t, saves(NOTE))


async def test_truncate(wm: Mount) -> None:
    m = wm
    t = mark(m)
    await m.run("truncate", "-s", "8", m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT[:8]
    # An empty text goes to the viewer: G1-G3 refuse it (EINVAL, and the note keeps its text).
    refuses = sim_of(m).profile.empty_content_rejected
    res = await m.run("truncate", "-s", "0", m.path("Box", "Note"), check=False)
    assert (res.returncode != 0 and b"Invalid argument" in res.stderr) if refuses else res.returncode == 0, res
    await settle(m)
    assert content(m, NOTE) == (NOTE_TEXT[:8] if refuses else "")
    assert_writes(m, t, saves(NOTE, 2))


async def test_o_append(wm: Mount) -> None:
    m = wm

    def append() -> None:
        fd = os.open(m.path("Box", "Note"), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, b"a\n")
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, b"b\n")
        finally:
            os.close(fd)

    t = mark(m)
    await m.thread(append)
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT + "a\nb\n"
    assert_writes(m, t, saves(NOTE))


async def test_two_writers_one_file(wm: Mount) -> None:
    m = wm
    p = m.path("Box", "Note")

    def two() -> None:
        a = os.open(p, os.O_RDWR)
        b = os.open(p, os.O_RDWR)
        try:
            os.pwrite(a, b"AAAA", 0)
            os.pwrite(b, b"BBBB", 5)
            assert os.pread(a, 9, 0) == b"AAAA" + NOTE_TEXT[4:5].encode() + b"BBBB"
        finally:
            os.close(a)
            os.close(b)

    t = mark(m)
    await m.thread(two)
    await settle(m)
    assert content(m, NOTE) == "AAAA" + NOTE_TEXT[4:5] + "BBBB" + NOTE_TEXT[9:]
    # the first close stores both writers' data (one shared buffer); the second has nothing new
    assert_writes(m, t, saves(NOTE))


async def test_flush_without_write_sends_nothing(wm: Mount) -> None:
    m = wm
    p = m.path("Box", "Note")

    def opens() -> None:
        for flags in (os.O_RDONLY, os.O_WRONLY, os.O_RDWR):
            fd = os.open(p, flags)
            os.fsync(fd) if flags != os.O_RDONLY else None
            os.close(fd)

    t = mark(m)
    await m.thread(opens)
    await sh(m, f"touch '{p}'; : >> '{p}'")
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT
    assert_writes(m, t, [])


async def test_sed_i(wm: Mount) -> None:
    m = wm
    t = mark(m)
    await m.run("sed", "-i", "s/two/TWO/", m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT.replace("two", "TWO")
    assert item_ids(m)["Note"] == NOTE
    assert_writes(m, t, saves(NOTE))
    assert listing(m, "Box") == sorted(["Note", "Main.lsl", "Tool.luau", "Frozen", ARM_DIR])


async def test_perl_pi(wm: Mount) -> None:
    need("perl")
    m = wm
    t = mark(m)
    await m.run("perl", "-pi", "-e", "s/one/ONE/", m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT.replace("one", "ONE")
    assert_writes(m, t, saves(NOTE))
    assert listing(m, "Box") == sorted(["Note", "Main.lsl", "Tool.luau", "Frozen", ARM_DIR])


async def test_python_tempfile_replace(wm: Mount) -> None:
    m = wm
    d = m.path("Box")

    def replace() -> None:
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=d)
        with os.fdopen(fd, "w") as f:
            f.write("replaced\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, d / "Main.lsl")

    t = mark(m)
    await m.thread(replace)
    await settle(m)
    assert content(m, MAIN) == "replaced\n"
    assert_writes(m, t, saves(MAIN))
    assert item_ids(m)["Main"] == MAIN


async def test_gedit_style_rename_while_open(wm: Mount) -> None:
    m = wm
    d = m.path("Box")

    def gedit() -> None:
        tmp = d / ".goutputstream-AB12CD"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"from gedit\n")
        os.fsync(fd)
        os.rename(tmp, d / "Note")
        os.write(fd, b"late\n")  # still the same open file: its data now belongs to Note
        os.close(fd)

    t = mark(m)
    await m.thread(gedit)
    await settle(m)
    assert content(m, NOTE) == "from gedit\nlate\n"
    assert (await m.read_bytes("Box", "Note")) == b"from gedit\nlate\n"
    # the rename saves what the file held then; the close stores the write made after it
    assert_writes(m, t, saves(NOTE, 2))
    assert listing(m, "Box") == sorted(["Note", "Main.lsl", "Tool.luau", "Frozen", ARM_DIR])


async def test_rsync_default_and_inplace(wm: Mount, tmp_path: os.PathLike[str]) -> None:
    need("rsync")
    m = wm
    src = os.path.join(tmp_path, "Note")
    with open(src, "w") as f:
        f.write(NOTE_TEXT + "from rsync\n")
    t = mark(m)
    await m.run("rsync", "--checksum", src, m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == NOTE_TEXT + "from rsync\n"
    assert_writes(m, t, saves(NOTE))
    with open(src, "w") as f:
        f.write("inplace\n")
    t = mark(m)
    await m.run("rsync", "--inplace", "--checksum", src, m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == "inplace\n"
    assert_writes(m, t, saves(NOTE))
    assert item_ids(m)["Note"] == NOTE


async def test_tar_extraction(wm: Mount, tmp_path: os.PathLike[str]) -> None:
    m = wm
    base = os.path.join(tmp_path, "x")
    os.mkdir(base)
    for name, text in (("Note", "tarred note\n"), ("New Card", "brand new\n"), ("Fresh.lsl", MAIN_TEXT)):
        with open(os.path.join(base, name), "w") as f:
            f.write(text)
    tarball = os.path.join(tmp_path, "x.tar")
    await m.run("tar", "-cf", tarball, "-C", base, ".")
    t = mark(m)
    await m.run("tar", "-xf", tarball, "-C", m.path("Box"))
    await settle(m)
    ids = item_ids(m)
    assert content(m, NOTE) == "tarred note\n" and ids["Note"] == NOTE
    assert content(m, ids["New Card"]) == "brand new\n"
    assert content(m, ids["Fresh"]) == MAIN_TEXT
    got = sorted(w for w in writes(m, t))
    assert got == sorted([
        ("object.content.save", NOTE),
        ("object.item.create", "New Card"),
        ("object.item.create", "Fresh"),
        ("object.content.save", ids["Fresh"]),
    ])


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: open:")
async def test_cp_r_out_and_back(wm: Mount, tmp_path: os.PathLike[str]) -> None:
    m = wm
    out = os.path.join(tmp_path, "copy")
    await m.run("cp", "-r", m.path("Box"), out)
    assert sorted(os.listdir(out)) == sorted(["Note", "Main.lsl", "Tool.luau", "Frozen", ARM_DIR])
    with open(os.path.join(out, "Note"), "a") as f:
        f.write("edited outside\n")
    with open(os.path.join(out, ARM_DIR, "Left"), "a") as f:
        f.write("arm edited\n")
    t = mark(m)
    # copying the whole tree back: saves only (no create, no delete); the no-modify one is refused
    res = await m.run("cp", "-r", "-T", out, m.path("Box"), check=False)
    await settle(m)
    assert b"Frozen" in res.stderr
    assert content(m, NOTE) == NOTE_TEXT + "edited outside\n"
    assert content(m, LEFT) == LEFT_TEXT + "arm edited\n"
    got = sorted(writes(m, t))
    assert ("object.item.create", "Note") not in got
    assert all(meth == "object.content.save" for meth, _ in got)
    assert {k for _, k in got} >= {NOTE, LEFT}
    assert item_ids(m) == {"Note": NOTE, "Main": MAIN, "Tool": item_ids(m)["Tool"], "Frozen": item_ids(m)["Frozen"]}
    assert OBJ


async def test_bare_truncation_saves_once(wm: Mount) -> None:
    m = wm
    t = mark(m)
    await sh(m, f": > '{m.path('Box', 'Note')}'")
    await settle(m)
    # One save of the empty text. G1-G3 refuse it: the status says so and the file shows the note.
    assert_writes(m, t, saves(NOTE))
    if sim_of(m).profile.empty_content_rejected:
        assert content(m, NOTE) == NOTE_TEXT
        assert "cannot store an empty notecard" in (await m.status())["last_error"]
        assert await m.read_bytes("Box", "Note") == NOTE_TEXT.encode()
    else:
        assert content(m, NOTE) == "" and await m.read_bytes("Box", "Note") == b""


async def test_new_items_kinds_vm_and_viewer_renaming(mount_factory: MountFactory) -> None:
    m = await write_mount(mount_factory, "vm=lsl2")
    box = m.path("Box")
    await sh(m, "echo 'default { state_entry() { } }' > New.lsl && echo 'print(1)' > New.luau && echo hi > Main",
             cwd=box)
    await settle(m)
    ids = item_ids(m)
    sim = m.sim
    assert sim is not None
    assert sim.item(ids["New"]).vm == "lsl2" or sim.item(ids["New 1"]).vm == "lsl2"
    # the notecard `Main` collides with the script Main in-world: the viewer names it `Main 1`
    # and the file shows the final name
    assert "Main 1" in ids and content(m, ids["Main 1"]) == "hi\n"
    names = listing(m, "Box")
    assert "Main 1" in names and "Main.lsl" in names
    assert "Main" not in names
