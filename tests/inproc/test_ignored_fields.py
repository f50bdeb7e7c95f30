"""An optional field the viewer sends with a value of an unexpected type is logged and ignored: what
the mount shows of it stays what it showed before (no mount; the simulator sends the odd frame)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from support.inproc import CTX, Driver, fs_against_sim

from slfs.world.tree import Item

HELLO = "50f550c1-7f14-5ac6-be04-f121557806dc"  # Hello Cube/Hello.lsl in the sample world, running


async def _xattr(fs: Driver, path: str, name: str) -> str:
    return (await fs.ops.getxattr(await fs.lookup(path), f"user.sl.{name}".encode(), CTX)).decode()


async def _shown(fs: Driver) -> tuple[Any, ...]:
    attr = await fs.stat("Hello Cube/Hello.lsl")
    return (await fs.read_file("Hello Cube/.slfs/Hello.lsl.state"), await _xattr(fs, "Hello Cube/Hello.lsl", "running"),
            await _xattr(fs, "Hello Cube/Hello.lsl", "perms"), await _xattr(fs, "Hello Cube/Hello.lsl", "vm"),
            attr.st_mode)


async def test_an_ill_typed_running_keeps_the_run_state_shown(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, viewer_version=viewer_version) as fs:
        before = await _shown(fs)
        assert before[:2] == (b"running\n", "1")
        sim = fs.sim
        obj, prim = sim.object_of(HELLO), sim.prim_of(HELLO)
        inventory = [i.to_wire(revision=sim.v2) for i in prim.explorable()]
        for wire in inventory:
            if wire["item_id"] == HELLO:
                # Wrong types where the item's state is; the description, well typed, shows the
                # update was applied.
                wire.update(running="yes", vm=3, permissions="all", description="changed")
        frame = {"jsonrpc": "2.0", "method": "object.update",
                 "params": {"object_id": obj.object_id, "inventory": inventory}}
        with caplog.at_level(logging.WARNING, logger="slfs.session.session"):
            assert await sim.send_raw(json.dumps(frame)) == 1
            node = fs.ws.tree.by_uuid[HELLO]
            assert isinstance(node, Item)
            assert await fs.ws.wait_for_world(lambda: node.info.description == "changed", 5)
        assert await _xattr(fs, "Hello Cube/Hello.lsl", "description") == "changed"
        assert await _shown(fs) == before
        warned = [r.getMessage() for r in caplog.records if "unexpected type" in r.getMessage()]
        assert any("inventory[].running" in m for m in warned), warned
        assert fs.ws.session.state == "connected"
