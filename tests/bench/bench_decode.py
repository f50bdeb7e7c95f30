"""Decoding benchmark (a script, not collected by pytest):

    .venv/bin/python tests/bench/bench_decode.py [--items 100000] [--objects 1000] [--rounds 3]
                                                [--baseline REV] [--bad-every N]

Builds an `object.list` result as a newer viewer sends it on a reconnect (`--items` inventory items
across `--objects` objects, each a root prim and four child prims, scripts and notecards with
permissions and revisions), takes it through json.dumps/json.loads like the wire, and times:

1. json.loads of the whole frame;
2. from_json(ObjectListResponse, ...) with this checkout's codec (`after`);
3. the same with the codec as it was at `--baseline` (`before`; default: the newest commit whose
   slfs/protocol/codec.py did not use cattrs), loaded from git.

Best of `--rounds`: wall seconds, wall microseconds per item, and CPU seconds (steadier than wall
time on a busy machine). `--bad-every N` gives every Nth item
an optional field of the wrong type (`vm: 5`), which the codec ignores and reports: the lenient path.
Both codecs must decode the payload to equal objects; the script says so or fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from slfs.protocol import codec  # noqa: E402
from slfs.protocol import types as t  # noqa: E402

CODEC = "slfs/protocol/codec.py"


def uuid(n: int, kind: int) -> str:
    return f"{n:08x}-{kind:04x}-4000-8000-{n * 7919 % 16**12:012x}"


def item(n: int, bad: bool) -> dict[str, Any]:
    script = n % 3 != 0
    out: dict[str, Any] = {
        "item_id": uuid(n, 1), "name": f"{'Script' if script else 'Notes'} {n}",
        "type": "script" if script else "notecard", "description": "",
        "permissions": {"owner": 0x7FFFFFFF, "next_owner": 0x82000},
    }
    if script:
        out.update(subtype=n % 2, vm="luau" if n % 2 else "mono", running=n % 5 != 0, faulted=False)
    if n % 4 == 0:
        out["creator_id"] = uuid(n % 50, 9)
    out["revision"] = n % 17 + 1
    if bad:
        out["vm"] = 5
    return out


def object_list(items: int, objects: int, bad_every: int) -> dict[str, Any]:
    per_prim, extra = divmod(items, objects * 5)
    n = 0
    out = []
    for o in range(objects):
        prims = []
        for p in range(5):
            inventory = []
            for _ in range(per_prim + (1 if o * 5 + p < extra else 0)):
                inventory.append(item(n, bool(bad_every) and n % bad_every == bad_every - 1))
                n += 1
            prims.append(inventory)
        out.append({
            "object_id": uuid(o, 2), "object_name": f"Object {o}", "object_description": "",
            "owner_id": uuid(1, 3), "region": "Bench Region",
            "permissions": {"owner": 0x7FFFFFFF, "next_owner": 0x82000}, "can_save_back": True,
            "inventory": prims[0],
            "linked_objects": [{"link_id": uuid(o * 8 + k, 4), "link_number": k + 1, "link_name": f"Link {k}",
                                "link_description": "", "permissions": {"owner": 0x7FFFFFFF, "next_owner": 0},
                                "inventory": prims[k]} for k in range(1, 5)],
        })
    assert n == items
    return {"objects": out}


def baseline_rev(given: str | None) -> str:
    if given:
        return given
    revs = subprocess.run(["git", "log", "--format=%H", "--", CODEC], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.split()
    for rev in revs:
        text = subprocess.run(["git", "show", f"{rev}:{CODEC}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout
        if "cattrs" not in text:
            return rev
    raise SystemExit(f"no commit of {CODEC} without cattrs")


def load_codec(rev: str) -> types.ModuleType:
    """The codec as it was at `rev`, as a module of slfs.protocol (its relative imports work)."""
    source = subprocess.run(["git", "show", f"{rev}:{CODEC}"], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout
    spec = importlib.util.spec_from_loader("slfs.protocol._bench_baseline_codec", loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "slfs.protocol"
    sys.modules[spec.name] = module
    exec(compile(source, f"{rev[:10]}:{CODEC}", "exec"), module.__dict__)
    return module


def best(rounds: int, fn: Any) -> tuple[float, float, Any]:
    """Best wall and CPU times of `rounds` calls, and the last result."""
    times, cpu = [], []
    out = None
    for _ in range(rounds):
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(times), min(cpu), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--objects", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", help="git revision of the codec to compare with")
    ap.add_argument("--bad-every", type=int, default=0, metavar="N")
    args = ap.parse_args()

    frame = json.dumps({"jsonrpc": "2.0", "id": 7, "result": object_list(args.items, args.objects,
                                                                        args.bad_every)})
    rev = baseline_rev(args.baseline)
    old = load_codec(rev)
    print(f"object.list result: {args.items} items in {args.objects} objects (5 prims each), "
          f"{len(frame) / 1e6:.1f} MB; bad optional field every {args.bad_every or 'never'}")
    print(f"baseline codec: {rev[:10]}; best of {args.rounds}")

    t_json, cpu_json, msg = best(args.rounds, lambda: json.loads(frame))
    result = msg["result"]
    ignored: list[str] = []

    def decode(mod: Any) -> Any:
        ignored.clear()
        return mod.from_json(t.ObjectListResponse, result, on_ignored=lambda key, why: ignored.append(key))

    t_before, cpu_before, before = best(args.rounds, lambda: decode(old))
    before_ignored = sorted(set(ignored))
    t_after, cpu_after, after = best(args.rounds, lambda: decode(codec))
    if before != after or [o.extra for o in before.objects] != [o.extra for o in after.objects]:
        raise SystemExit("the two codecs decoded the payload differently")
    if sorted(set(ignored)) != before_ignored:
        raise SystemExit(f"the two codecs reported different fields: {before_ignored} / {sorted(set(ignored))}")

    per = 1e6 / args.items
    print(f"{'':<28}{'wall':>8}   {'per item':>10}   {'CPU':>7}")
    for what, wall, cpu in (("json.loads", t_json, cpu_json), ("from_json before", t_before, cpu_before),
                            ("from_json after (cattrs)", t_after, cpu_after)):
        print(f"{what:<28}{wall:8.3f} s {wall * per:7.2f} us {cpu:7.3f} s")
    print(f"{'json.loads + from_json':<28}{t_json + t_before:8.3f} s -> {t_json + t_after:.3f} s")
    print(f"decoding speed-up: {t_before / t_after:.1f}x; both decoded equal objects"
          + (f", reported {before_ignored}" if before_ignored else ""))


if __name__ == "__main__":
    main()
