"""The local overlay belongs to an object's identity (issue 33), on a real mount: `.git` made in one
of two objects named Twin never shows in the other, through a `slfs close` (the other keeps its
folder name) and a publish again; a re-rezzed object (new UUIDs, same name) takes its `.git` and
its child prim's files back; another agent's mount over the same data directory sees none of them;
overlays kept by folder name by an older slfs move to their objects at the first mount."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import attrs
import pytest
from support.cli import slfs
from support.mount import Mount, MountFactory
from support.writes import need, sh

from slfs.sim.world import SimObject, World, sample_world

# Their own mounts: the overlay's state (.git, dot-files, re-rez adoption) is what they check.
pytestmark = [pytest.mark.generations(), pytest.mark.own_mount("the overlay's state is what these tests check")]

TWIN1, TWIN2 = "37110fcc-ce97-534e-9647-f09510813dd4", "4dd59973-25e4-5202-817c-7b5078a18bb5"
HOUSE = "e66d1a51-2375-5a1a-bc85-a3ebb447fab7"
GIT = "git -c user.name=T -c user.email=t@example.com -c init.defaultBranch=main"


async def exists(m: Mount, *parts: str) -> bool:
    return await m.thread(os.path.lexists, m.path(*parts))


async def shown(m: Mount, name: str, present: bool = True) -> None:
    async def done() -> bool:
        return (name in await m.thread(os.listdir, m.mnt)) == present
    await m.wait_for(done, 10, f"{name} {'shown' if present else 'gone'}")


async def git_commit(m: Mount, folder: str) -> None:
    need("git")
    env = f"GIT_CEILING_DIRECTORIES={m.mnt}"
    await sh(m, f"{env} {GIT} init -q && {env} {GIT} add -A && {env} {GIT} commit -qm init", cwd=m.path(folder))
    assert await git_status(m, folder) == ""


async def git_status(m: Mount, folder: str, *args: str) -> str:
    return await sh(m, f"GIT_CEILING_DIRECTORIES={m.mnt} {GIT} status --porcelain {' '.join(args)}",
                    cwd=m.path(folder))


def events(m: Mount) -> list[dict[str, Any]]:
    """The mount's event log so far."""
    logs = sorted((Path(m.env["XDG_STATE_HOME"]) / "slfs").glob("events-*.jsonl"))
    return [json.loads(line) for p in logs for line in p.read_text().splitlines() if line.strip()]


def rerez(world: World, object_id: str) -> str:
    """The object taken into inventory and rezzed again: the same prims and items, new prim UUIDs."""
    old = world.objects.pop(object_id)
    root = attrs.evolve(old.root, prim_id=str(uuid.uuid4()))
    children = [attrs.evolve(c, prim_id=str(uuid.uuid4())) for c in old.children]
    world.objects[root.prim_id] = SimObject(root, children, published=False)
    return root.prim_id


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: could not ask the viewer")
async def test_git_in_one_twin_never_shows_in_the_other(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    await git_commit(m, "Twin")  # Twin is TWIN1 (its UUID sorts first)
    assert not await exists(m, "Twin@4dd59973", ".git")
    await slfs(m, "close", m.path("Twin"))
    await shown(m, "Twin", present=False)
    # The other Twin keeps its folder name and shows nothing of the first's.
    assert sorted(n for n in await m.thread(os.listdir, m.mnt) if n.startswith("Twin")) == ["Twin@4dd59973"]
    assert not await exists(m, "Twin@4dd59973", ".git")
    assert "Twin 2 ready" in await sh(m, "cat Main.lsl", cwd=m.path("Twin@4dd59973"))
    # And across a reconnect (G1 republishes each object: an unpublish and a publish).
    seen = events(m)
    await m.sim.disconnect_all()

    async def back() -> bool:
        now = events(m)[len(seen):]
        return any(e["type"] == "connected" for e in now) and (
            m.generation != "G1" or any(e["type"] == "publish" and e["object_id"] == TWIN2 for e in now))
    await m.wait_for(back, 20, "reconnected (and Twin #2 published again)")
    assert sorted(n for n in await m.thread(os.listdir, m.mnt) if n.startswith("Twin")) == ["Twin@4dd59973"]
    assert not await exists(m, "Twin@4dd59973", ".git")
    # Published again: the plain name is free, and its .git is back, clean.
    await m.sim.publish(TWIN1)
    await shown(m, "Twin")
    assert await exists(m, "Twin", ".git") and await git_status(m, "Twin") == ""
    assert not await exists(m, "Twin@4dd59973", ".git")


async def test_a_rerezzed_object_takes_its_local_files_back(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    await git_commit(m, "House")
    await sh(m, "echo door > .door-notes", cwd=m.path("House", "Door@59196331"))
    await m.sim.unpublish(HOUSE)
    await shown(m, "House", present=False)
    new = rerez(m.sim.world, HOUSE)
    door = next(c.prim_id for c in m.sim.world.objects[new].children if c.name == "Door")
    await m.sim.publish(new)
    await shown(m, "House")
    # Its root prim's script is as committed (the child prims' folders are named by their new UUIDs).
    assert await exists(m, "House", ".git") and await git_status(m, "House", "--", "Controller.lsl") == ""
    assert "door" in await sh(m, "cat .door-notes", cwd=m.path("House", f"Door@{door[:8]}"))
    # A Twin that went away while the other was published is no re-rez: its .git stays its own.
    await git_commit(m, "Twin")
    await m.sim.unpublish(TWIN1)
    await shown(m, "Twin", present=False)
    await m.sim.unpublish(TWIN2)
    await shown(m, "Twin@4dd59973", present=False)
    other = rerez(m.sim.world, TWIN1)
    await m.sim.publish(other)
    await shown(m, "Twin")
    assert not await exists(m, "Twin", ".git")


@pytest.mark.allow_log(r"^WARNING slfs\.session\.incoming: viewer disconnected us")
async def test_another_agent_sees_none_of_them(mount_factory: MountFactory, tmp_path: Path) -> None:
    first = await mount_factory()
    await sh(first, "echo mine > .notes", cwd=first.path("Twin"))
    shared = {"XDG_DATA_HOME": str(tmp_path / "data0")}  # the same data directory as the first
    world = sample_world()
    world.agent_id = "11111111-2222-4333-8444-555555555555"
    second = await mount_factory(world, env=shared)
    assert not await exists(second, "Twin", ".notes")
    await sh(second, "echo theirs > .notes", cwd=second.path("Twin"))
    same = await mount_factory(env=shared)  # the first agent again (the demo's agent, say)
    assert (await same.read_bytes("Twin", ".notes")) == b"mine\n"
    assert (await first.read_bytes("Twin", ".notes")) == b"mine\n"


async def test_old_overlays_kept_by_name_move_at_the_first_mount(mount_factory: MountFactory, tmp_path: Path) -> None:
    legacy = tmp_path / "data0" / "slfs" / "overlay" / "objects"
    for rel, text in (("Hello Cube/.git-like/HEAD", "cube"), ("Twin@4dd59973/.notes", "twin 2"),
                      ("Twin/.notes", "a twin"), ("House/Door@59196331/.door", "door")):
        (legacy / rel).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        (legacy / rel).write_text(text)
    m = await mount_factory()
    assert await m.read_bytes("Hello Cube", ".git-like", "HEAD") == b"cube"
    assert await m.read_bytes("Twin@4dd59973", ".notes") == b"twin 2"
    assert await m.read_bytes("House", "Door@59196331", ".door") == b"door"
    assert not legacy.exists()
    assert "waits for an object named 'Twin'" in m.log_text()
    if m.generation == "G1":
        # G1 lists nothing: each old overlay waits, and is taken as its object is explored; the
        # first Twin explored was then the only object of that name.
        assert await m.read_bytes("Twin", ".notes") == b"a twin"
        return
    # Two objects are named Twin: the plain-named old overlay is neither's; it waits.
    assert not await exists(m, "Twin", ".notes")
    assert "moved to the home of Hello Cube" in m.log_text()
