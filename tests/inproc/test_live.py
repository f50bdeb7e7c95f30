"""Live sync through the fs operations object (no mount): subscribing, the live directory, saves
into the viewer's temp file, compiles, the end of a subscription, a reconnect."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import trio
from e2e.worlds import item, u

from slfs.model.live import ViewerRefused
from slfs.sim import World
from slfs.sim.world import world_from_json

from .harness import Driver, fails, fs_against_sim

VERSIONS = [pytest.param(1, id="v1"), pytest.param(2, id="v2")]
INV = u(7)
GOOD = "default\n{\n    state_entry()\n    {\n        llOwnerSay(\"ok\");\n    }\n}\n"
BAD = GOOD.replace('"ok"', '"bad" @')


def world() -> World:
    return world_from_json({
        "agent_id": u(99, "e"), "agent_name": "Tester Resident",
        "agent_inventory": [item(INV, "Pocket", "script", GOOD, subtype=0, vm="mono", running=True)],
        "objects": [],
    })


@pytest.fixture(params=VERSIONS)
def version(request: pytest.FixtureRequest) -> int:
    return int(request.param)


async def subscribed(fs: Driver) -> tuple[str, str]:
    sid, temp = await fs.sim.open_script_editor(INV)
    await fs.sim.live_seen(sid, 1)  # the viewer's first poll: its own write, ignored
    await fs.ws.live.subscribe(temp)
    return sid, temp


async def test_a_save_reaches_the_viewer_and_its_compile_comes_back(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=version, live_poll_interval=0.2) as fs:
        sid, temp = await subscribed(fs)
        assert await fs.entries(".slfs/live") == ["Pocket.lsl", "Pocket.lsl.diag", "Pocket.lsl.log"]
        assert await fs.read_file(".slfs/live/Pocket.lsl") == GOOD.encode()
        await fs.write_file(".slfs/live/Pocket.lsl", BAD.encode())
        assert Path(temp).read_text() == BAD
        ls = fs.ws.live.by_id[sid]
        with trio.fail_after(10):
            while not ls.compiled_since_write:
                await ls.compiled.wait()
        diag = (await fs.read_file(".slfs/live/Pocket.lsl.diag")).decode()
        assert diag.startswith(f"{fs.ws.mountpoint}/.slfs/live/Pocket.lsl:5:")
        assert "Pocket.lsl.state" in await fs.entries(".slfs/live")
        assert fs.sim.item(INV).content == BAD


async def test_two_subscribes_of_one_script_share_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=version) as fs:
        sid, temp = await fs.sim.open_script_editor(INV)
        got = []
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(lambda: _append(got, fs.ws.live.subscribe(temp)))
        assert got[0] is got[1] and list(fs.ws.live.by_id) == [sid]
        assert sum(1 for m, _p in fs.sim.calls if m == "script.subscribe") == 1


async def _append(out: list[object], awaitable: object) -> None:
    out.append(await awaitable)  # type: ignore[misc]


async def test_a_refusal_and_a_missing_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=version) as fs:
        sid, temp = await fs.sim.open_script_editor(INV)
        fs.sim.fail_next_subscribe(sid)
        with pytest.raises(ViewerRefused, match="Internal server error"):
            await fs.ws.live.subscribe(temp)
        assert fs.ws.live.by_id == {}
        with pytest.raises(Exception) as missing:
            await fs.ws.live.subscribe(os.path.join(os.path.dirname(temp), f"sl_script_Gone_{'0' * 32}.lsl"))
        assert getattr(missing.value, "errno", None) == errno.ENOENT


async def test_the_editor_closed_while_a_handle_is_dirty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=version) as fs:
        sid, temp = await subscribed(fs)
        fh = await fs.open(".slfs/live/Pocket.lsl", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"// unsaved\n")
        await fs.sim.close_script_editor(sid)
        with trio.fail_after(10):
            while sid in fs.ws.live.by_id:
                await trio.sleep(0.02)  # the unsubscribe notification is on its way
        assert await fails(fs.ops.flush(fh)) == errno.ENOENT
        await fs.ops.release(fh)
        recovery = tmp_path / "xdg_state_home" / "slfs" / "recovery"
        assert [p.read_bytes() for p in recovery.iterdir()] == [b"// unsaved\n"]
        assert await fs.entries(".slfs/live") == []
        assert not os.path.exists(temp)


async def test_a_reconnect_subscribes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, world(), viewer_version=version) as fs:
        sid, _temp = await subscribed(fs)
        first = fs.sim.live_editor(sid).holder
        await fs.sim.disconnect_all()
        with trio.fail_after(10):
            while fs.sim.live_editor(sid).holder in (None, first):
                await trio.sleep(0.02)
        assert sid in fs.ws.live.by_id
