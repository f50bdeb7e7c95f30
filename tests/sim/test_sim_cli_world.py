"""The `python -m slfs.sim` entry point and the world file format."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import trio

from slfs.sim import SimViewer, load_world, sample_world
from slfs.sim.compiler import compile_source, runtime_events
from slfs.sim.server import correct_name


def test_world_roundtrip(tmp_path: Path) -> None:
    world = sample_world()
    path = tmp_path / "world.json"
    path.write_text(json.dumps(world.to_json()))
    again = load_world(path)
    assert again.to_json() == world.to_json()
    assert sample_world() is not sample_world()


def test_world_defaults(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(
        json.dumps(
            {
                "objects": [
                    {
                        "object_id": "AB9A0A9C-0000-4000-8000-000000000001",
                        "object_name": "B",
                        "inventory": [
                            {
                                "item_id": "X1",
                                "name": "s",
                                "type": "script",
                                "vm": "luau",
                                "content": "ll.OwnerSay('hi')",
                            }
                        ],
                    }
                ]
            }
        )
    )
    world = load_world(path)
    obj = world.objects["ab9a0a9c-0000-4000-8000-000000000001"]
    assert obj.published
    item = obj.root.inventory[0]
    assert item.subtype == 1 and item.revision == 1 and item.compiled_content == item.content


def test_sample_world_shape() -> None:
    world = sample_world()
    names = [o.name for o in world.objects.values()]
    assert (
        names.count("Twin") == 2
        and not world.objects[
            next(o.object_id for o in world.objects.values() if o.name == "Unpublished Lamp")
        ].published
    )
    house = next(o for o in world.objects.values() if o.name == "House")
    assert [c.name for c in house.children].count("Object") == 6
    for obj in world.objects.values():
        for prim in obj.prims():
            assert prim.prim_id == prim.prim_id.lower()


def test_compiler_examples() -> None:
    assert compile_source('default { state_entry() { llOwnerSay("a // b"); } }', "lsl") == []
    assert compile_source("default { state_entry() { x = 1 @ 2; } }", "lsl")[0]["column"] == 33
    assert compile_source("default {\n  syntax error here\n}", "lsl")[0]["row"] == 2
    assert compile_source("default { /* open", "lsl")[0]["message"].endswith("unterminated comment")
    assert compile_source("for i = 1, 3 do\n  print(i)\nend\nrepeat x() until y\n", "luau") == []
    assert compile_source("local s = [[\nend\n]]\nprint(s)", "luau") == []
    assert compile_source("end", "luau")[0]["message"] == "Expected <eof>, got 'end'"
    assert compile_source("while x\n  y()\nend", "luau")[0]["message"].startswith("Expected 'do'")
    events = runtime_events('ll.OwnerSay("one")\nll.OwnerSay(\'two\')\n-- SIM_RUNTIME_ERROR("boom")', "luau")
    assert [(e.kind, e.message, e.line) for e in events] == [
        ("debug", "one", 1),
        ("debug", "two", 2),
        ("error", "boom", 3),
    ]


def test_name_correction() -> None:
    assert correct_name("  a|b\tc\u00e9 ") == "a b c"
    assert correct_name("x" * 70) == "x" * 63
    assert correct_name("line\nbreak") == "line\nbreak"


async def test_notification_of_async_method(start_sim, connect) -> None:
    with trio.fail_after(10):
        sim: SimViewer = await start_sim()
        async with connect(sim) as c:
            await c.send({"jsonrpc": "2.0", "method": "object.content.get", "params": {}})
            msg = await c.recv()
            assert msg["id"] is None and msg["error"]["code"] == -32600


def test_cli_runs_and_stops() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "slfs.sim", "--port", "0", "--viewer-version", "2", "--compile-failure", "stoi",
         "--deferred-properties"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("slfs-sim listening on 127.0.0.1:")
        assert int(line.rsplit(":", 1)[1]) > 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_cli_flags_for_newer_viewers() -> None:
    from slfs.sim.cli import build_parser, build_sim

    args = build_parser().parse_args(
        [
            "--viewer-version",
            "2",
            "--compile-failure",
            "stoi",
            "--deferred-properties",
            "--properties-delay",
            "0.5",
            "--deferred-owner-id",
            "null",
        ]
    )
    sim = build_sim(args)
    assert sim.v2 and sim.compile_failure == "stoi"
    assert sim.properties_delay == 0.5 and sim.deferred_owner_id == "null"
    assert all(o.deferred_properties for o in sim.world.objects.values())
    never = build_sim(build_parser().parse_args(["--properties-delay", "-1", "--compile-failure", "nul"]))
    assert never.properties_delay is None and never.compile_failure == "nul"
    plain = build_sim(build_parser().parse_args([]))
    assert plain.compile_failure is None and not any(o.deferred_properties for o in plain.world.objects.values())
