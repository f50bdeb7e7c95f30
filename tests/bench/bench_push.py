"""`slfs push` benchmark (a script, not collected by pytest):

    .venv/bin/python tests/bench/bench_push.py [--latency-ms 50] [--scripts 100] [--changed 10] [--new 5]
                                              [--deleted 5] [--viewer-version 2]

An object of `--scripts` running LSL scripts on the simulated viewer, every call delayed by
`--latency-ms`; a local tree of as many scripts: `--changed` of them changed, `--new` new ones, and
`--deleted` in-world scripts with no local file (pushed with --delete). Times, through the client
layer the CLI and MCP use (slfs/client/push.py):

1. the plan on a cold mount (no item's text fetched yet: push_state fetches them, 16 at a time);
2. the plan again (warm: the mount's cache);
3. the apply (creates, saves held stopped at most 8 in flight, the start together, the deletes);

and counts the viewer calls of each, by method. Targets (issue 35): plan <= 0.5 s, apply <= 3 s, no
call for an unchanged item. The simulated viewer runs in this process (trio); the mount is a
`slfs mount -f` subprocess.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.mount import Mount, free_port, new_mountpoint
from support.worlds import item, u

from slfs.client import MountClient
from slfs.client import push as pushing
from slfs.sim.world import world_from_json

OBJ = u(1, "b")


def lsl(word: str) -> str:
    return f'default\n{{\n    state_entry()\n    {{\n        llOwnerSay("{word}");\n    }}\n}}\n'


def world(scripts: int) -> Any:
    inv = [item(u(100 + i), f"S{i:03d}", "script", lsl(f"s{i}"), subtype=0, vm="mono", running=True)
           for i in range(scripts)]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Bench",
                            "objects": [{"object_id": OBJ, "object_name": "Bench", "inventory": inv}]})


def tree(root: Path, args: argparse.Namespace) -> None:
    root.mkdir()
    kept = args.scripts - args.deleted
    for i in range(kept):
        word = f"s{i}" if i >= args.changed else f"s{i}-changed"
        (root / f"S{i:03d}.lsl").write_text(lsl(word))
    for i in range(args.new):
        (root / f"New{i:02d}.lsl").write_text(lsl(f"new{i}"))


def by_method(calls: list[tuple[str, Any]]) -> str:
    counts = collections.Counter(meth for meth, _p in calls)
    return ", ".join(f"{meth} {n}" for meth, n in sorted(counts.items())) or "none"


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="slfs-bench-push-"))
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp / "run"), XDG_STATE_HOME=str(tmp / "state"),
               XDG_DATA_HOME=str(tmp / "data"), PYTHONUNBUFFERED="1")
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    os.environ.update({k: env[k] for k in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME")})
    (tmp / "logs").mkdir()
    src = tmp / "src"
    tree(src, args)
    async with trio.open_nursery() as nursery:
        m = Mount(nursery, None, new_mountpoint(), free_port(), env, [], True, tmp / "logs",
                  viewer_version=args.viewer_version)
        try:
            sim = await m.start_sim(world(args.scripts), latency_ms=args.latency_ms)
            # prefetch=0: the cold plan fetches every text itself (the worst case)
            await m.start_daemon(options=["delete_grace=1", "prefetch=0"])
            await m.thread(os.listdir, m.path("Bench"))
            await sim.quiesce()
            client = await trio.to_thread.run_sync(MountClient.find, str(m.mnt))
            dest = str(m.path("Bench"))

            async def timed(label: str, plan_only: bool) -> Any:
                before = len(sim.calls)
                start = time.perf_counter()
                plan, outcome = await trio.to_thread.run_sync(
                    lambda: pushing.run(client, dest, str(src), plan_only=plan_only, delete=True))
                took = time.perf_counter() - start
                await sim.quiesce()
                calls = sim.calls[before:]
                print(f"{label}: {took:.3f} s; viewer calls {len(calls)} ({by_method(calls)})")
                return plan, outcome, calls

            plan, _o, _c = await timed("plan, cold (every text fetched once)", True)
            print(f"  plan: {plan.summary()}")
            plan, _o, _c = await timed("plan, warm", True)
            plan, outcome, calls = await timed("apply (plan included)", False)
            assert outcome is not None and outcome.error is None, outcome and outcome.error
            unchanged = {s.item_id for s in plan.of("unchanged")}
            touched = [(meth, p) for meth, p in calls if meth != "object.content.get" and p.get("item_id") in unchanged]
            print(f"  calls for an unchanged item: {len(touched)}")
            held = {i.name: i for i in sim.world.find_prim(OBJ)[1].inventory}
            wrong = [s.rel for s in plan.of("update", "create")
                     if s.local is None or held[s.rel.removesuffix(".lsl")].content != s.local.data.decode()]
            gone = [s.rel for s in plan.of("delete") if s.rel.removesuffix(".lsl") in held]
            running = sum(1 for i in held.values() if i.running)
            print(f"  after: {len(held)} scripts, {running} running; wrong texts {len(wrong)}, not deleted {len(gone)}")
        finally:
            await m.stop_daemon()
            m.stop_sim()
            shutil.rmtree(m.mnt.parent, ignore_errors=True)
            nursery.cancel_scope.cancel()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--scripts", type=int, default=100)
    ap.add_argument("--changed", type=int, default=10)
    ap.add_argument("--new", type=int, default=5)
    ap.add_argument("--deleted", type=int, default=5)
    ap.add_argument("--viewer-version", type=int, default=2)
    trio.run(main, ap.parse_args())
