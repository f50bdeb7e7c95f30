"""Request accounting: `.slfs/stats`, `slfs stats`, and what a warm `grep -r` costs, exactly."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
from support.mount import Mount

from slfs.client.connection import ControlClient


def registry(m: Mount) -> dict[str, Any]:
    files = list((Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts").glob("*.json"))
    assert len(files) == 1, files
    return dict(json.loads(files[0].read_text()))


def counts(snap: dict[str, Any]) -> dict[str, int]:
    out = {f"{kind}.{op}": row["count"] for kind in ("fuse", "rpc") for op, row in snap[kind].items()}
    out.update({f"inval.{kind}": n for kind, n in snap["invalidations"].items()})
    return out


def delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}


def shape(root: Path) -> tuple[int, int, int, int]:
    """(directories, non-empty directories, files, readable files) under `root`, itself included."""
    dirs = nonempty = files = readable = 0
    for path, subdirs, names in os.walk(root):
        dirs += 1
        nonempty += bool(subdirs or names)
        files += len(names)
        readable += sum(1 for n in names if _opens(os.path.join(path, n)))
    return dirs, nonempty, files, readable


def _opens(path: str) -> bool:
    try:
        os.close(os.open(path, os.O_RDONLY))  # access() says yes to root; slfs's open decides
    except PermissionError:
        return False
    return True


async def settle(client: ControlClient, m: Mount, done: Callable[[dict[str, int]], bool]) -> dict[str, int]:
    """The counts once `done` holds for them: release and releasedir reach the daemon after close()
    returns (the kernel sends them asynchronously), so a snapshot right after the program exits may
    not hold them yet. Bounded; the caller's exact comparison says what was missing."""
    got: dict[str, int] = {}
    with trio.move_on_after(10):
        while True:
            got = counts(await m.thread(client.request, "stats"))
            if done(got):
                break
            await trio.sleep(0.02)
    await trio.sleep(0.2)  # and nothing else arrives after it
    return counts(await m.thread(client.request, "stats"))


async def released(client: ControlClient, m: Mount) -> dict[str, int]:
    """The counts once every file and directory opened so far has been released: the release of
    the last close of an earlier program (this test's warm-up, or an earlier test's on a shared
    mount) must not land in the window measured."""

    def balanced(snap: dict[str, Any]) -> bool:
        fuse = snap["fuse"]

        def n(op: str, field: str = "count") -> int:
            return int(fuse.get(op, {}).get(field, 0))

        opened, dirs = n("open") - n("open", "errors"), n("opendir") - n("opendir", "errors")
        return n("release") >= opened and n("releasedir") >= dirs

    with trio.move_on_after(10):
        while not balanced(await m.thread(client.request, "stats")):
            await trio.sleep(0.02)
    return counts(await m.thread(client.request, "stats"))


@pytest.mark.allow_log(r"WARNING slfs\.fs\.guarded: open: .*: script is not readable")
async def test_warm_grep_costs_open_flush_release_per_file(mounted: Mount) -> None:
    m = mounted
    client = await m.thread(ControlClient, registry(m)["socket"])
    try:
        # The first grep fetches every item and fills the kernel's caches; the second is warm.
        await m.run("grep", "-r", "-q", "zzz-no-such-text", m.mnt, check=False)
        await m.run("grep", "-r", "-q", "zzz-no-such-text", m.mnt, check=False)
        dirs, nonempty, files, readable = await m.thread(shape, m.mnt)
        assert dirs > nonempty > 1 and files > readable > 1  # the sample world: empty prims, unreadable scripts

        expected = {
            # Every file is opened: the kernel caches no open. The two unreadable scripts' opens
            # answer EACCES (counted as errors) and are never flushed nor released.
            "fuse.open": files,
            # close() sends a flush (pyfuse3 cannot set FOPEN_NOFLUSH), the last close a release.
            "fuse.flush": readable,
            "fuse.release": readable,
            # Directories are not cached (pyfuse3 cannot set FOPEN_CACHE_DIR): each is opened, read
            # (readdirplus, which also refreshes the entries' attributes, so there is no lookup and
            # no getattr of anything below the root) until a read returns nothing - one read for an
            # empty directory, two for one with entries - and released. The root is opened twice:
            # grep opens its argument itself (open + fstat, to tell a directory from a file) before
            # fts opens it again to walk it.
            "fuse.opendir": dirs + 1,
            "fuse.readdir": dirs + nonempty,
            "fuse.releasedir": dirs + 1,
            # One getattr, of the root, for that fstat: the kernel marks a directory's atime stale
            # after each readdir (fuse_invalidate_atime, on any mount that is not read-only), so a
            # stat after the last walk asks again. Every other directory's attributes come fresh
            # with its parent's readdirplus before grep stats it; the root has no parent in the mount.
            "fuse.getattr": 1,
            # fts (gnulib) asks fstatfs once per walk, for the type of file system it walks.
            "fuse.statfs": 1,
            # Not read: content stays in the page cache (keep_cache) and attributes in the kernel's
            # cache (60 s). No lookup, no viewer call, no invalidation.
        }
        for attempt in range(3):
            before = await released(client, m)
            await m.run("grep", "-r", "-q", "zzz-no-such-text", m.mnt, check=False)
            after = await settle(client, m, lambda now: all(
                now.get(k, 0) - before.get(k, 0) >= n for k, n in expected.items()))  # noqa: B023
            cost = delta(before, after)
            if "fuse.forget" not in cost:
                break
            # The kernel evicted caches meanwhile (a drop_caches by another process): not warm.
            assert attempt < 2, f"the kernel kept evicting this mount's caches: {cost}"
        assert cost == expected
        errors = (await m.thread(client.request, "stats"))["fuse"]["open"]["errors"]
        assert errors >= files - readable
    finally:
        await m.thread(client.close)


@pytest.mark.allow_log(r"WARNING slfs\.fs\.guarded: open: stats is read-only")
async def test_stats_file_and_verb(mounted: Mount) -> None:
    m = mounted
    await m.run("cat", m.path("Hello Cube", "Hello.lsl"))
    text = await m.out("cat", m.path(".slfs", "stats"))
    lines = text.splitlines()
    assert lines[0].startswith("# since start:") and lines[1].split()[:3] == ["kind", "operation", "count"]
    rows = {(p[0], p[1]): p[2:] for p in (line.split() for line in lines[2:])}
    for op in ("lookup", "getattr", "open", "read", "flush", "release", "readdir", "opendir", "write",
               "create", "unlink", "rename", "setattr"):
        assert ("fuse", op) in rows, op
        assert len(rows[("fuse", op)]) == 6  # count errors p50 p90 p99 max
    assert int(rows[("fuse", "open")][0]) >= 1 and int(rows[("fuse", "flush")][0]) >= 1
    # the viewer calls made so far: the inventory at connect, the content of what was read
    assert int(rows[("rpc", "object.list")][0]) == 1
    assert int(rows[("rpc", "object.content.get")][0]) >= 1
    assert ("inval", "entry") in rows and ("inval", "inode") in rows
    # the same through the control socket, as JSON and as the table
    res = await m.run(sys.executable, "-m", "slfs", "stats", "--json", "--mount", m.mnt)
    data = json.loads(res.stdout)
    assert data["mount"] == str(m.mnt) and data["uptime_s"] >= 0
    row = data["fuse"]["open"]
    assert set(row) == {"count", "errors", "p50_us", "p90_us", "p99_us", "max_us", "mean_us"}
    assert row["count"] >= 2  # the cat of the file and of .slfs/stats
    assert 0 < row["p50_us"] <= row["p90_us"] <= row["p99_us"] <= row["max_us"]
    assert data["rpc"]["object.list"]["count"] == 1
    table = await m.out(sys.executable, "-m", "slfs", "stats", str(m.mnt))
    assert table.splitlines()[1] == lines[1]
    assert any(line.split()[:2] == ["rpc", "object.content.get"] for line in table.splitlines())
    # read-only
    res = await m.run("sh", "-c", f"echo x > '{m.path('.slfs', 'stats')}'", check=False)
    assert res.returncode != 0
