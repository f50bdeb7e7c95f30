"""A compile verdict of any shape never fails a save (no mount): `errors` and `diagnostics` of the
wrong type, huge or hostile lines, are shown as well as they can be and the save stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.inproc import fs_against_sim

from slfs.protocol.compile_output import UNPRINTABLE
from slfs.sim import sample_world

BAD = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("x" @);\n    }\n}\n'


@pytest.mark.parametrize(("errors", "rows"), [
    (5, 0),
    (True, 0),
    ("(4, 25) : ERROR : one line, not a list", 1),
    ({"row": "x", "message": "a record, not a list"}, 1),
    ([None, 7, {"row": 2**40, "column": -3, "level": None, "message": "\x1b[2Jcleared"}], 1),
    (["(0, 0) : ERROR : " + "y" * 20_000_000], 1),
    (["[string \"Hello\"]:3: \x1b]0;title\x07luau-ish"], 1),
])
async def test_an_odd_verdict_never_fails_the_save(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    errors: Any, rows: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sample_world()) as fs:
        real = fs.sim._handlers["object.content.save"]

        async def odd(params: dict[str, Any], ctx: Any) -> Any:
            out = dict(await real(params, ctx))
            out.pop("diagnostics", None)
            out.update(compiled=False, errors=errors)
            return out
        fs.sim._handlers["object.content.save"] = odd
        await fs.write_file("Hello Cube/Hello.lsl", BAD.encode())  # raises on any failure
        hello = next(i for o in fs.sim.world.objects.values() for p in o.prims() for i in p.inventory
                     if i.name == "Hello")
        assert fs.sim.item(hello.item_id).content == BAD
        report = fs.ws.compiles[hello.item_id]
        assert report.compiled is False and len(report.diagnostics) == rows
        for d in report.diagnostics:
            assert "\x1b" not in d.message and "\x07" not in d.message and len(d.message) <= 2000
            assert 0 <= d.row < 2**31


@pytest.mark.parametrize(("field", "value", "message"), [
    # G1's explorer: the compiler's raw lines, NUL bytes and all (nothing in the viewer strips them).
    ("errors", ["(4, 25) : ERROR : syntax\0error\0\0"], "syntax error"),
    # G2-G4: a parsed record whose message holds NULs and a bell.
    ("diagnostics", [{"row": 5, "column": 26, "level": "ERROR", "message": "\0bad\0\x07token"}], "bad token"),
    # The simulator's --compile-failure nul: nothing but NULs.
    ("errors", ["\0" * 30], UNPRINTABLE),
])
async def test_nul_bytes_in_a_verdict_are_cleaned_and_the_save_stands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, field: str, value: Any, message: str) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sample_world()) as fs:
        real = fs.sim._handlers["object.content.save"]

        async def with_nuls(params: dict[str, Any], ctx: Any) -> Any:
            out = dict(await real(params, ctx))
            out.pop("diagnostics", None)
            out.update({"compiled": False, field: value})
            return out
        fs.sim._handlers["object.content.save"] = with_nuls
        await fs.write_file("Hello Cube/Hello.lsl", BAD.encode())  # close() answers 0
        hello = next(i for o in fs.sim.world.objects.values() for p in o.prims() for i in p.inventory
                     if i.name == "Hello")
        assert fs.sim.item(hello.item_id).content == BAD
        report = fs.ws.compiles[hello.item_id]
        assert report.compiled is False and [d.message for d in report.diagnostics] == [message]
        diag = (await fs.read_file("Hello Cube/.slfs/Hello.lsl.diag")).decode()
        assert diag.count("\n") == 1 and message in diag and "\0" not in diag and "\x07" not in diag
        assert await fs.read_file("Hello Cube/Hello.lsl") == BAD.encode()
        recovery = tmp_path / "xdg_state_home" / "slfs" / "recovery"
        assert not recovery.exists() or not any(p.is_file() for p in recovery.rglob("*"))


@pytest.mark.generations()
async def test_the_simulators_nul_answer_is_a_failed_compile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            viewer_version: int,
                                                            viewer_generation: str | None) -> None:
    """Every viewer's shape (G1's raw `errors`, G2-G4's parsed `diagnostics`, the documents'): a
    verdict of NULs is a failed compile shown as such; the save stands."""
    world = sample_world()
    hello = next(i for o in world.objects.values() for p in o.prims() for i in p.inventory if i.name == "Hello")
    async with fs_against_sim(tmp_path, monkeypatch, world, viewer_version=viewer_version,
                              generation=viewer_generation, compile_failure="nul") as fs:
        if viewer_generation == "G1":  # no object.list: explore again
            cube = next(k for k, o in world.objects.items() if o.name == "Hello Cube")
            await fs.sim.publish(cube)
            assert await fs.ws.wait_for_world(lambda: cube in fs.ws.tree.objects, 10)
        await fs.write_file("Hello Cube/Hello.lsl", BAD.encode())  # close() answers 0
        assert fs.sim.item(hello.item_id).content == BAD
        report = fs.ws.compiles[hello.item_id]
        assert report.compiled is False and [d.message for d in report.diagnostics] == [UNPRINTABLE]
