"""The hidden `.slfs` directory: status, by-id links, kernel references; a failing handler."""

from __future__ import annotations

import os

import pytest
from support.mount import Mount, MountFactory
from support.worlds import SAMPLE_DIRS, SAMPLE_FILES, UNREADABLE, sample_item

from slfs.winpaths import in_wsl


async def test_slfs_hidden_but_reachable(mounted: Mount) -> None:
    m = mounted
    assert ".slfs" not in (await m.out("ls", "-a", m.mnt)).split()
    assert ".slfs" not in await m.out("find", m.mnt)
    assert ".slfs" not in (await m.out("ls", "-a", m.path("Hello Cube"))).split()
    text = await m.out("cat", m.path(".slfs/status"))
    status = dict(line.split(": ", 1) for line in text.splitlines())
    # every key slfs(5) names, in its order
    assert list(status) == [
        "state", "state_detail", "endpoint", "windows_paths", "viewer", "viewer_version", "viewer_features",
        "viewer_generation", "agent", "agent_id",
        "objects", "items", "content_fetches", "fetches_pending", "last_error", "pending_saves", "last_recovery",
        "trash", "unsent",
        "region_unavailable", "background_errors", "disk_errors", "event_log_errors", "event_log_error", "kernel_refs",
        "history", "history_errors"]
    assert status["state"] == "connected"
    assert status["endpoint"].endswith(f":{m.port}") or str(m.port) in status["endpoint"]
    assert status["objects"] == "6"
    assert int(status["items"]) == len(SAMPLE_FILES)
    assert status["last_error"] == "none"
    assert status["unsent"] == "none"
    # auto: outside WSL2, native until the viewer names a Windows path
    assert status["windows_paths"].startswith(
        "wsl (/mnt, detected)" if in_wsl() else "native (auto: a Windows path would go through the Wine prefix ")
    # stat works on it, and ls of it explicitly
    assert (await m.out("stat", "-c", "%F", m.path(".slfs"))).strip() == "directory"
    listed = sorted((await m.out("ls", m.path(".slfs"))).split())
    assert listed == ["by-id", "diagnostics", "events", "history", "live", "log", "stats", "status", "syntax"]


async def test_by_id_links(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    hello = sample_item(m.sim.world, "Hello Cube/Hello.lsl")
    link = m.path(".slfs", "by-id", hello.item_id)
    target = (await m.out("readlink", link)).strip()
    assert target == "../../Hello Cube/Hello.lsl"
    assert (await m.run("cat", link)).stdout == hello.content.encode()
    real = (await m.out("readlink", "-f", link)).strip()
    assert real == str(m.path("Hello Cube/Hello.lsl"))
    # objects and child prims too
    door = m.path(".slfs", "by-id", "59196331-c895-5c58-9d3a-7d13fcf27584")
    assert (await m.out("readlink", door)).strip() == "../../House/Door@59196331"
    assert "Door Script.lsl" in await m.out("ls", f"{door}/")
    twin2 = m.path(".slfs", "by-id", "4dd59973-25e4-5202-817c-7b5078a18bb5")
    assert (await m.out("readlink", twin2)).strip() == "../../Twin@4dd59973"
    # unknown ids do not resolve
    res = await m.run("readlink", m.path(".slfs", "by-id", "00000000-0000-0000-0000-000000000000"), check=False)
    assert res.returncode != 0
    # a listing of by-id holds every object, prim and item
    listed = set((await m.out("ls", m.path(".slfs", "by-id"))).split())
    assert hello.item_id in listed and len(listed) == len(SAMPLE_FILES) + len(SAMPLE_DIRS)


@pytest.mark.allow_log(r"ERROR slfs\.fs\.guarded: unexpected error in lookup")
async def test_injected_fault_keeps_mount_alive(mount_factory: MountFactory) -> None:
    m = await mount_factory(env={"SLFS_INJECT_FAULT": "Hello.lsl"}, allow_traceback=True)
    res = await m.run("cat", m.path("Hello Cube/Hello.lsl"), check=False)
    assert res.returncode == 1 and b"Input/output error" in res.stderr
    res = await m.run("stat", m.path("Hello Cube/Hello.lsl"), check=False)
    assert res.returncode == 1 and b"Input/output error" in res.stderr
    # the mount keeps working
    assert m.sim is not None
    counter = sample_item(m.sim.world, "Hello Cube/Counter.luau")
    assert (await m.run("cat", m.path("Hello Cube/Counter.luau"))).stdout == counter.content.encode()
    assert "Counter.luau" in await m.out("ls", m.path("Hello Cube"))
    assert (await m.status())["state"] == "connected"
    log = m.log_text()
    assert "Traceback" in log and "fault injected on lookup of 'Hello.lsl'" in log
    assert m.proc is not None and m.proc.returncode is None


async def test_kernel_refs_exact_after_drop_caches(mounted: Mount) -> None:
    m = mounted
    if not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        pytest.skip("needs root to drop the kernel's caches")
    assert m.sim is not None
    # read around: listings (readdirplus), lookups, content, attributes, control files
    await m.run("ls", "-lR", m.mnt)
    for path in SAMPLE_FILES:
        if path not in UNREADABLE:
            await m.run("cat", m.path(path))
    await m.run("find", m.mnt, "-type", "f")
    await m.run("getfattr", "-R", "-d", "-m", "-", m.mnt)
    hello = sample_item(m.sim.world, "Hello Cube/Hello.lsl")
    await m.run("cat", m.path(".slfs", "by-id", hello.item_id))
    await m.run("ls", "-l", m.path(".slfs", "by-id"))
    await m.run("stat", m.path("House/.slfs"))
    refs = int((await m.status())["kernel_refs"])
    assert refs > 2
    # the kernel forgets every unused inode; reading the status holds only `.slfs` and `status`
    seen = []
    for _ in range(3):
        res = await m.sh(f"sync; echo 3 > /proc/sys/vm/drop_caches; cat '{m.mnt}/.slfs/status'")
        status = dict(line.split(": ", 1) for line in res.stdout.decode().splitlines())
        seen.append(int(status["kernel_refs"]))
    assert seen == [2, 2, 2], seen
