"""`slfs top`'s pure parts: the rows a listing makes and their order, what each event changes, the
filter, the counts and header, the compile cell's words (slfs/cli/top/model.py)."""

from __future__ import annotations

from typing import Any

from slfs.cli.human import event_colour, event_message
from slfs.cli.top.model import TopModel, compile_text, event_compile

M = "/m"


def script(rel: str, state: str = "running", last: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": "script", "path": f"{M}/{rel}", "state": state, "last_compile": last}


def listing() -> list[dict[str, Any]]:
    return [
        {"kind": "object", "path": f"{M}/House"},
        {"kind": "prim", "path": f"{M}/House/Door@1"},
        script("House/Door@1/Door.lsl"),
        script("House/Main.lsl", "stopped"),
        {"kind": "notecard", "path": f"{M}/House/Notes"},
        {"kind": "object", "path": f"{M}/cube"},
        script("cube/a.luau", "faulted", {"compiled": False, "errors": 2, "note": "",
                                          "first": {"row": 3, "column": 1, "level": "error", "message": "bad"}}),
        script("cube/b.lsl", "running", {"compiled": True, "errors": 0}),
    ]


def model() -> TopModel:
    m = TopModel(M)
    assert m.load(listing()) is True
    return m


def test_rows_objects_then_their_own_scripts_then_prims() -> None:
    m = model()
    assert m.order == ["cube", "cube/a.luau", "cube/b.lsl", "House", "House/Main.lsl", "House/Door@1",
                       "House/Door@1/Door.lsl"]
    assert "House/Notes" not in m.rows  # not a script
    door = m.rows["House/Door@1/Door.lsl"]
    assert door.cells()[0] == "    Door.lsl" and door.kind == "script" and door.state == "running"
    assert m.rows["House/Door@1"].cells() == ("  Door@1", "", "", "", "")


def test_compile_cells() -> None:
    m = model()
    assert m.rows["cube/a.luau"].compile == "2 errors: 3:1: bad" and m.rows["cube/a.luau"].compiled is False
    assert m.rows["cube/b.lsl"].compile == "ok"
    assert m.rows["House/Main.lsl"].compile == "" and m.rows["House/Main.lsl"].compiled is None
    first = {"row": 5, "column": 27, "message": "Syntax   error\n"}
    assert compile_text(False, 1, first) == "1 error: 5:27: Syntax error"
    assert compile_text(False, 0, None, "the viewer failed the save") == "failed: the viewer failed the save"
    assert compile_text(False, 1, {"row": 4, "message": "luau"}) == "1 error: 4: luau"
    assert event_compile({"compiled": False, "diagnostics": [
        {"level": "warning", "row": 1, "column": 1, "message": "w"},
        {"level": "error", "row": 9, "column": 2, "message": "e"}]}) == (False, "1 error: 9:2: e")


def test_a_listing_with_the_same_rows_is_no_rebuild_and_keeps_runtime_lines() -> None:
    m = model()
    m.apply({"seq": 1, "type": "runtime.debug", "path": "cube/b.lsl", "message": "hi", "time": 100.0})
    again = listing()
    again[-1]["state"] = "stopped"
    assert m.load(again) is False and m.changed == {"cube/b.lsl"}
    b = m.rows["cube/b.lsl"]
    assert (b.state, b.output, b.output_at) == ("stopped", "hi", 100.0)
    assert m.load([*listing(), script("cube/c.lsl")]) is True


def test_events_change_the_rows_they_name() -> None:
    m = model()
    change = m.apply({"seq": 5, "type": "script.state", "path": "House/Main.lsl", "state": "running", "was": "stopped"})
    assert change.rows == {"House/Main.lsl"} and not change.resync and m.rows["House/Main.lsl"].state == "running"
    change = m.apply({"seq": 6, "type": "compile", "path": "cube/b.lsl", "compiled": False,
                      "diagnostics": [{"level": "error", "row": 2, "column": 3, "message": "oops"}]})
    assert change.rows == {"cube/b.lsl"} and m.rows["cube/b.lsl"].compile == "1 error: 2:3: oops"
    change = m.apply({"seq": 7, "type": "runtime.error", "path": "cube/a.luau", "message": "boom",
                      "error": "Math Error", "line": 3, "time": 50.0})
    a = m.rows["cube/a.luau"]
    assert change.rows == {"cube/a.luau"} and a.output == "boom: Math Error (line 3)" and a.output_error
    # an object's line (a viewer that does not say which script spoke) goes on the object's row
    assert m.apply({"seq": 8, "type": "runtime.debug", "path": "House", "message": "x"}).rows == {"House"}
    assert m.cursor == 8 and len(m.events) == 4


def test_events_that_change_the_rows_set_ask_the_listing_again() -> None:
    m = model()
    for seq, e in enumerate([{"type": "publish", "object_id": "x", "name": "New"}, {"type": "unpublish"},
                             {"type": "create", "path": "cube/new.lsl"}, {"type": "delete", "path": "cube/b.lsl"},
                             {"type": "script.state", "path": "cube/unknown.lsl", "state": "running"}], start=1):
        assert m.apply({"seq": seq, **e}).resync, e
    assert m.apply({"seq": 10, "type": "connected"}).status
    assert m.apply({"seq": 11, "type": "disconnected", "reason": "gone"}).status


def test_events_seen_already_and_past_states_are_not_applied() -> None:
    m = model()
    assert m.apply({"seq": 3, "type": "runtime.debug", "path": "cube/b.lsl", "message": "new"}).rows
    dup = m.apply({"seq": 3, "type": "runtime.debug", "path": "cube/b.lsl", "message": "dup"})
    assert dup.rows == frozenset() and not dup.fresh
    assert m.rows["cube/b.lsl"].output == "new" and len(m.events) == 1
    # the backlog read after the listing is older than the listing: only its runtime lines count
    m.apply({"seq": 4, "type": "script.state", "path": "cube/b.lsl", "state": "stopped"}, past=True)
    m.apply({"seq": 5, "type": "compile", "path": "cube/b.lsl", "compiled": False}, past=True)
    assert m.rows["cube/b.lsl"].state == "running" and m.rows["cube/b.lsl"].compile == "ok"
    m.apply({"seq": 6, "type": "runtime.debug", "path": "cube/b.lsl", "message": "old"}, past=True)
    assert m.rows["cube/b.lsl"].output == "old"


def test_filter_keeps_the_folders_above_a_match_and_what_a_matching_folder_holds() -> None:
    m = model()
    assert m.visible("") == m.order
    assert m.visible("door.LSL") == ["House", "House/Door@1", "House/Door@1/Door.lsl"]
    assert m.visible("cube") == ["cube", "cube/a.luau", "cube/b.lsl"]
    assert m.visible("Door@1") == ["House", "House/Door@1", "House/Door@1/Door.lsl"]
    assert m.visible("nothing") == []


def test_counts_and_header() -> None:
    m = model()
    m.status = {"state": "connected", "viewer": "Second Life", "viewer_version": "7.2",
                "viewer_generation": "G2-G4 (these announce the same features)", "agent": "Res"}
    first, counts = m.header()
    assert first == "slfs top  /m  connected  viewer: Second Life 7.2 (G2-G4)  as Res"
    assert counts == "2 objects, 4 scripts: 2 running, 1 stopped, 1 faulted, 1 failing compile"
    m.status = {"state": "disconnected", "state_detail": "viewer closed\nthe connection"}
    assert m.header()[0] == "slfs top  /m  disconnected (viewer closed the connection)"


def test_script_state_events_in_words() -> None:
    e = {"type": "script.state", "path": "cube/b.lsl", "state": "stopped", "was": "running"}
    assert event_message(e) == "stopped (was running)"
    assert event_message({**e, "was": None}) == "stopped"
    assert event_colour(e) == "yellow" and event_colour({**e, "state": "faulted"}) == "red"
