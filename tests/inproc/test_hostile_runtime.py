"""Runtime output is other residents' text: a 16 MB line full of terminal escapes is bounded and
cleaned before it reaches an event, F.log or an object's log (no mount)."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
from support.inproc import fs_against_sim

from slfs.model.runtime import MAX_RUNTIME_TEXT
from slfs.sim import sample_world


@pytest.mark.parametrize("generation", ["G1", "G2", "G3", "G4"])
async def test_a_huge_hostile_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, generation: str) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sample_world(), generation=generation,
                              viewer_version=2 if generation == "G4" else 1) as fs:
        if generation == "G1":
            for obj in list(fs.sim.world.objects.values()):  # no object.list: explore again
                if obj.published:
                    await fs.sim.publish(obj.object_id)
        hello = next(i for o in fs.sim.world.objects.values() for p in o.prims() for i in p.inventory
                     if i.name == "Hello")
        if generation == "G1":  # G1 forwards output only to a live-sync subscriber of the prim
            _sid, temp = await fs.sim.open_script_editor(hello.item_id)
            await fs.ws.live.subscribe(temp)
        cube = next(o for o in fs.sim.world.objects.values() if any(i.item_id == hello.item_id
                                                                   for p in o.prims() for i in p.inventory))
        await fs.sim.rename_prim(cube.object_id, "Cube\x1b[2J\x1b]52;c;aGk=\x07")  # a hostile object name
        await fs.sim.quiesce()
        hostile = "\x1b]0;pwned\x07\x1b[2J" + "\x1b[31mX" * (16 * 1024 * 1024 // 6)
        before = fs.svc.events.seq
        await fs.sim.emit_debug(hello.item_id, hostile)
        with trio.fail_after(20):
            while not [e for e in fs.svc.events.since(before) if e["type"] == "runtime.debug"]:
                await trio.sleep(0.02)
        [event] = [e for e in fs.svc.events.since(before) if e["type"] == "runtime.debug"]
        assert len(event["message"]) <= MAX_RUNTIME_TEXT and "\x1b" not in event["message"]
        assert event["message"].startswith("XXX")
        logs = fs.ws.runtime.logs.object_log(event["object_id"]) + fs.ws.runtime.logs.script_log(event["item_id"])
        assert b"\x1b" not in logs and b"\x07" not in logs and logs
