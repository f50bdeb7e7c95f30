"""Changes in-world show up in the mount within a second; reconnects keep paths and inodes."""

from __future__ import annotations

import errno
import os

import pytest
import trio
from support.mount import Mount, MountFactory
from support.worlds import HOUSE_ID, LAMP_ID, SAMPLE_FILES, TWIN1_ID, sample_item

from slfs.protocol.rpc_errors import RpcError

VISIBLE_WITHIN = 1.0


async def ls(m: Mount, *parts: str) -> list[str]:
    return (await m.out("ls", "-1", m.path(*parts))).splitlines()


async def test_publish_update_unpublish_visible_within_1s(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    before = await ls(m)
    assert "Unpublished Lamp" not in before
    await m.sim.publish(LAMP_ID)
    await m.wait_for(lambda: _has(m, want="Unpublished Lamp"), VISIBLE_WITHIN, "published object listed")
    assert sorted(await ls(m, "Unpublished Lamp")) == ["Lamp Notes", "Lamp.lsl"]
    lamp = m.sim.item(next(i.item_id for i in m.sim.world.objects[LAMP_ID].root.inventory if i.name == "Lamp"))
    assert (await m.run("cat", m.path("Unpublished Lamp/Lamp.lsl"))).stdout == lamp.content.encode()

    # rename an item in-world
    hello = sample_item(m.sim.world, "Hello Cube/Hello.lsl")
    await m.run("cat", m.path("Hello Cube/Hello.lsl"))
    ino = os.stat(m.path("Hello Cube/Hello.lsl")).st_ino
    await m.sim.rename_item(hello.item_id, "Howdy")
    await m.wait_for(lambda: _has(m, "Hello Cube", want="Howdy.lsl", absent="Hello.lsl"), VISIBLE_WITHIN, "rename")
    res = await m.run("stat", "-c", "%i", m.path("Hello Cube/Howdy.lsl"))
    assert int(res.stdout) == ino
    res = await m.run("cat", m.path("Hello Cube/Hello.lsl"), check=False)
    assert b"No such file" in res.stderr

    # an in-world edit: content and size change
    old = (await m.run("cat", m.path("Hello Cube/Howdy.lsl"))).stdout
    new_text = 'default { state_entry() { llOwnerSay("changed in-world, longer than before"); } }\n' * 3
    await m.sim.set_content(hello.item_id, new_text)

    async def updated() -> bool:
        return (await m.run("cat", m.path("Hello Cube/Howdy.lsl"))).stdout == new_text.encode()

    await m.wait_for(updated, VISIBLE_WITHIN, "new content")
    size = int((await m.out("stat", "-c", "%s", m.path("Hello Cube/Howdy.lsl"))).strip())
    assert size == len(new_text.encode()) != len(old)
    ls_size = (await m.out("ls", "-l", m.path("Hello Cube/Howdy.lsl"))).split()[4]
    assert int(ls_size) == size

    # rename a prim (root of an object)
    await m.sim.rename_prim(LAMP_ID, "Lamp Post")
    await m.wait_for(lambda: _has(m, want="Lamp Post", absent="Unpublished Lamp"), VISIBLE_WITHIN, "prim rename")

    # unpublish: the folder goes
    await m.sim.unpublish(LAMP_ID)
    await m.wait_for(lambda: _has(m, absent="Lamp Post"), VISIBLE_WITHIN, "unpublished object gone")
    res = await m.run("stat", m.path("Lamp Post"), check=False)
    assert res.returncode != 0


async def _has(m: Mount, *folder: str, want: str | None = None, absent: str | None = None) -> bool:
    """`folder` lists `want` (which resolves by path) and neither lists nor resolves `absent`."""
    listing = await ls(m, *folder)
    if want is not None and (want not in listing or not await _resolves(m, *folder, want)):
        return False
    return absent is None or (absent not in listing and not await _resolves(m, *folder, absent))


async def _resolves(m: Mount, *parts: str) -> bool:
    return (await m.run("stat", m.path(*parts), check=False)).returncode == 0


async def test_child_names_stable_across_link_unlink(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    children = sorted(d for d in await ls(m, "House") if "@" in d)
    inodes = {d: os.stat(m.path("House", d)).st_ino for d in children}
    # unlink a child prim: the others keep their names (and inodes)
    await m.sim.unlink(HOUSE_ID, "3859d2ae-2bf2-5c5f-ab8a-c549e063e55f")
    await m.wait_for(lambda: _has(m, "House", absent="Object@3859d2ae"), VISIBLE_WITHIN, "unlinked child gone")
    rest = [d for d in children if d != "Object@3859d2ae"]
    assert sorted(d for d in await ls(m, "House") if "@" in d) == rest
    # link a new prim and a whole object (Twin #1): names of the others stay
    await m.sim.link(HOUSE_ID, {"link_id": "0badc0de-0000-4000-8000-000000000001", "link_name": "Object"})
    await m.sim.link(HOUSE_ID, {"link_id": TWIN1_ID})
    await m.wait_for(lambda: _has(m, "House", want="Twin@37110fcc"), VISIBLE_WITHIN, "linked object as child")
    now = sorted(d for d in await ls(m, "House") if "@" in d)
    assert now == sorted([*rest, "Object@0badc0de", "Twin@37110fcc"])
    for d in rest:
        assert os.stat(m.path("House", d)).st_ino == inodes[d]
    assert await ls(m, "House", "Twin@37110fcc") == ["Main.lsl"]
    # the remaining Twin keeps the name it is shown under (a shell or editor may be in it)
    await m.wait_for(lambda: _has(m, want="Twin@4dd59973", absent="Twin"), VISIBLE_WITHIN, "Twin #1 gone, #2 kept")
    assert b"Twin 2 ready" in (await m.run("cat", m.path("Twin@4dd59973/Main.lsl"))).stdout
    # link numbers follow the new order
    door = await m.out("getfattr", "--only-values", "-n", "user.sl.link_number", m.path("House/Door@59196331"))
    assert door == "4"


async def stat_inodes(m: Mount, paths: list[str]) -> dict[str, int]:
    out = await m.out("stat", "-c", "%i", *[m.path(p) for p in paths])
    return dict(zip(paths, map(int, out.split()), strict=True))


async def wait_reconnected(m: Mount, timeout: float = 15.0, handshakes: int = 0) -> None:
    """Connected again: the viewer has had more than `handshakes` handshakes (a new session, not
    the old one seen before its drop) and the daemon says connected."""
    assert m.sim is not None
    sim = m.sim

    async def ok() -> bool:
        return (len(sim.client_handshakes) > handshakes and sim.connections == 1
                and (await m.status())["state"] == "connected")

    await m.wait_for(ok, timeout, "reconnected")


@pytest.mark.own_mount("stops and restarts the viewer")
async def test_reconnect_keeps_paths_and_inodes(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    paths = [
        "Hello Cube",
        "Hello Cube/Hello.lsl",
        "House/Door@59196331",
        "Twin@4dd59973/Main.lsl",
        "Hello Cube/x.lsl@57f2a1c2",
    ]
    before = await stat_inodes(m, paths)
    hello = (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout
    seen = len(m.sim.client_handshakes)
    await m.sim.disconnect_all()
    await wait_reconnected(m, handshakes=seen)
    assert await stat_inodes(m, paths) == before
    assert (await m.run("find", m.mnt)).returncode == 0
    assert (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout == hello
    # the viewer restarts on the same port (a new world state, same UUIDs)
    m.stop_sim()
    await trio.sleep(0.3)  # the viewer is away for a moment: the daemon sees it gone, not a blip
    await m.start_sim()
    await wait_reconnected(m)
    assert await stat_inodes(m, paths) == before
    assert (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout == hello


@pytest.mark.allow_log(r"WARNING slfs\.fs\.guarded: \w+: .*not connected to the viewer")
async def test_disconnected_cached_reads_uncached_eio_fast(mount_factory: MountFactory) -> None:
    # Right after a drop a call waits up to reconnect_wait for the session; past it, EIO at once.
    m = await mount_factory(options=["reconnect_wait=0.5"])
    assert m.sim is not None
    hello_bytes = sample_item(m.sim.world, "Hello Cube/Hello.lsl").content.encode()
    # read one file by path (no listing, so nothing else is prefetched)
    assert (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout == hello_bytes
    m.stop_sim()

    async def down() -> bool:
        return (await m.status())["state"] != "connected"

    await m.wait_for(down, 5, "noticed the disconnect")
    with trio.fail_after(5):
        assert (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout == hello_bytes
    with trio.fail_after(5):
        res = await m.run("cat", m.path("Hello Cube/Counter.luau"), check=False)
    assert res.returncode == 1 and b"Input/output error" in res.stderr
    with trio.fail_after(5):
        err = None
        try:
            await m.read_bytes("Hello Cube", "Notes\u2215Todo")
        except OSError as exc:
            err = exc.errno
    assert err == errno.EIO
    # names stay listed while offline
    assert "Counter.luau" in await ls(m, "Hello Cube")
    status = await m.status()
    assert status["state"] in ("connecting", "disconnected") and status["last_error"] != "none"


async def test_mount_live_without_viewer_then_connects(mount_factory: MountFactory) -> None:
    m = await mount_factory(sim=False, wait_state="connecting")
    assert await ls(m) == []
    assert (await m.status())["state"] == "connecting"
    await m.start_sim()
    await wait_reconnected(m, timeout=15)
    assert sorted(await ls(m))[:2] == ["Hello Cube", "House"]
    assert m.sim is not None
    assert (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout == sample_item(
        m.sim.world, "Hello Cube/Hello.lsl"
    ).content.encode()
    assert len(SAMPLE_FILES) == int((await m.status())["items"])


async def test_name_handover_on_rename(mounted: Mount) -> None:
    """Cached names follow in-world renames: a tagged entry takes the plain name when it frees up."""
    m = mounted
    assert m.sim is not None
    script_x = sample_item(m.sim.world, "Hello Cube/x.lsl")
    note_x = sample_item(m.sim.world, "Hello Cube/x.lsl@57f2a1c2")
    assert (await m.run("cat", m.path("Hello Cube/x.lsl"))).stdout == script_x.content.encode()
    assert (await m.run("cat", m.path("Hello Cube/x.lsl@57f2a1c2"))).stdout == note_x.content.encode()
    await m.sim.rename_item(script_x.item_id, "z")

    async def handed_over() -> bool:
        res = await m.run("cat", m.path("Hello Cube/x.lsl"), check=False)
        return res.stdout == note_x.content.encode()

    await m.wait_for(handed_over, VISIBLE_WITHIN, "x.lsl is now the notecard")
    assert await _has(m, "Hello Cube", want="z.lsl", absent="x.lsl@57f2a1c2")
    assert (await m.run("cat", m.path("Hello Cube/z.lsl"))).stdout == script_x.content.encode()
    # a rename onto a taken name: the higher UUID (the notecard, 95f4...) is tagged, the script keeps it
    hello = sample_item(m.sim.world, "Hello Cube/Hello.lsl")
    notes = sample_item(m.sim.world, "Hello Cube/Notes\u2215Todo")
    await m.run("cat", m.path("Hello Cube/Notes\u2215Todo"))
    await m.sim.rename_item(notes.item_id, "Hello.lsl")
    await m.wait_for(
        lambda: _has(m, "Hello Cube", want="Hello.lsl@95f4ea03", absent="Notes\u2215Todo"),
        VISIBLE_WITHIN,
        "renamed notecard tagged",
    )
    assert (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout == hello.content.encode()
    assert (await m.run("cat", m.path("Hello Cube/Hello.lsl@95f4ea03"))).stdout == notes.content.encode()


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: lookup: read Hello")
@pytest.mark.own_mount("needs the daemon's content cache cold: the failing fetch must be the first")
async def test_fetch_error_is_not_cached(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    m.sim.fail_next("object.content.get", RpcError(-32603, "Internal error"))
    res = await m.run("cat", m.path("Hello Cube/Hello.lsl"), check=False)
    assert res.returncode == 1 and b"Input/output error" in res.stderr
    hello = sample_item(m.sim.world, "Hello Cube/Hello.lsl")
    assert (await m.run("cat", m.path("Hello Cube/Hello.lsl"))).stdout == hello.content.encode()
    assert "viewer error -32603" in (await m.status())["last_error"] or "-32603" in m.log_text()


async def test_unpublished_nodes_released_after_forget(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    await m.run("ls", "-lR", m.path("House"))
    await m.run("cat", m.path("House/Controller.lsl"))
    await m.sim.unpublish(HOUSE_ID)
    await m.wait_for(lambda: _has(m, absent="House"), VISIBLE_WITHIN, "House gone")
    res = await m.sh(f"sync; echo 3 > /proc/sys/vm/drop_caches; cat '{m.mnt}/.slfs/status'")
    status = dict(line.split(": ", 1) for line in res.stdout.decode().splitlines())
    assert status["kernel_refs"] == "2"
    assert status["objects"] == "5"
