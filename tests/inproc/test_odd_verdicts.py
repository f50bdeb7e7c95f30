"""A compile verdict of any shape never fails a save (no mount): `errors` and `diagnostics` of the
wrong type, huge or hostile lines, are shown as well as they can be and the save stands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.inproc import fs_against_sim

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
