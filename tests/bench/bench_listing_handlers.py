"""A warm listing's handlers alone, in-process (a script, not collected by pytest; needs no mount):

    .venv/bin/python tests/bench/bench_listing_handlers.py [--objects 100] [--items 20] [--rounds 20]

What a warm `find` asks of slfs per folder - opendir, two readdirs (the entries, then the end) and
releasedir - called directly on the operations object (as tests/inproc does), against the floor's
handlers of bench_floor.py over the same names. pyfuse3.readdir_reply needs a kernel request, so
both answer into the same stub. Prints microseconds of Python per folder: what slfs's handlers add
to the floor, without the kernel, the FUSE loop or the machine's noise of bench_floor.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pyfuse3
import pytest
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.inproc import CTX, fs_against_sim
from support.worlds import many_items_world

from slfs.sim.world import world_from_json

Lister = Callable[[int], Awaitable[None]]


def answered(token: Any, name: bytes, attr: pyfuse3.EntryAttributes, off: int) -> bool:
    return True  # the kernel's buffer never fills: every entry in one readdir


async def per_folder(list_one: Lister, inodes: list[int], rounds: int) -> float:
    """Microseconds per folder listed, best of three passes of `rounds` over every folder."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(rounds):
            for ino in inodes:
                await list_one(ino)
        best = min(best, (time.perf_counter() - t0) / (rounds * len(inodes)) * 1e6)
    return best


async def run(objects: int, items: int, rounds: int) -> None:
    mp = pytest.MonkeyPatch()
    with tempfile.TemporaryDirectory() as tmp:
        async with fs_against_sim(Path(tmp), mp, world_from_json(many_items_world(objects, items))) as fs:
            mp.setattr(pyfuse3, "readdir_reply", answered)
            ops = fs.ops
            names = [n for n in await fs.entries("") if not n.startswith(".")]
            inodes = [await fs.lookup(n) for n in names]
            rows: dict[int, list[tuple[bytes, int]]] = {}
            for ino in inodes:  # the floor's listings: the same names and inodes
                fh = await ops.opendir(ino, CTX)
                rows[ino] = [(os.fsencode(name), child) for name, child in ops._dir_handles[fh]]
                await ops.releasedir(fh)
            attrs = {child: pyfuse3.EntryAttributes() for r in rows.values() for _, child in r}
            for item in list(fs.ws.tree.iter_items()):  # warm: sizes known, so each listing replays
                await fs.ws.content.read_content(item)

            async def slfs(ino: int) -> None:
                fh = await ops.opendir(ino, CTX)
                await ops.readdir(fh, 0, None)
                await ops.readdir(fh, items, None)
                await ops.releasedir(fh)

            async def opendir(inode: int, ctx: pyfuse3.RequestContext) -> int:
                return inode

            async def readdir(fh: int, start_id: int, token: Any) -> None:
                entries = rows[fh]
                for i in range(start_id, len(entries)):
                    name, ino = entries[i]
                    if not pyfuse3.readdir_reply(token, name, attrs[ino], i + 1):
                        return

            async def releasedir(fh: int) -> None:
                pass

            async def floor(ino: int) -> None:
                fh = await opendir(ino, CTX)
                await readdir(fh, 0, None)
                await readdir(fh, items, None)
                await releasedir(fh)

            await per_folder(slfs, inodes, 2)  # past the listings' first build
            s, f = await per_folder(slfs, inodes, rounds), await per_folder(floor, inodes, rounds)
            print(f"listing handlers, per folder of {items} entries ({len(inodes)} folders, best of 3 x {rounds}):")
            print(f"   slfs {s:.1f} us, floor {f:.1f} us: slfs adds {s - f:.1f} us")
            mp.undo()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=100)
    ap.add_argument("--items", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    trio.run(run, args.objects, args.items, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
