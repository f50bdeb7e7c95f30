"""Worlds, write bookkeeping and hostile frames for tests/e2e/test_faults.py (no tests here)."""

from __future__ import annotations

import errno
import json
import os
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from slfs.sim import World
from slfs.sim.world import world_from_json
from support.mount import Mount
from support.worlds import SAMPLE_DIRS, SAMPLE_FILES, item, u
from support.writes import OBJ, recovery_files

# --- worlds -------------------------------------------------------------------------------------


def notes_world(existing: int) -> World:
    """One object "Box" (OBJ) holding notecards E00, E01, ... (content "existing <n>")."""
    inventory = [item(u(100 + i), f"E{i:02d}", content=f"existing {i}\n") for i in range(existing)]
    objects = [{"object_id": OBJ, "object_name": "Box", "inventory": inventory}]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester", "objects": objects})


def prim_items(m: Mount, prim_id: str = OBJ) -> list[Any]:
    assert m.sim is not None
    found = m.sim.world.find_prim(prim_id)
    assert found is not None
    return list(found[1].inventory)


def in_world(m: Mount, sl_name: str, data: bytes, prim_id: str = OBJ) -> bool:
    """Whether an item named `sl_name` (or a duplicate the viewer renamed "<name> N") holds `data`."""
    text = data.decode()
    return any(i.content == text for i in prim_items(m, prim_id)
               if i.name == sl_name or (i.name.startswith(sl_name + " ") and i.name[len(sl_name) + 1:].isdigit()))


# --- writes and what became of them ---------------------------------------------------------------


@attrs.define
class Outcome:
    """One write of a whole file: where it failed ("" for nowhere) and with which errno."""

    name: str  # the item's name in-world (the file name without its extension)
    data: bytes
    stage: str = ""  # "open", "write", "close" or ""
    err: int = 0
    landed: bool | None = None  # for a close that returned 0: was the content in-world right then


def write_stages(path: Path, data: bytes) -> tuple[str, int]:
    """open(O_TRUNC|O_CREAT) + write + close: ("", 0), or the step that failed and its errno."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o644)
    except OSError as exc:
        return "open", exc.errno or -1
    try:
        os.write(fd, data)
    except OSError as exc:
        os.close(fd)
        return "write", exc.errno or -1
    try:
        os.close(fd)
    except OSError as exc:
        return "close", exc.errno or -1
    return "", 0


def check_outcomes(m: Mount, outcomes: Iterable[Outcome]) -> tuple[int, int]:
    """Every close that returned 0 had its content in-world; every close that failed left a recovery
    copy with exactly what was written. Returns (closes that returned 0, closes that failed)."""
    copies = {p.read_bytes() for p in recovery_files(m)}
    ok = failed = 0
    problems = []
    for o in outcomes:
        if o.stage == "":
            ok += 1
            if not o.landed:
                problems.append(f"{o.name}: close() returned 0 but {o.data!r} was not in-world")
        elif o.stage == "close":
            failed += 1
            if o.data not in copies:
                problems.append(f"{o.name}: close() failed ({errno.errorcode.get(o.err, o.err)}) and no "
                                f"recovery copy holds {o.data!r}")
    assert not problems, "\n".join(problems) + f"\nrecovery copies: {sorted(copies)}\n" + m.log_text()[-20000:]
    return ok, failed


# --- the sample tree, as a program sees it ------------------------------------------------------


def sample_snapshot(mnt: Path) -> dict[str, Any]:
    """Listings of the root and of every sample directory, and each sample file's bytes (or errno)."""
    out: dict[str, Any] = {"": sorted(os.listdir(mnt))}
    for d in SAMPLE_DIRS:
        out[d + "/"] = sorted(os.listdir(mnt / d))
    for f in SAMPLE_FILES:
        try:
            out[f] = (mnt / f).read_bytes()
        except OSError as exc:
            out[f] = errno.errorcode.get(exc.errno or 0, exc.errno)
    return out


# --- frames a broken or hostile viewer might send -----------------------------------------------

WRONG = [None, True, False, 0, -1, 2**64, 1.5, "", "x", "\u0000\ud800", [], [1, "a"], {}, {"k": [None]}]


def _wrong_for(value: Any) -> list[Any]:
    """Values of another JSON type than `value` (None counts as "absent" for optional fields)."""
    def kind(v: Any) -> str:
        return "bool" if isinstance(v, bool) else "num" if isinstance(v, (int, float)) else type(v).__name__
    return [w for w in WRONG if kind(w) != kind(value)]


def _note(prefix: str, n: int) -> dict[str, Any]:
    return {"item_id": u(n, prefix), "name": f"Fuzz {n}", "type": "notecard", "subtype": 0,
            "permissions": {"owner": 0x7FFFFFFF, "next_owner": 0x8E000}, "description": "", "revision": 1}


def _fuzz_object(object_id: str, n: int) -> dict[str, Any]:
    """A well-formed published object of the fuzz (its own ids, never the sample world's)."""
    return {
        "object_id": object_id,
        "object_name": "Fuzz",
        "object_description": "",
        "region": "Fuzzland",
        "owner_id": u(99, "e"),
        "permissions": {"owner": 0x7FFFFFFF, "next_owner": 0x8E000},
        "can_save_back": True,
        "inventory": [_note("c", n)],
        "linked_objects": [{"link_id": u(n, "d"), "link_number": 2, "link_name": "Child", "link_description": "",
                            "permissions": {"owner": 0x7FFFFFFF}, "inventory": [_note("f", n)]}],
    }


def _set(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    """A copy of `obj` with the field at `path` set to `value`."""
    obj = json.loads(json.dumps(obj))
    target = obj
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return obj


def _field_paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every field of `obj`, nested ones included: (path, value)."""
    out = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append(((*prefix, k), v))
            out.extend(_field_paths(v, (*prefix, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_field_paths(v, (*prefix, i)))
    return out


def note(method: str, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params})


def request(rid: Any, method: str, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


def hostile_frames(rng: random.Random, sample_objects: list[str], fuzz_ids: list[str],
                   total: int = 2000) -> list[str | bytes]:
    """`total` frames no well-behaved viewer sends, in a random order (deterministic for `rng`):
    those of structured_frames, then random JSON-RPC-shaped noise up to `total`."""
    frames = structured_frames(rng, sample_objects, fuzz_ids)
    assert len(frames) <= total, len(frames)
    methods = ["object.publish", "object.update", "object.unpublish", "runtime.debug", "runtime.error",
               "script.compiled", "language.syntax.change", "system.ping", "command.execute", "zzz"]
    while len(frames) < total:
        params = {rng.choice(["object_id", "object", "inventory", "x", "id", "changes"]): rng.choice(WRONG)
                  for _ in range(rng.randrange(0, 4))}
        if rng.random() < 0.5:
            params["object_id"] = rng.choice([*fuzz_ids, u(rng.randrange(10**6), "7")])
        if rng.random() < 0.3:
            frames.append(request(f"noise-{len(frames)}", rng.choice(methods), params))
        else:
            frames.append(note(rng.choice(methods), params))
    rng.shuffle(frames)
    return frames


def structured_frames(rng: random.Random, sample_objects: list[str], fuzz_ids: list[str]) -> list[str | bytes]:
    """Frames no well-behaved viewer sends: garbage JSON, batches,
    object.publish / object.update with a wrong type in every field (publishes only of the fuzz's own
    object ids, so whatever a lenient decode accepts can be unpublished again; updates of the sample
    objects too: an update whose fields are all wrong must change nothing), publishes of sample
    objects whose required fields are malformed (refused whole), unknown methods, huge and odd ids,
    binary frames, requests with bad params, and every other notification with wrong types."""
    frames: list[str | bytes] = []
    # Garbage that is not JSON, or not one JSON-RPC message.
    frames += ["", " ", "{", "}", "[", "nul", "{\"jsonrpc\":", "\"just a string\"", "42", "null", "true", "[]",
               "[[[[[[[[[[" * 2000, "{\"a\":" * 5000 + "1" + "}" * 5000, "NaN", "-Infinity", "1e999999",
               "9" * 5000, "{\"jsonrpc\":\"2.0\",\"id\":" + "9" * 5000 + ",\"method\":\"system.ping\"}",
               "\x00\x01\x02", "\"\\ud800\"",
               "{\"jsonrpc\":\"2.0\",\"method\":\"object.update\",\"params\":{\"object_id\":",
               json.dumps([{"jsonrpc": "2.0", "method": "object.publish", "params": {}}] * 3),
               json.dumps([request(1, "system.ping", {})]), "{}", "{\"jsonrpc\":\"1.0\",\"method\":\"x\"}",
               "{\"jsonrpc\":\"2.0\"}", "{\"jsonrpc\":\"2.0\",\"method\":5}", "{\"jsonrpc\":\"2.0\",\"method\":\"\"}",
               "{\"jsonrpc\":\"2.0\",\"method\":\"object.publish\",\"params\":\"x\"}",
               "{\"jsonrpc\":\"2.0\",\"method\":\"object.update\",\"params\":null}",
               "{\"jsonrpc\":\"2.0\",\"method\":\"object.update\",\"params\":[1,2,3]}"]
    for _ in range(60):
        n = rng.randrange(1, 300)
        frames.append("".join(chr(rng.choice([rng.randrange(32, 127), rng.randrange(0x80, 0xD7FF)]))
                              for _ in range(n)))
        valid = note("object.update", {"object_id": rng.choice(sample_objects), "object_name": "x"})
        frames.append(valid[: rng.randrange(1, len(valid) - 1)])  # cut short

    # object.publish with a wrong type in every field, nested ones included (the fuzz's own ids).
    for i, (path, value) in enumerate(_field_paths(_fuzz_object("x", 0))):
        for wrong in _wrong_for(value):
            n = len(frames)
            obj = _set(_fuzz_object(fuzz_ids[n % len(fuzz_ids)], n), path, wrong) if path[0] != "object_id" \
                else _set(_fuzz_object("x", n), path, wrong)
            frames.append(note("object.publish", {"object": obj}))
        del i
    # Odd values of the right type: names no file system takes as they are, unknown item kinds.
    odd_names = ["", ".", "..", "/", "a/b", "\u0000", "nul\u0000in", "\ud800", "\udcff", "x" * 1000, ".slfs",
                 "-rf", " ", "\n", "\u2215", "Fuzz@12345678", "Hello Cube"]
    for n, name in enumerate(odd_names):
        obj = _fuzz_object(fuzz_ids[n % len(fuzz_ids)], 5000 + n)
        obj["object_name"] = name
        obj["inventory"][0]["name"] = name
        obj["linked_objects"][0]["link_name"] = name
        obj["linked_objects"][0]["inventory"][0]["name"] = name
        frames.append(note("object.publish", {"object": obj}))
    for n, (kind, extra) in enumerate([("texture", {}), ("script", {"subtype": 99}), ("script", {"vm": "cobol"}),
                                       ("notecard", {"subtype": -5}), ("", {}), ("Script", {})]):
        obj = _fuzz_object(fuzz_ids[(n + 7) % len(fuzz_ids)], 6000 + n)
        obj["inventory"][0].update(type=kind, **extra)
        frames.append(note("object.publish", {"object": obj}))
    for wrong in WRONG:
        frames.append(note("object.publish", {"object": wrong}))
        frames.append(note("object.publish", wrong))
    # Publishes of sample objects whose required fields are malformed: refused whole.
    for object_id in sample_objects:
        for field in ("item_id", "name", "type"):
            for wrong in (None, 5, [], {}):
                bad = _set(_fuzz_object(object_id, 1), ("inventory", 0, field), wrong)
                frames.append(note("object.publish", {"object": bad}))
        bad = _set(_fuzz_object(object_id, 1), ("linked_objects", 0, "link_id"), 7)
        frames.append(note("object.publish", {"object": bad}))

    # object.update with a wrong type in every field, of sample objects and of unknown ones.
    update_fields: dict[str, Any] = {
        "object_name": "s", "object_description": "s", "owner_id": "s", "permissions": {"owner": 1},
        "can_save_back": True, "inventory": [], "linked_objects": [], "changes": {},
    }
    for object_id in [*sample_objects, u(777, "b")]:
        for field, value in update_fields.items():
            for wrong in rng.sample([w for w in _wrong_for(value) if w is not None], 5):
                frames.append(note("object.update", {"object_id": object_id, field: wrong}))
        frames.append(note("object.update", {"object_id": object_id, "permissions": {"owner": "all"}}))
        frames.append(note("object.update", {"object_id": object_id, "inventory": [{"item_id": 5}]}))
        frames.append(note("object.update", {"object_id": object_id,
                                             "inventory": [{"name": "no id", "type": "notecard"}]}))
        frames.append(note("object.update", {"object_id": object_id, "linked_objects": [{"link_name": "no id"}]}))
        for sub in ("inventory", "linked_objects"):
            for key in ("added", "removed", "modified"):
                for wrong in rng.sample(["x", 5, {"a": 1}, [None], [5]], 2):
                    frames.append(note("object.update", {"object_id": object_id, "changes": {sub: {key: wrong}}}))
    for wrong in WRONG:
        frames.append(note("object.update", {"object_id": wrong}))
        frames.append(note("object.update", wrong))

    # Unknown methods, as notifications and as requests.
    for name in ["object.publishX", "foo", "system.pingg", "a" * 10000, "\u2603.\u2603", ".", "object..update",
                 "session.handshake.extra", "rpc.discover", "script.subscribe", "object.content.get"]:
        frames.append(note(name, {}))
        frames.append(request(f"odd-{len(frames)}", name, {"x": 1}))
    # Huge and odd ids: requests the client answers, responses nobody asked for.
    for rid in [10**30, -(2**63), 2**63, 1e300, 0.5, True, None, "", "x" * 5000, {"id": 1}, [1], "\u2603"]:
        frames.append(request(rid, "system.ping", {"timestamp": 1}))
        frames.append(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"pong": "pong"}}))
        frames.append(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "x"}}))
        frames.append(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": "bad"}}))
        frames.append(json.dumps({"jsonrpc": "2.0", "id": rid, "result": 1, "error": {"code": 1, "message": ""}}))
    # Binary frames: JSON-RPC as bytes (read as text) and bytes that are not UTF-8.
    for i in range(40):
        frames.append(request(10**20 + i, "system.status", {}).encode())
        frames.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))) + b"\xff")
        frames.append(note("object.update", {"object_id": u(i, "9"), "object_name": 3}).encode("utf-16"))
    # Requests with bad params (no challenge path: a bad one rightly ends the connection).
    bad_params: list[Any] = [[], [1, 2], {"timestamp": "now"}, {"timestamp": [1]}, {"x": None}]
    for method in ["system.ping", "system.getVersion", "system.status", "system.listMethods", "command.list"]:
        for params in bad_params:
            frames.append(request(f"bad-{len(frames)}", method, params))
    for params in [[], {"features": "all"}, {"languages": 5}, {"challenge": 5}, {"viewer_name": []},
                   {"challenge": None, "agent_id": {}}]:
        frames.append(request(f"hs-{len(frames)}", "session.handshake", params))
    for params in [[], {}, {"command": 5}, {"command": ""}, {"command": "editor.nope"},
                   {"command": "editor.open_file"}, {"command": "editor.open_file", "params": {"path": 5}},
                   {"command": "editor.show_message", "params": "x"},
                   {"command": "editor.show_message", "params": {"message": ["x"]}},
                   {"command": "editor.show_message", "params": {"message": "m", "level": 7}}]:
        frames.append(request(f"cmd-{len(frames)}", "command.execute", params))
    # Every other notification, with wrong types.
    others: dict[str, dict[str, Any]] = {
        "object.unpublish": {"object_id": "s", "reason": "s"},
        "runtime.debug": {"object_id": "s", "prim_id": "s", "item_id": "s", "message": "s", "channel": "s"},
        "runtime.error": {"object_id": "s", "prim_id": "s", "item_id": "s", "message": "s", "line": 1,
                          "stack": ["s"], "error": "s"},
        "language.syntax.change": {"id": "s"},
        "script.compiled": {"script_id": "s", "success": True, "running": True, "diagnostics": [],
                            "object_id": "s", "prim_id": "s", "item_id": "s"},
        "session.disconnect": {"reason": 1, "message": "s"},
        "session.ok": {"agent_id": "s", "agent_name": "s"},
        "script.unsubscribe": {"script_id": "s"},
    }
    for method, fields in others.items():
        for field, value in fields.items():
            for wrong in _wrong_for(value):
                if wrong is None:
                    continue
                params = {k: (u(888, "9") if isinstance(v, str) else v) for k, v in fields.items()}
                params[field] = wrong
                frames.append(note(method, params))
        for wrong in WRONG:
            frames.append(note(method, wrong))
    frames.append(note("script.compiled", {"script_id": "s", "success": True,
                                           "diagnostics": [{"row": "x", "column": None, "level": 1}]}))
    return frames
