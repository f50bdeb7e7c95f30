"""Read path, end to end: listings, sizes, content, attributes, modes and names, with real programs."""

from __future__ import annotations

import os
import re
import stat

import pytest
from support.mount import Mount, MountFactory, require_tool
from support.worlds import (
    NAMES_DIRS,
    NAMES_EXPECTED,
    SAMPLE_DIRS,
    SAMPLE_FILES,
    UNREADABLE,
    names_world,
    sample_item,
)

# G1 differs in ways tests/e2e/test_viewer_generations.py covers (no object.list, set_running or
# commands; notecards need copy+modify; runtime output only for live-sync subscribers).
pytestmark = pytest.mark.generations("G2", "G3", "G4")


def content_gets(m: Mount) -> list[str]:
    assert m.sim is not None
    return [p.get("item_id", "") for meth, p in m.sim.calls if meth == "object.content.get"]


def expected_bytes(m: Mount, path: str) -> bytes:
    assert m.sim is not None
    return sample_item(m.sim.world, path).content.encode("utf-8")


async def test_ls_root_and_objects(mounted: Mount) -> None:
    m = mounted
    root = (await m.out("ls", "-1", m.mnt)).splitlines()
    assert sorted(root) == sorted(d for d in SAMPLE_DIRS if "/" not in d)
    cube = (await m.out("ls", "-1", m.path("Hello Cube"))).splitlines()
    assert sorted(cube) == sorted(p.split("/", 1)[1] for p in SAMPLE_FILES if p.startswith("Hello Cube/"))
    assert "Wood" not in cube  # textures are not published
    house = (await m.out("ls", "-1", m.path("House"))).splitlines()
    assert sorted(house) == sorted(
        [d.split("/", 1)[1] for d in SAMPLE_DIRS if d.startswith("House/")] + ["Controller.lsl"]
    )


async def test_ls_l_sizes_exact_before_any_read(mounted: Mount) -> None:
    m = mounted
    assert content_gets(m) == []
    out = await m.out("ls", "-lR", "--time-style=+", m.mnt)
    sizes: dict[str, int] = {}
    folder = ""
    for line in out.splitlines():
        if line.endswith(":") and line.startswith(str(m.mnt)):
            folder = line[len(str(m.mnt)) : -1].lstrip("/")
            continue
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[0].startswith("-"):
            sizes[f"{folder}/{fields[5].strip()}"] = int(fields[4])
    for path in SAMPLE_FILES:
        want = 0 if path in UNREADABLE else len(expected_bytes(m, path))
        assert sizes[path] == want, (path, sizes[path], want)
    assert set(sizes) == set(SAMPLE_FILES)


async def test_listing_prefetch_shows_in_status(mount_factory: MountFactory) -> None:
    """A prim's first listing fetches its items in the background; `fetches_pending` counts them
    until the viewer has answered (the shared test mounts wait on it between tests)."""
    m = await mount_factory(sim_kwargs={"method_latency_ms": {"object.content.get": 3000}})
    assert (await m.status())["fetches_pending"] == "0"
    await m.thread(os.listdir, m.path("Hello Cube"))  # readdir only: a stat could wait on the fetch
    assert int((await m.status())["fetches_pending"]) > 0
    await m.wait_for(lambda: _status_is(m, "fetches_pending", "0"), 30, "the prefetch done")
    assert int((await m.status())["content_fetches"]) >= 1
    assert len(set(content_gets(m))) == len([p for p in SAMPLE_FILES if p.startswith("Hello Cube/")])


async def _status_is(m: Mount, key: str, value: str) -> bool:
    return (await m.status()).get(key) == value


async def test_ls_l_sizes_are_bytes_not_characters(mount_factory: MountFactory) -> None:
    m = await mount_factory(names_world())
    out = await m.out("stat", "-c", "%s", m.path("Names", "Ünïcödé ✓"))
    text = "h\u00e9llo w\u00f6rld \u2713 \U0001f600\n"
    assert int(out) == len(text.encode()) != len(text)
    assert await m.read_bytes("Names", "Ünïcödé ✓") == text.encode()


async def test_cat_every_file(mounted: Mount) -> None:
    m = mounted
    for path in SAMPLE_FILES:
        if path in UNREADABLE:
            continue
        res = await m.run("cat", m.path(path))
        assert res.stdout == expected_bytes(m, path), path


@pytest.mark.allow_log(r"WARNING slfs\.fs\.guarded: open: .*: script is not readable")
async def test_grep_r(mounted: Mount) -> None:
    m = mounted
    require_tool("grep")
    res = await m.run("grep", "-rl", "OwnerSay", m.mnt, check=False)
    got = {os.path.relpath(p, m.mnt) for p in res.stdout.decode().splitlines()}
    want = {p for p in SAMPLE_FILES if p not in UNREADABLE and b"OwnerSay" in expected_bytes(m, p)}
    assert got == want
    # the two unreadable scripts are reported, nothing else fails
    assert res.returncode == 2
    errors = res.stderr.decode().splitlines()
    assert len(errors) == 2 and all("Permission denied" in e for e in errors), errors
    assert ".slfs" not in res.stdout.decode()
    res = await m.run("grep", "-rn", "fix the door", m.mnt, check=False)
    assert res.stdout.decode() == f"{m.mnt}/Hello Cube/Notes\u2215Todo:2:- fix the door\n"


async def test_find(mounted: Mount) -> None:
    m = mounted
    out = await m.out("find", m.mnt)
    got = {os.path.relpath(p, m.mnt) for p in out.splitlines()}
    assert got == {".", *SAMPLE_DIRS, *SAMPLE_FILES}
    files = await m.out("find", m.mnt, "-type", "f", "-name", "*.luau")
    assert sorted(os.path.relpath(p, m.mnt) for p in files.splitlines()) == [
        "Hello Cube/Counter.luau",
        "House/Object@40e55343/Light.luau",
    ]


async def test_stat_and_modes(mounted: Mount) -> None:
    m = mounted
    fmt = "%F|%a|%s|%h|%u"

    async def st(path: str) -> list[str]:
        return (await m.out("stat", "-c", fmt, m.path(path))).strip().split("|")

    hello = await st("Hello Cube/Hello.lsl")
    assert hello == [
        "regular file",
        "644",
        str(len(expected_bytes(m, "Hello Cube/Hello.lsl"))),
        "1",
        str(os.getuid()),
    ]
    assert (await st("Hello Cube"))[:2] == ["directory", "755"]
    assert (await st("House/Door@59196331"))[:2] == ["directory", "755"]
    # no-modify prim: read-only directory and files, even full-permission items
    assert (await st("No Modify Object"))[:2] == ["directory", "555"]
    assert (await st("No Modify Object/Info"))[:2] == ["regular file", "444"]
    assert (await st("No Modify Object/Spinner.lsl"))[:2] == ["regular file", "444"]
    # no-modify notecard: readable, read-only
    assert (await st("Locked Box/Read Me"))[:3] == ["regular file", "444", "37"]
    # scripts without copy or modify permission cannot be read at all
    assert (await st("Locked Box/NoMod Script.lsl"))[:3] == ["regular empty file", "0", "0"]
    assert (await st("Locked Box/NoCopy Script.lsl"))[:3] == ["regular empty file", "0", "0"]
    # the mount root
    root = os.stat(m.mnt)
    assert stat.S_ISDIR(root.st_mode)


@pytest.mark.allow_log(r"WARNING slfs\.fs\.guarded: open: .*: script is not readable")
async def test_unreadable_script_eacces_without_fetch(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    res = await m.run("cat", m.path("Locked Box/NoMod Script.lsl"), check=False)
    assert res.returncode == 1 and b"Permission denied" in res.stderr
    res = await m.run("cat", m.path("Locked Box/NoCopy Script.lsl"), check=False)
    assert res.returncode == 1 and b"Permission denied" in res.stderr
    with pytest.raises(PermissionError):
        await m.read_bytes("Locked Box", "NoMod Script.lsl")
    # listing the folder prefetches the readable items only
    await m.run("ls", "-l", m.path("Locked Box"))
    await m.run("cat", m.path("Locked Box/Read Me"))
    locked = {sample_item(m.sim.world, p).item_id for p in UNREADABLE}
    assert not locked & set(content_gets(m))


def parse_getfattr(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        mt = re.match(r'^([\w.]+)="(.*)"$', line)
        if mt:
            out[mt.group(1)] = mt.group(2)
    return out


@pytest.mark.allow_log(
    r"^WARNING slfs\.model\.workspace: (setxattr|removexattr): Hello Cube/Hello\.lsl: user\.sl\.type (is|cannot)")
async def test_getfattr(mounted: Mount) -> None:
    m = mounted
    require_tool("getfattr")
    assert m.sim is not None
    world = m.sim.world

    async def xattrs(path: str) -> dict[str, str]:
        return parse_getfattr(await m.out("getfattr", "-d", "-m", "-", "--absolute-names", m.path(path)))

    cube_id = "edb64ade-4edb-5ab6-9b00-726ed29bc790"
    hello = sample_item(world, "Hello Cube/Hello.lsl")
    got = await xattrs("Hello Cube/Hello.lsl")
    # Newer viewers send each item's revision; older ones none.
    assert got.pop("user.sl.revision", None) == (str(hello.revision) if m.sim.v2 else None)
    assert got == {
        "user.sl.item_id": hello.item_id,
        "user.sl.prim_id": cube_id,
        "user.sl.object_id": cube_id,
        "user.sl.type": "script",
        "user.sl.description": "",
        "user.sl.perms": "owner=0x7fffffff next_owner=0x0008e000",
        "user.sl.vm": "mono",
        "user.sl.running": "1",
        "user.sl.faulted": "0",
    }
    counter = await xattrs("Hello Cube/Counter.luau")
    assert counter["user.sl.vm"] == "luau" and counter["user.sl.running"] == "1"
    faulty = await xattrs("Hello Cube/Faulty.lsl")
    assert faulty["user.sl.description"] == "Raises a runtime error when started or reset"
    assert faulty["user.sl.running"] == "0"
    notes = await xattrs("Hello Cube/Notes\u2215Todo")
    assert set(notes) == {
        "user.sl.item_id",
        "user.sl.prim_id",
        "user.sl.object_id",
        "user.sl.type",
        "user.sl.description",
        "user.sl.perms",
        "user.sl.embedded_items",
        *(["user.sl.revision"] if m.sim.v2 else []),
    }
    assert notes["user.sl.type"] == "notecard"
    assert notes["user.sl.embedded_items"] == "0"  # the stat fetched it; none embedded
    locked = await xattrs("Locked Box/NoMod Script.lsl")
    assert locked["user.sl.perms"] == "owner=0x0008a000 next_owner=0x00082000"
    # a child prim
    door = await xattrs("House/Door@59196331")
    assert door == {
        "user.sl.prim_id": "59196331-c895-5c58-9d3a-7d13fcf27584",
        "user.sl.object_id": "e66d1a51-2375-5a1a-bc85-a3ebb447fab7",
        "user.sl.link_number": "5",
        "user.sl.description": "Front door",
        "user.sl.perms": "owner=0x7fffffff next_owner=0x0008e000",
    }
    door_script = await xattrs("House/Door@59196331/Door Script.lsl")
    assert door_script["user.sl.prim_id"] == door["user.sl.prim_id"]
    assert door_script["user.sl.object_id"] == door["user.sl.object_id"]
    house = await xattrs("House")
    assert house == {
        "user.sl.prim_id": "e66d1a51-2375-5a1a-bc85-a3ebb447fab7",
        "user.sl.object_id": "e66d1a51-2375-5a1a-bc85-a3ebb447fab7",
        "user.sl.link_number": "1",
        "user.sl.description": "A linkset of eight prims",
        "user.sl.perms": "owner=0x7fffffff next_owner=0x0008e000",
        "user.sl.owner_id": world.agent_id,
        "user.sl.can_save_back": "1",
    }
    # one attribute by name; an unknown one is ENODATA
    one = await m.out("getfattr", "--only-values", "-n", "user.sl.type", m.path("Hello Cube/Hello.lsl"))
    assert one == "script"
    res = await m.run("getfattr", "-n", "user.sl.nope", m.path("Hello Cube/Hello.lsl"), check=False)
    assert res.returncode != 0 and b"No such attribute" in res.stderr
    # read-only: setting one or removing one that is there is ENOTSUP; removing one not there ENODATA
    for argv in (["-n", "user.sl.type", "-v", "notecard"], ["-x", "user.sl.type"]):
        res = await m.run("setfattr", *argv, m.path("Hello Cube/Hello.lsl"), check=False)
        assert res.returncode != 0 and b"Operation not supported" in res.stderr, (argv, res.stderr)
    assert "user.sl.type cannot be removed" in (await m.status())["last_error"]  # the reason, the last one
    res = await m.run("setfattr", "-x", "user.sl.nope", m.path("Hello Cube/Hello.lsl"), check=False)
    assert res.returncode != 0 and b"No such attribute" in res.stderr


async def test_every_naming_rule(mount_factory: MountFactory) -> None:
    m = await mount_factory(names_world())
    out = await m.out("find", m.mnt)
    got = {os.path.relpath(p, m.mnt) for p in out.splitlines()} - {"."}
    assert got == set(NAMES_EXPECTED) | set(NAMES_DIRS)
    assert m.sim is not None
    for path, item_id in NAMES_EXPECTED.items():
        data = await m.read_bytes(path)
        found = m.sim.world.find_item(item_id)
        assert found is not None
        assert data == found[2].content.encode(), path
        xid = await m.out("getfattr", "--only-values", "-n", "user.sl.item_id", m.path(path))
        assert xid == item_id, path
    # `.slfs` stays hidden even though a notecard wanted that name
    assert ".slfs" not in (await m.out("ls", "-a", m.path("Names"))).split("\n")
