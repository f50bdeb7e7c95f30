"""Names from the network on the local disk (issue 21 items 7 and 11b): a trash or recovery copy of
an item with 255-byte names fits the file system and keeps the full path; an rm whose trash copy
cannot be written fails with an errno and the item stays; an id the viewer sends as a path never
reaches a file name; overlay directories are the user's alone."""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path

import pytest
import trio
from support.inproc import Driver, fails, fs_against_sim
from support.worlds import FULL, item, u

from slfs.local.keep import META_SUFFIX, NAME_MAX
from slfs.model.options import Options
from slfs.protocol.rpc_errors import RpcError
from slfs.sim import World
from slfs.sim.world import world_from_json

OBJ_NAME = "O" * 255
PRIM_NAME = "P" * 255
ITEM_NAME = "N" * 255
OBJ, PRIM, NOTE, SCRIPT = u(1, "b"), u(2, "c"), u(1), u(2)
PATH_MAX = os.pathconf("/", "PC_PATH_MAX")


def long_world() -> World:
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester", "objects": [{
        "object_id": OBJ, "object_name": OBJ_NAME,
        "inventory": [item(SCRIPT, "S" * 200, "script", "default {}\n", subtype=0, vm="mono")],
        "linked_objects": [{"link_id": PRIM, "link_name": PRIM_NAME, "permissions": FULL,
                            "inventory": [item(NOTE, ITEM_NAME, content="deep\n")]}],
    }]})


def calls(fs: Driver, method: str) -> int:
    return sum(1 for m, _ in fs.sim.calls if m == method)


async def prim_dir(fs: Driver) -> str:
    (name,) = [n for n in await fs.entries(OBJ_NAME) if n.startswith("P")]
    return name


def copies(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.endswith(META_SUFFIX)) if folder.is_dir() else []


async def test_rm_of_a_deep_long_named_item_keeps_a_trash_copy_with_its_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, long_world()) as fs:
        shown = f"{OBJ_NAME}/{await prim_dir(fs)}/{ITEM_NAME}"
        assert await fs.read_file(shown) == b"deep\n"
        await fs.unlink(shown)
        with trio.fail_after(10):
            while calls(fs, "object.item.delete") == 0:
                await trio.sleep(0.02)
        await fs.svc.writer.wait_idle(5)
        trash = tmp_path / "xdg_data_home" / "slfs" / "trash"
        (copy,) = copies(trash)
        assert copy.read_bytes() == b"deep\n"
        assert len(os.fsencode(copy.name)) <= NAME_MAX and len(os.fsencode(copy)) < PATH_MAX
        meta = json.loads(copy.with_name(copy.name + META_SUFFIX).read_text())
        assert meta["path"] == shown and meta["kind"] == "trash"
        assert fs.ws.status()["disk_errors"] == 0


async def test_failed_save_of_a_long_named_item_keeps_a_recovery_copy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, long_world()) as fs:
        shown = f"{OBJ_NAME}/{await prim_dir(fs)}/{ITEM_NAME}"
        fs.sim.fail_next("object.content.save", RpcError(-32603, "Internal error"))
        assert await fails(fs.write_file(shown, b"precious\n")) == errno.EIO
        (copy,) = copies(tmp_path / "xdg_state_home" / "slfs" / "recovery")
        assert copy.read_bytes() == b"precious\n"
        assert json.loads(copy.with_name(copy.name + META_SUFFIX).read_text())["path"] == shown
        assert fs.ws.status()["last_error"].endswith(f"your content is in {copy}")


async def test_rm_fails_when_the_trash_cannot_take_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, long_world()) as fs:
        shown = f"{OBJ_NAME}/{await prim_dir(fs)}/{ITEM_NAME}"
        (tmp_path / "xdg_data_home" / "slfs").mkdir(parents=True, exist_ok=True)
        (tmp_path / "xdg_data_home" / "slfs" / "trash").write_text("a file where the trash should be")
        assert await fails(fs.unlink(shown)) == errno.EIO
        assert ITEM_NAME in await fs.entries(shown.rpartition("/")[0])
        assert await fs.read_file(shown) == b"deep\n"
        await trio.sleep(0.4)  # past the delete grace (0.2 s): nothing was scheduled
        assert calls(fs, "object.item.delete") == 0
        status = fs.ws.status()
        assert "was not deleted: its trash copy cannot be written" in status["last_error"], status
        assert status["disk_errors"] == 1


HOSTILE_IDS = ["../../../x", "a/b", "..", "\x1b]52;c;eA==\x07"]
HOSTILE_ITEM_IDS = ["../../../y", "c/d", "...", "\x1b]0;title\x07"]


def hostile_world() -> World:
    objects = [{"object_id": oid, "object_name": "Box", "inventory": [item(u(10 + i), "Note", content="n\n")]}
               for i, oid in enumerate([u(1, "b"), *HOSTILE_IDS])]
    objects.append({"object_id": u(2, "b"), "object_name": "Other",
                    "inventory": [item(iid, "Same", content="s\n") for iid in [u(20), *HOSTILE_ITEM_IDS]]})
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester", "objects": objects})


async def test_ids_the_viewer_sends_never_reach_a_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, hostile_world()) as fs:
        names = await fs.entries("") + await fs.entries("Other")
        assert len([n for n in names if n.startswith("Box")]) == 1 + len(HOSTILE_IDS)
        assert len([n for n in names if n.startswith("Same")]) == 1 + len(HOSTILE_IDS)
        for name in names:
            assert "/" not in name and ".." not in name and "\x1b" not in name, name
        # The by-id links are named by UUIDs only.
        by_id = await fs.entries(".slfs/by-id")
        assert by_id and all(len(n) == 36 and "/" not in n for n in by_id), by_id
        # A dot file beside the tagged objects stays in the overlay.
        overlay = tmp_path / "xdg_data_home" / "slfs" / "overlay"
        for name in (n for n in names if n.startswith("Box@")):
            await fs.write_file(f"{name}/.keep", b"k", create=True)
        made = sorted(str(p.relative_to(overlay)) for p in overlay.rglob(".keep"))
        # Each in its object's home, named by the id's digest (overlay_homes.id_name), never the id.
        home = re.compile(r"agents/[0-9a-f-]{36}/objects/[0-9a-f]{1,64}/own/\.keep")
        assert len(set(made)) == len(HOSTILE_IDS) and all(home.fullmatch(p) for p in made), made
        assert not (tmp_path / "xdg_data_home" / "x").exists()


async def test_overlay_dirs_are_0700(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, long_world()) as fs:
        await fs.write_file(f"{OBJ_NAME}/{await prim_dir(fs)}/.editorconfig", b"x", create=True)
        data = tmp_path / "xdg_data_home" / "slfs"
        dirs = [data, data / "overlay", *(p for p in (data / "overlay").rglob("*") if p.is_dir())]
        # slfs, overlay, agents, the agent, objects, the object's home, prims, the prim
        assert len(dirs) == 8, dirs
        for d in dirs:
            assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
        index = [p for p in (data / "overlay").rglob("index.json")]
        assert len(index) == 1 and stat.S_IMODE(index[0].stat().st_mode) == 0o600


async def test_overlay_dirs_are_0755_with_allow_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, long_world(),
                              options=Options(delete_grace=0.2, fuse=("allow_other",))) as fs:
        await fs.write_file(f"{OBJ_NAME}/.editorconfig", b"x", create=True)
        own = fs.ops.overlay.folder_dir(fs.ws.tree.objects[OBJ])
        assert own is not None and stat.S_IMODE(own.stat().st_mode) == 0o755
