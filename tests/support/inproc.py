"""Drive the fs operations object against the simulated viewer over a real socket, with no mount.

As S3QL's t3_fs_api.py drives its Operations: every handler is called directly with the
arguments the kernel would pass, so the write-path semantics (slots, tombstones, renames, EXDEV,
recovery, conflicts) are tested in milliseconds and without /dev/fuse. The services are built
exactly as the daemon builds them (slfs.daemon.build_services).
"""

from __future__ import annotations

import os
import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pyfuse3
import pytest
import trio

from slfs.daemon import Services, build_services
from slfs.debug_hooks import Debug
from slfs.model.options import Options
from slfs.sim import SimViewer, World, sample_world
from slfs.world.tree import ROOT_INODE

CTX = pyfuse3.RequestContext()


class Driver:
    """Kernel-like calls by path: `await fs.write_file("Box/Note", b"...")`."""

    def __init__(self, svc: Services, sim: SimViewer) -> None:
        self.svc = svc
        self.ops = svc.ops
        self.sim = sim
        self.ws = svc.ws

    async def lookup(self, path: str) -> int:
        inode = ROOT_INODE
        for part in filter(None, path.split("/")):
            inode = (await self.ops.lookup(inode, os.fsencode(part), CTX)).st_ino
        return inode

    async def stat(self, path: str) -> pyfuse3.EntryAttributes:
        return await self.ops.getattr(await self.lookup(path), CTX)

    async def entries(self, path: str) -> list[str]:
        """A directory's names as readdir would list them (opendir's snapshot)."""
        fh = await self.ops.opendir(await self.lookup(path), CTX)
        try:
            return sorted(name for name, _ino in self.ops._dir_handles[fh])
        finally:
            await self.ops.releasedir(fh)

    async def open(self, path: str, flags: int = os.O_RDONLY) -> int:
        info = await self.ops.open(await self.lookup(path), flags, CTX)
        return int(info.fh)

    async def create(self, path: str, flags: int = os.O_WRONLY | os.O_CREAT | os.O_TRUNC) -> int:
        parent, _, name = path.rpartition("/")
        info, _attr = await self.ops.create(await self.lookup(parent), os.fsencode(name), 0o644, flags, CTX)
        return int(info.fh)

    async def close(self, fh: int) -> None:
        """What close(2) does: flush, then release."""
        try:
            await self.ops.flush(fh)
        finally:
            await self.ops.release(fh)

    async def read_file(self, path: str) -> bytes:
        fh = await self.open(path)
        try:
            return bytes(await self.ops.read(fh, 0, 1 << 20))
        finally:
            await self.close(fh)

    async def write_file(self, path: str, data: bytes, *, create: bool = False) -> None:
        fh = await (self.create(path) if create else self.open(path, os.O_WRONLY | os.O_TRUNC))
        try:
            await self.ops.write(fh, 0, data)
        except BaseException:
            await self.ops.release(fh)
            raise
        await self.close(fh)

    async def unlink(self, path: str) -> None:
        parent, _, name = path.rpartition("/")
        await self.ops.unlink(await self.lookup(parent), os.fsencode(name), CTX)

    async def rename(self, old: str, new: str, flags: int = 0) -> None:
        op, _, on = old.rpartition("/")
        np, _, nn = new.rpartition("/")
        await self.ops.rename(await self.lookup(op), os.fsencode(on), await self.lookup(np), os.fsencode(nn),
                              flags, CTX)

    async def truncate(self, path: str, size: int) -> None:
        attr = pyfuse3.EntryAttributes()
        attr.st_size = size
        fields = types.SimpleNamespace(update_size=True, update_mode=False, update_uid=False, update_gid=False,
                                       update_atime=False, update_mtime=False)
        await self.ops.setattr(await self.lookup(path), attr, fields, None, CTX)


async def fails(awaitable: Any) -> int:
    """The errno a handler answered with (the test fails if it succeeded)."""
    try:
        await awaitable
    except pyfuse3.FUSEError as exc:
        return int(exc.errno)
    raise AssertionError("the call succeeded")


@asynccontextmanager
async def fs_against_sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, world: World | None = None, *,
                         viewer_version: int = 1, options: Options | None = None,
                         **sim_kw: Any) -> AsyncIterator[Driver]:
    for var in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
        d = tmp_path / var.lower()
        d.mkdir(mode=0o700, exist_ok=True)
        monkeypatch.setenv(var, str(d))
    sim_kw.setdefault("publish_delay", 0.01)
    sim_kw.setdefault("apply_delay", 0.01)
    if "windows_paths" not in sim_kw:  # the viewer's temp files: this test's own (xdist workers run at once)
        viewer_tmp = tmp_path / "viewer-tmp"
        viewer_tmp.mkdir(exist_ok=True)
        sim_kw.setdefault("tmpdir", str(viewer_tmp))
    sim = SimViewer(world or sample_world(), viewer_version=viewer_version, **sim_kw)
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(sim.serve, 0)
            svc = build_services(str(tmp_path / "mnt"), "127.0.0.1", port,
                                 options or Options(delete_grace=0.2), event_log=False,
                                 debug=Debug.from_environ(os.environ))  # the suite's hooks (tests/conftest.py)
            await nursery.start(svc.ws.run)
            await svc.ws.session.wait_connected(10)
            try:
                yield Driver(svc, sim)
            finally:
                nursery.cancel_scope.cancel()


__all__ = ["Driver", "fails", "fs_against_sim"]
