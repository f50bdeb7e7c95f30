"""History on a real mount: `ls`, `cat` and `diff` of `.slfs/history/`, `slfs history` and `slfs
restore` (through a conflict too), an item renamed and one deleted, a store from a previous mount
read back, and a full disk under the store (the save lands; the status says so)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from support.mount import Mount, MountFactory
from support.writes import MAIN, NOTE, NOTE_TEXT, OBJ, content, settle, sim_of, write_mount

pytestmark = pytest.mark.generations()

NOTE_DIR = ("Box", ".slfs", "history", "Note")


async def slfs(m: Mount, *args: str | os.PathLike[str], check: bool = True) -> tuple[int, str, str]:
    argv = [sys.executable, "-m", "slfs", *[os.fspath(a) for a in args]]
    with trio.fail_after(60):
        res = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False, env=m.env)
    out, err = res.stdout.decode(), res.stderr.decode()
    if check:
        assert res.returncode == 0, f"slfs {args} exited {res.returncode}: {out!r} {err!r}"
    return res.returncode, out, err


async def sj(m: Mount, *args: str | os.PathLike[str]) -> Any:
    """`slfs VERB --json ...`: exit status 0, stdout exactly one JSON document."""
    _rc, out, _err = await slfs(m, *args, "--json")
    return json.loads(out)


async def history_names(m: Mount, *parts: str) -> list[str]:
    return sorted(await m.thread(os.listdir, m.path(*parts)))


async def wait_versions(m: Mount, n: int, *parts: str) -> list[str]:
    async def enough() -> bool:
        try:
            return len(await history_names(m, *parts)) >= n
        except FileNotFoundError:
            return False
    await m.wait_for(enough, 10, f"{n} versions in {'/'.join(parts)}")
    return await history_names(m, *parts)


async def save(m: Mount, rel: str, text: str) -> None:
    await m.run("sh", "-c", 'printf %s "$1" > "$2"', "sh", text, str(m.path(rel)))


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: open:")
async def test_ls_cat_diff_and_the_cli(wm: Mount) -> None:
    m = wm
    assert await m.read_bytes("Box", "Note") == NOTE_TEXT.encode()
    await save(m, "Box/Note", "line one\nline 2\nline three\n")
    names = await wait_versions(m, 2, *NOTE_DIR)
    assert [n.rsplit(".", 1)[1] for n in names] == ["fetched", "saved"]  # ls order is time order
    fetched, saved = (m.path(*NOTE_DIR, n) for n in names)
    assert await m.out("cat", fetched) == NOTE_TEXT
    diff = await m.run("diff", fetched, saved, check=False)
    assert diff.returncode == 1 and b"< line two\n---\n> line 2\n" in diff.stdout
    st = await m.thread(os.stat, saved)
    assert st.st_size == len("line one\nline 2\nline three\n") and st.st_mode & 0o777 == 0o444
    assert await m.run("grep", "-l", "line 2", saved)
    assert (await m.run("sh", "-c", f"echo x > '{saved}'", check=False)).returncode != 0  # read-only
    # The CLI lists the same, newest first, and the current one.
    data = await sj(m, "history", m.path("Box", "Note"))
    assert [(v["name"], v["origin"], v["current"]) for v in data["versions"]] == [
        (names[1], "saved", True), (names[0], "fetched", False)]
    _rc, text, _err = await slfs(m, "history", m.path("Box", "Note"))
    assert text.splitlines()[0].split("\t")[:2] == [names[1], "saved"]
    # by-id, and the version event in the event stream.
    assert await history_names(m, ".slfs", "history", "by-id", NOTE) == names
    events = [json.loads(line) for line in (await m.out("cat", m.path(".slfs", "events"))).splitlines()]
    versions = [e for e in events if e["type"] == "version" and e["item_id"] == NOTE]
    assert [(e["path"], e["origin"]) for e in versions] == [("Box/Note", "fetched"), ("Box/Note", "saved")]
    assert "versions" in (await m.status())["history"]


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace:")
async def test_restore_and_restore_through_a_conflict(wm: Mount) -> None:
    m = wm
    await m.read_bytes("Box", "Note")
    await save(m, "Box/Note", "a bad change\n")
    await wait_versions(m, 2, *NOTE_DIR)
    data = await sj(m, "restore", m.path("Box", "Note"))  # the newest version that differs
    assert data["restored"].endswith(".fetched") and not data["created"]
    assert content(m, NOTE) == NOTE_TEXT and await m.read_bytes("Box", "Note") == NOTE_TEXT.encode()
    # Changed in-world while the mount has not caught up: the restore is a conflict, nothing is lost.
    sim = sim_of(m)
    sim.method_latency_ms["object.content.get"] = 1500
    await sim.set_content(NOTE, "changed in-world\n")
    rc, _out, err = await slfs(m, "restore", m.path("Box", "Note"), "2", check=False)
    sim.method_latency_ms.pop("object.content.get")
    assert rc == 1 and "changed in-world since it was read" in err
    assert content(m, NOTE) == "changed in-world\n"
    recovery = Path(m.env["XDG_STATE_HOME"]) / "slfs" / "recovery"
    assert any(p.read_bytes() for p in recovery.iterdir())


async def test_renamed_and_deleted_items_keep_their_history(wm: Mount) -> None:
    m = wm
    await m.read_bytes("Box", "Note")
    await m.run("mv", m.path("Box", "Note"), m.path("Box", "Renamed"))
    assert await wait_versions(m, 1, "Box", ".slfs", "history", "Renamed")
    await m.run("rm", m.path("Box", "Renamed"))
    await settle(m)
    names = await wait_versions(m, 2, "Box", ".slfs", "history", "Renamed")
    assert names[-1].endswith(".deleted")
    assert await m.out("cat", m.path("Box", ".slfs", "history", "Renamed", names[-1])) == NOTE_TEXT
    gone = await sj(m, "history", "--deleted", m.path("Box"))
    assert [(i["name"], i["item_id"], i["deleted"]) for i in gone["items"]] == [("Renamed", NOTE, True)]
    # Restored by name: created again in its prim.
    data = await sj(m, "restore", m.path("Box", "Renamed"))
    assert data["created"] and await m.read_bytes("Box", "Renamed") == NOTE_TEXT.encode()


async def test_a_remount_reads_the_old_store(wm: Mount) -> None:
    m = wm
    await m.read_bytes("Box", "Main.lsl")
    await wait_versions(m, 1, "Box", ".slfs", "history", "Main.lsl")
    before = await history_names(m, ".slfs", "history", "by-id", MAIN)
    await m.restart_daemon()
    if m.generation == "G1":
        await m.explore_published()
    assert await wait_versions(m, len(before), ".slfs", "history", "by-id", MAIN) == before


async def test_the_object_unpublished_history_stays_by_id(wm: Mount) -> None:
    m = wm
    await m.read_bytes("Box", "Note")
    names = await wait_versions(m, 1, *NOTE_DIR)
    await sim_of(m).unpublish(OBJ)

    async def gone() -> bool:
        return not await m.thread(os.path.exists, m.path("Box"))
    await m.wait_for(gone, 10, "Box unpublished")
    assert await history_names(m, ".slfs", "history", "by-id", NOTE) == names


@pytest.mark.allow_log(r"^ERROR slfs\.model\.history: history: a version of")
async def test_a_full_disk_under_the_store(mount_factory: MountFactory, tmp_path: Path) -> None:
    store = tmp_path / "data0" / "slfs" / "history"  # the first mount's XDG_DATA_HOME
    store.mkdir(parents=True, mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(store)], check=True)
    try:
        m = await write_mount(mount_factory)
        big = "x" * 60_000 + "\n"
        for i in range(6):  # far more than the disk holds: every save still lands
            await save(m, "Box/Note", f"{i}{big}")
            assert content(m, NOTE) == f"{i}{big}"

        async def failing() -> bool:
            return (await m.status())["history"].startswith("failing:")
        await m.wait_for(failing, 10, "the status says the history cannot be written")
        status = await m.status()
        assert "full" in status["history"] and int(status["history_errors"]) >= 1
        assert "history:" in m.log_text()
        assert await m.read_bytes("Box", "Note") == f"5{big}".encode()
    finally:
        subprocess.run(["umount", "-l", str(store)], check=False)
