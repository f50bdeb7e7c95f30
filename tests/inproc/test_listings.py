"""Listings served from the fs layer's per-folder cache (Operations._folder_listing) show every
change at the next opendir: files created, renamed and deleted through the mount or in-world,
objects published and unpublished, overlay files (no mount)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pyfuse3
import pytest
import trio
from support.inproc import CTX, Driver, fails, fs_against_sim
from support.writes import NOTE, OBJ, write_world


@pytest.fixture(autouse=True)
def _replies(monkeypatch: pytest.MonkeyPatch) -> None:
    """readdir's replies go to the listing being read (`listed`), as the kernel's buffer would."""

    def reply(token: list[tuple[str, int]], name: bytes, attr: pyfuse3.EntryAttributes, _off: int) -> bool:
        token.append((os.fsdecode(name), attr.st_ino))
        return True

    monkeypatch.setattr(pyfuse3, "readdir_reply", reply)


async def listed(fs: Driver, path: str) -> list[str]:
    """opendir, readdir, releasedir: the names the kernel would be given."""
    fh = await fs.ops.opendir(await fs.lookup(path), CTX)
    try:
        got: list[tuple[str, int]] = []
        await fs.ops.readdir(fh, 0, got)  # type: ignore[arg-type]
        return [name for name, _ino in got]
    finally:
        await fs.ops.releasedir(fh)


async def shows(fs: Driver, path: str, present: set[str], absent: set[str] = frozenset()) -> None:  # type: ignore[assignment]
    """Wait (a viewer's change takes a moment to arrive) until the listing of `path` holds every
    name of `present` and none of `absent`."""
    with trio.fail_after(5):
        while True:
            names = set(await listed(fs, path))
            if present <= names and not names & absent:
                return
            await trio.sleep(0.01)


async def test_files_created_renamed_and_deleted_through_the_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        first = await listed(fs, "Box")
        assert "Note" in first
        folder = fs.ws.tree.objects[OBJ]
        cached = fs.ops.listings.folders[folder.inode]
        assert await listed(fs, "Box") == first and fs.ops.listings.folders[folder.inode] is cached  # served again
        fh = await fs.create("Box/Fresh")
        assert "Fresh" in await listed(fs, "Box")  # a new file, before it exists in-world
        await fs.ops.write(fh, 0, b"new\n")
        await fs.close(fh)
        await shows(fs, "Box", {"Fresh"})
        assert "Fresh" in await listed(fs, "Box")  # created in-world now: an item
        await fs.rename("Box/Fresh", "Box/Fresher")
        await shows(fs, "Box", {"Fresher"}, {"Fresh"})
        assert "Fresh" not in await listed(fs, "Box")
        await fs.unlink("Box/Fresher")
        assert "Fresher" not in await listed(fs, "Box")
        await fs.rename("Box/Note", "Box/Memo")
        names = await listed(fs, "Box")
        assert "Memo" in names and "Note" not in names


async def test_changes_made_in_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert "Note" in await listed(fs, "Box")
        assert "Note" in await listed(fs, "Box")
        await fs.sim.rename_item(NOTE, "Letter")
        await shows(fs, "Box", {"Letter"}, {"Note"})
        await fs.sim.remove_item(NOTE)
        await shows(fs, "Box", set(), {"Letter"})
        assert "Box" in await listed(fs, "")
        assert "Box" in await listed(fs, "")
        await fs.sim.unpublish(OBJ)
        await shows(fs, "", set(), {"Box"})
        await fs.sim.publish(OBJ)
        await shows(fs, "", {"Box"})


async def test_overlay_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        assert await listed(fs, "Box") == await listed(fs, "Box")
        fh = await fs.create("Box/.notes")
        await fs.close(fh)
        assert ".notes" in await listed(fs, "Box")
        await fs.unlink("Box/.notes")
        assert ".notes" not in await listed(fs, "Box")
        # Written into the overlay directory from outside the mount: seen at once too.
        folder = fs.ws.tree.objects[OBJ]
        prim = next(iter(folder.prims.values()))
        base = fs.ops.overlay.folder_dir(prim)
        assert base is not None
        before = await listed(fs, f"Box/{prim.name}")
        assert before == await listed(fs, f"Box/{prim.name}") and ".outside" not in before
        base.mkdir(parents=True)
        (base / ".outside").write_text("x\n")
        assert ".outside" in await listed(fs, f"Box/{prim.name}")
        (base / ".outside").unlink()
        base.rmdir()
        assert await listed(fs, f"Box/{prim.name}") == before


async def test_a_control_directory_follows_its_object_published_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       viewer_version: int) -> None:
    """An object removed and published again is a new folder under the same inode: `Box/.slfs`
    shows the new folder's sidecars, not the removed one's. Once the kernel forgets the removed
    `Box` and its `.slfs`, the old folder is emptied, as on G1 after a reconnect, where
    every object is published again: a script's `.state` was missing from then on."""
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        box = await fs.lookup("Box")
        ctl = await fs.lookup("Box/.slfs")
        note_diag = (await fs.ops.lookup(ctl, b"Note.diag", CTX)).st_ino
        await fs.sim.unpublish(OBJ)
        await shows(fs, "", set(), {"Box"})
        everything = 1 << 20  # all the kernel's references (lookups and listings alike)
        await fs.ops.forget([(note_diag, everything), (ctl, everything), (box, everything)])
        assert await fails(fs.ops.lookup(ctl, b"Note.diag", CTX)) == errno.ENOENT  # gone with its object
        await fs.sim.publish(OBJ)
        await shows(fs, "", {"Box"})
        assert await fs.lookup("Box/.slfs") == ctl
        assert (await fs.ops.lookup(ctl, b"Note.diag", CTX)).st_ino == note_diag
