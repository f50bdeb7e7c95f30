"""Conformance of the simulated viewer's live sync (slfs/sim/live_sync.py) over a real WebSocket.

Sources: the protocol document (ScriptSubscribe/ScriptSubscribeResponse, ScriptUnsubscribe,
ScriptList, CompilationResult, the Launch URI), the newer document (CompilationResult "Delivery"
and its object_id/prim_id/item_id), research live-sync.md (temp file, script id, polling, close).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed

from slfs.protocol.constants import NULL_UUID, TEMP_NAME
from slfs.sim import SimViewer, sample_world
from slfs.sim.cli import build_parser, build_sim, resolve_items
from slfs.sim.live_sync import editor_argv, script_id_for
from slfs.sim.world import World, world_from_json

GOOD = 'default { state_entry() { llOwnerSay("live"); } }\n'
BAD = "default {\n    syntax error here\n}\n"
INV_ITEM = "0a9c5f3e-1111-4222-8333-444455556666"


def by_name(sim: SimViewer, name: str) -> dict[str, str]:
    for obj in sim.world.objects.values():
        for prim in obj.prims():
            for item in prim.inventory:
                if item.name == name:
                    return {"object_id": obj.object_id, "prim_id": prim.prim_id, "item_id": item.item_id}
    raise KeyError(name)


def sub(script_id: str) -> dict[str, str]:
    return {"script_id": script_id, "script_name": "x", "script_language": "lsl"}


def write(path: str, text: str, mtime: float | None = None) -> None:
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def world_with_inventory() -> World:
    data = sample_world().to_json()
    data["agent_inventory"] = [
        {"item_id": INV_ITEM, "name": "Pocket Script", "type": "script", "content": "default { state_entry() { } }"}
    ]
    return world_from_json(data)


async def test_handshake_advertises_live_sync(start_sim, connect, viewer_version: int) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=viewer_version)
        async with connect(sim) as c:
            assert c.handshake_params["features"]["live_sync"] is True


async def test_temp_file_name_id_and_content(start_sim, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sim = await start_sim(tmpdir=str(tmp_path), live_poll_interval=None)
        hello = by_name(sim, "Hello")
        sid, path = await sim.open_script_editor(hello["item_id"])
        md5 = hashlib.md5(f"{hello['prim_id']}_{hello['item_id']}".encode()).hexdigest()
        assert sid == md5 == script_id_for(hello["prim_id"], hello["item_id"])
        assert path == str(tmp_path / f"sl_script_Hello_{md5}.lsl")
        assert Path(path).read_text(encoding="utf-8") == sim.item(hello["item_id"]).content
        assert TEMP_NAME.match(os.path.basename(path))

        light = by_name(sim, "Light")  # Luau, in a child prim of House
        sid, path = await sim.open_script_editor(light["item_id"])
        assert path.endswith(f"_{sid}.luau") and sid == script_id_for(light["prim_id"], light["item_id"])

        # <>:"\/|?* removed from the name; a name the file system refuses falls back to the id
        odd = await sim.add_item(hello["prim_id"], 'a<b>c:d"e/f\\g|h?i*j', "script", content="default { }")
        sid, path = await sim.open_script_editor(odd.item_id)
        assert os.path.basename(path) == f"sl_script_abcdefghij_{sid}.lsl"
        long = await sim.add_item(hello["prim_id"], "L" * 300, "script", content="default { }")
        sid, path = await sim.open_script_editor(long.item_id)
        assert os.path.basename(path) == f"sl_script_{sid}.lsl"
        assert Path(path).read_text(encoding="utf-8") == "default { }"
        with pytest.raises(ValueError):
            await sim.open_script_editor(by_name(sim, "Notes/Todo")["item_id"])


async def test_subscribe_statuses_and_ids(start_sim, connect, tmp_path: Path, viewer_version: int) -> None:
    with trio.fail_after(15):
        sim = await start_sim(viewer_version=viewer_version, tmpdir=str(tmp_path), live_poll_interval=None)
        light = by_name(sim, "Light")  # child prim: object_id is the child, root_id the root
        sid, _path = await sim.open_script_editor(light["item_id"])
        async with connect(sim) as a, connect(sim) as b:
            assert await a.result("script.subscribe", sub("0" * 32)) == {
                "script_id": "0" * 32, "success": False, "status": 2, "message": "No subscription found for script",
            }
            ok = await a.result("script.subscribe", sub(sid))
            assert ok == {
                "script_id": sid, "success": True, "status": 0, "message": "OK",
                "object_id": light["prim_id"], "root_id": light["object_id"], "item_id": light["item_id"],
            }
            assert ok["object_id"] != ok["root_id"]
            assert await b.result("script.subscribe", sub(sid)) == {
                "script_id": sid, "success": False, "status": 3, "message": "Script already subscribed",
            }
            assert (await a.result("script.subscribe", sub(sid)))["status"] == 0  # the holder again

            sim.fail_next_subscribe(sid)
            assert await a.result("script.subscribe", sub(sid)) == {
                "script_id": sid, "success": False, "status": 4, "message": "Internal server error",
            }
            assert (await a.result("script.subscribe", sub(sid)))["status"] == 0

            hello = by_name(sim, "Hello")  # root prim: root_id == object_id
            sid2, _ = await sim.open_script_editor(hello["item_id"])
            ok2 = await b.result("script.subscribe", sub(sid2))
            assert ok2["object_id"] == ok2["root_id"] == hello["prim_id"]

            # the panel is gone, the entry kept: status 1, and the entry is dropped by it
            sim.invalidate_editor(sid2)
            assert sid2 in (await a.result("script.list"))["script_ids"]
            assert await a.result("script.subscribe", sub(sid2)) == {
                "script_id": sid2, "success": False, "status": 1, "message": "Invalid editor handle",
            }
            assert (await a.result("script.subscribe", sub(sid2)))["status"] == 2
            assert (await a.result("script.list"))["script_ids"] == [sid]
            if viewer_version == 1:  # b lost its last (only) subscription with the entry
                assert await b.notification("session.disconnect") == {"reason": 1, "message": "Editor closed"}
            else:
                assert (await b.result("system.status")) == {"status": "OK"}


async def test_subscription_ends_with_its_connection_entry_stays(start_sim, connect, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sim = await start_sim(tmpdir=str(tmp_path), live_poll_interval=None)
        sid, _ = await sim.open_script_editor(by_name(sim, "Hello")["item_id"])
        async with connect(sim) as b:
            async with connect(sim) as a:
                assert (await a.result("script.subscribe", sub(sid)))["status"] == 0
                assert (await b.result("script.subscribe", sub(sid)))["status"] == 3
            with trio.fail_after(5):
                while sim.connections > 1:
                    await trio.sleep(0.01)
            assert (await b.result("script.list"))["script_ids"] == [sid]
            assert (await b.result("script.subscribe", sub(sid)))["status"] == 0


async def test_unsubscribe_call(start_sim, connect, tmp_path: Path, viewer_version: int) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=viewer_version, tmpdir=str(tmp_path), live_poll_interval=None)
        sid, path = await sim.open_script_editor(by_name(sim, "Hello")["item_id"])
        async with connect(sim) as a, connect(sim) as b:
            assert (await a.result("script.subscribe", sub(sid)))["status"] == 0
            # not the holder, or an unknown id: ignored, and still a null result
            assert "result" not in await b.call("script.unsubscribe", {"script_id": sid})
            assert await b.result("script.unsubscribe", {"script_id": "nope"}) is None
            assert (await b.result("script.subscribe", sub(sid)))["status"] == 3
            # the holder: the entry goes (the viewer's unsubscribeEditor); the editor and file stay
            assert await a.result("script.unsubscribe", {"script_id": sid}) is None
            assert (await b.result("script.list"))["script_ids"] == []
            assert (await b.result("script.subscribe", sub(sid)))["status"] == 2
            assert os.path.exists(path)
            if viewer_version == 1:  # older viewers: its last subscription gone, the connection is closed
                assert await a.notification("session.disconnect") == {"reason": 1, "message": "Editor closed"}
                with pytest.raises(ConnectionClosed):
                    await a.ws.get_message()
            else:
                assert await a.result("script.unsubscribe", {"script_id": sid}) is None  # idempotent
                await a.drain(sim)
                assert not a.received("session.disconnect")


async def test_script_list_every_entry_held_or_not(start_sim, connect, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sim = await start_sim(
            viewer_version=2, tmpdir=str(tmp_path), live_poll_interval=None, world=world_with_inventory()
        )
        async with connect(sim) as c:
            assert await c.result("script.list") == {"temp_dir": str(tmp_path), "script_ids": [], "success": True}
            s1, _ = await sim.open_script_editor(by_name(sim, "Hello")["item_id"])
            s2, _ = await sim.open_script_editor(INV_ITEM)
            s3, _ = await sim.open_script_editor(by_name(sim, "Lamp")["item_id"])  # unpublished object
            await c.result("script.subscribe", sub(s1))
            listed = await c.result("script.list")
            assert sorted(listed["script_ids"]) == sorted([s1, s2, s3]) and listed["success"] is True
            # the Launch URI's script=<id>: temp_dir + the id find the temp file before any subscribe
            names = os.listdir(listed["temp_dir"])
            assert any(n.endswith(f"_{s2}.lsl") for n in names)
            await sim.close_script_editor(s2)
            assert sorted((await c.result("script.list"))["script_ids"]) == sorted([s1, s3])


async def test_live_change_compiled_to_the_subscriber_only(start_sim, connect, tmp_path: Path,
                                                           viewer_version: int) -> None:
    with trio.fail_after(15):
        sim = await start_sim(viewer_version=viewer_version, tmpdir=str(tmp_path), live_poll_interval=0.02)
        hello = by_name(sim, "Hello")
        sid, path = await sim.open_script_editor(hello["item_id"])
        await sim.live_seen(sid, 1)  # the file's appearance, the viewer's own write: ignored
        assert sim.live_editor(sid).outcomes == ["ignored"]
        base = int(os.stat(path).st_mtime)
        async with connect(sim) as a, connect(sim) as b:
            assert (await a.result("script.subscribe", sub(sid)))["status"] == 0
            write(path, GOOD, base + 10)
            await sim.live_seen(sid, 2)
            note = await a.notification("script.compiled")
            expected: dict[str, Any] = {"script_id": sid, "success": True, "running": True}
            if viewer_version == 2:
                expected.update(object_id=hello["object_id"], prim_id=hello["prim_id"], item_id=hello["item_id"])
            assert note == expected
            item = sim.item(hello["item_id"])
            assert item.content == GOOD and item.compiled_content == GOOD
            assert Path(path + ".log").read_text() == ""
            # a viewer-side save: the inventory update and the running script's output follow
            await a.notification("object.update")
            assert (await a.notification("runtime.debug"))["message"] == "live"

            write(path, BAD, base + 20)
            await sim.live_seen(sid, 3)
            note = await a.notification("script.compiled")
            assert note["success"] is False and note["running"] is True  # the old version runs on
            assert note["diagnostics"][0]["row"] == 2 and note["diagnostics"][0]["format"] == "lsl"
            assert item.content == BAD and item.compiled_content == GOOD
            assert Path(path + ".log").read_text().startswith("(1, ")
            await b.drain(sim)
            assert not b.received("script.compiled")
            assert [m for _n, m, _p in sim.directed_notifications] == ["script.compiled", "script.compiled"]
            assert sim.live_editor(sid).outcomes == ["ignored", "compiled", "failed"]


async def test_nobody_subscribed(start_sim, connect, tmp_path: Path) -> None:
    with trio.fail_after(15):
        # V1: "routed only to the connection subscribed": nothing at all
        sim = await start_sim(viewer_version=1, tmpdir=str(tmp_path / "v1"), live_poll_interval=None)
        (tmp_path / "v1").mkdir()
        hello = by_name(sim, "Hello")
        sid, path = await sim.open_script_editor(hello["item_id"])
        async with connect(sim) as c:
            assert await sim.live_poll(sid)  # appearance
            write(path, GOOD, time.time() + 10)
            assert await sim.live_poll(sid)
            assert sim.item(hello["item_id"]).content == GOOD
            await c.notification("object.update")
            await c.drain(sim)
            assert not c.received("script.compiled")

        # V2, unpublished object or the agent's inventory: nothing; a published object: broadcast
        (tmp_path / "v2").mkdir()
        sim = await start_sim(viewer_version=2, tmpdir=str(tmp_path / "v2"), live_poll_interval=None,
                              world=world_with_inventory())
        lamp = by_name(sim, "Lamp")["item_id"]
        async with connect(sim) as c:
            for item_id in (lamp, INV_ITEM):
                sid, path = await sim.open_script_editor(item_id)
                assert await sim.live_poll(sid)
                write(path, GOOD, time.time() + 10)
                assert await sim.live_poll(sid)
                assert sim.item(item_id).content == GOOD
            await c.drain(sim)
            assert not c.received("script.compiled")
            sid, path = await sim.open_script_editor(hello["item_id"])
            assert await sim.live_poll(sid)
            write(path, GOOD, time.time() + 10)
            assert await sim.live_poll(sid)
            note = await c.notification("script.compiled")
            assert note["script_id"] == sid and note["item_id"] == hello["item_id"]
            assert ("script.compiled", note) in sim.notifications_sent


async def test_whole_second_polling(start_sim, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sim = await start_sim(tmpdir=str(tmp_path), live_poll_interval=None)
        hello = by_name(sim, "Hello")
        sid, path = await sim.open_script_editor(hello["item_id"])
        base = int(os.stat(path).st_mtime)
        assert await sim.live_poll(sid)  # appearance, ignored
        assert not await sim.live_poll(sid)
        write(path, "default { state_entry() { } } // A\n", base + 5)
        assert await sim.live_poll(sid)
        assert sim.item(hello["item_id"]).content.endswith("// A\n")
        # a second write in the same whole second (st_mtime moved 0.7 s): not seen
        write(path, "default { state_entry() { } } // B\n", base + 5.7)
        assert not await sim.live_poll(sid)
        assert sim.item(hello["item_id"]).content.endswith("// A\n")
        # st_mtime a whole second later: seen, and the whole file is read
        write(path, "default { state_entry() { } } // C\n", base + 6)
        assert await sim.live_poll(sid)
        assert sim.item(hello["item_id"]).content.endswith("// C\n")
        assert sim.live_changes(sid) == 3
        # vanishing is a change (nothing to load), appearing again is one too
        os.unlink(path)
        assert await sim.live_poll(sid)
        assert sim.live_editor(sid).outcomes[-1] == "vanished"
        write(path, "default { state_entry() { } } // D\n", base + 6)  # not later, but it appeared
        assert await sim.live_poll(sid)
        assert sim.item(hello["item_id"]).content.endswith("// D\n")
        assert sim.live_editor(sid).outcomes == ["ignored", "compiled", "compiled", "vanished", "compiled"]


async def test_viewer_save_live(start_sim, connect, tmp_path: Path, viewer_version: int) -> None:
    with trio.fail_after(15):
        sim = await start_sim(viewer_version=viewer_version, tmpdir=str(tmp_path), live_poll_interval=None)
        hello = by_name(sim, "Hello")
        sid, path = await sim.open_script_editor(hello["item_id"])
        past = time.time() - 100
        os.utime(path, (past, past))
        assert await sim.live_poll(sid)  # appearance, ignored; the mtime to compare is 100 s ago
        async with connect(sim) as a:
            await a.result("script.subscribe", sub(sid))
            assert await sim.viewer_save_live(sid, GOOD) == []
            assert Path(path).read_text() == GOOD
            assert (await a.notification("script.compiled"))["success"] is True
            # the rewrite moved st_mtime to now: the watcher sees it and ignores it
            assert await sim.live_poll(sid)
            assert sim.live_editor(sid).outcomes == ["ignored", "ignored"]
            rev = sim.item(hello["item_id"]).revision
            write(path, BAD, time.time() + 10)
            assert await sim.live_poll(sid)
            assert sim.item(hello["item_id"]).revision > rev and sim.item(hello["item_id"]).content == BAD
            await a.drain(sim)
            assert len(a.received("script.compiled")) == 2

            # The flag is one-shot: a rewrite that does not move st_mtime past the last version's
            # second is no change, so the next change the watcher sees is the one ignored.
            os.utime(path, (time.time() + 100, time.time() + 100))
            write(path, BAD, time.time() + 100)
            assert await sim.live_poll(sid)  # loads BAD again at +100
            await sim.viewer_save_live(sid, GOOD)
            assert not await sim.live_poll(sid)
            write(path, "default { } // lost\n", time.time() + 101)
            assert await sim.live_poll(sid)
            assert sim.live_editor(sid).outcomes[-1] == "ignored"
            assert sim.item(hello["item_id"]).content == GOOD


async def test_close_script_editor(start_sim, connect, tmp_path: Path, viewer_version: int) -> None:
    with trio.fail_after(15):
        sim = await start_sim(viewer_version=viewer_version, tmpdir=str(tmp_path), live_poll_interval=None)
        s1, p1 = await sim.open_script_editor(by_name(sim, "Hello")["item_id"])
        s2, _p2 = await sim.open_script_editor(by_name(sim, "Controller")["item_id"])
        s3, p3 = await sim.open_script_editor(by_name(sim, "Spinner")["item_id"])
        async with connect(sim) as a, connect(sim) as b:
            await a.result("script.subscribe", sub(s1))
            await a.result("script.subscribe", sub(s2))
            await sim.close_script_editor(s1)
            assert not os.path.exists(p1)
            assert await a.notification("script.unsubscribe") == {"script_id": s1}
            await a.drain(sim)
            assert not a.received("session.disconnect")  # s2 is still held
            assert (await a.result("script.list"))["script_ids"] == [s2, s3]
            await sim.close_script_editor(s3)  # nobody holds it: nothing sent
            assert not os.path.exists(p3)
            await sim.close_script_editor(s2)
            assert await a.notification("script.unsubscribe") == {"script_id": s2}
            if viewer_version == 1:
                assert await a.notification("session.disconnect") == {"reason": 1, "message": "Editor closed"}
                with pytest.raises(ConnectionClosed):
                    await a.ws.get_message()
            else:
                assert (await a.result("system.status")) == {"status": "OK"}
                assert not a.received("session.disconnect")
            await b.drain(sim)
            assert not b.received("script.unsubscribe") and not b.received("session.disconnect")
            assert (await b.result("script.list"))["script_ids"] == []
            with pytest.raises(KeyError):
                await sim.close_script_editor(s1)


async def test_external_editor_runs_with_the_path(start_sim, tmp_path: Path) -> None:
    with trio.fail_after(20):
        out = tmp_path / "argv.json"
        script = tmp_path / "editor.py"
        script.write_text(f"import json, sys\nopen({str(out)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
        cmd = f'{sys.executable} {script} --wait "a b" %s'
        sim = await start_sim(tmpdir=str(tmp_path), live_poll_interval=None, external_editor=cmd)
        sid, path = await sim.open_script_editor(by_name(sim, "Hello")["item_id"])
        launch = sim.editor_launches[-1]
        assert launch.script_id == sid and launch.error is None and launch.process is not None
        assert launch.argv == [sys.executable, str(script), "--wait", "a b", path]
        assert await trio.to_thread.run_sync(launch.process.wait) == 0
        assert json.loads(out.read_text()) == ["--wait", "a b", path]

        # %s appended when absent; a binary that does not exist starts nothing
        assert editor_argv("gedit --new-window", "/t/x.lsl") == ["gedit", "--new-window", "/t/x.lsl"]
        assert editor_argv('e "--file=%s"', "/t/a b.lsl") == ["e", "--file=/t/a b.lsl"]
        sim.external_editor = str(tmp_path / "no-such-editor")
        await sim.open_script_editor(by_name(sim, "Counter")["item_id"])
        assert sim.editor_launches[-1].process is None and sim.editor_launches[-1].error == "editor not found"


async def test_agent_inventory_script(start_sim, connect, tmp_path: Path, viewer_version: int) -> None:
    with trio.fail_after(15):
        world = world_with_inventory()
        assert world.to_json()["agent_inventory"][0]["item_id"] == INV_ITEM
        assert world_from_json(world.to_json()).to_json() == world.to_json()
        sim = await start_sim(viewer_version=viewer_version, tmpdir=str(tmp_path), live_poll_interval=0.02, world=world)
        sid, path = await sim.open_script_editor(INV_ITEM)
        assert sid == hashlib.md5(f"{NULL_UUID}_{INV_ITEM}".encode()).hexdigest()
        assert os.path.basename(path) == f"sl_script_Pocket Script_{sid}.lsl"
        await sim.live_seen(sid, 1)
        async with connect(sim) as c:
            assert await c.result("script.subscribe", sub(sid)) == {
                "script_id": sid, "success": True, "status": 0, "message": "OK",
                "object_id": NULL_UUID, "root_id": NULL_UUID, "item_id": INV_ITEM,
            }
            write(path, BAD, time.time() + 10)
            await sim.live_seen(sid, 2)
            note = await c.notification("script.compiled")
            assert note["script_id"] == sid and note["success"] is False and note["running"] is False
            if viewer_version == 2:  # item_id only: the script is in no object
                assert note["item_id"] == INV_ITEM and "object_id" not in note and "prim_id" not in note
            else:
                assert set(note) == {"script_id", "success", "running", "diagnostics"}
            assert sim.item(INV_ITEM).content == BAD
            await c.drain(sim)
            assert not c.received("object.update")  # in no object: no inventory update
            # the object explorer never reaches it
            code, _msg = await c.error("object.content.get", {"prim_id": NULL_UUID, "item_id": INV_ITEM})
            assert code == -32602


async def test_v2_viewer_save_goes_to_the_subscriber(start_sim, connect, tmp_path: Path) -> None:
    with trio.fail_after(10):
        sim = await start_sim(viewer_version=2, tmpdir=str(tmp_path), live_poll_interval=None)
        hello = by_name(sim, "Hello")
        sid, _ = await sim.open_script_editor(hello["item_id"])
        async with connect(sim) as a, connect(sim) as b:
            await a.result("script.subscribe", sub(sid))
            await sim.viewer_save(hello["item_id"], GOOD)
            assert (await a.notification("script.compiled"))["script_id"] == sid
            await b.drain(sim)
            assert not b.received("script.compiled")
            assert not [n for n in sim.notifications_sent if n[0] == "script.compiled"]


async def test_cli_external_editor_and_open_editor(tmp_path: Path) -> None:
    args = build_parser().parse_args(["--external-editor", "code --wait %s", "--open-editor", "Hello"])
    sim = build_sim(args)
    assert sim.external_editor == "code --wait %s"
    assert resolve_items(sim, args.open_editor) == [by_name(sim, "Hello")["item_id"]]
    with pytest.raises(SystemExit):
        resolve_items(sim, ["no such script"])
