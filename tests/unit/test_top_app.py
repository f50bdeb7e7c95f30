"""`slfs top`'s live view driven headless by Textual's pilot, no mount behind it (the test puts in
the feed's queue what its threads would): the filter and its keys, the cursor on the first matching script, keys that
need a script, events changing only their rows' cells, a listing rebuilding the table, q's status.
The view against a real mount, in tmux: tests/e2e/test_top.py."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from slfs.cli.top.app import TopApp
from slfs.cli.top.model import TopModel
from slfs.client import MountClient

ENTRY = {"mountpoint": "/m", "socket": "/nonexistent/slfs-top-test.sock"}


def listing() -> list[dict[str, Any]]:
    return [{"kind": "object", "path": "/m/Cube"},
            {"kind": "script", "path": "/m/Cube/Hello.lsl", "state": "running"},
            {"kind": "script", "path": "/m/Cube/Other.lsl", "state": "stopped"},
            {"kind": "object", "path": "/m/Box"}]


def drive(script: Callable[[TopApp, Any], Awaitable[None]]) -> TopApp:
    model = TopModel("/m")
    model.load(listing())
    app = TopApp(MountClient(ENTRY), model)
    app.feed.start = lambda: None  # type: ignore[method-assign]  # the test is the feed: no threads

    async def main() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            await script(app, pilot)
    asyncio.run(main())
    return app


def cell(app: TopApp, rel: str, column: str) -> str:
    return str(app.table().get_cell(rel, column))


def test_filter_narrows_puts_the_cursor_on_the_script_and_escape_clears_it() -> None:
    async def script(app: TopApp, pilot: Any) -> None:
        assert app.shown == ["Box", "Cube", "Cube/Hello.lsl", "Cube/Other.lsl"]
        await pilot.press("slash", *"hello", "enter")
        assert app.shown == ["Cube", "Cube/Hello.lsl"] and app.selected() == "Cube/Hello.lsl"
        assert app.focused is app.table()
        assert "filter: hello" in str(app.query_one("#message").render())
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert app.needle == "" and len(app.shown) == 4 and app.focused is app.table()
        await pilot.press("q")
    assert drive(script).return_code == 0


def test_keys_that_need_a_script_say_so_on_an_object() -> None:
    async def script(app: TopApp, pilot: Any) -> None:
        assert app.selected() == "Box"
        for key in ("s", "r", "x", "e"):
            await pilot.press(key)
            assert "select a script first" in str(app.query_one("#message").render()), key
        await pilot.press("j", "j")
        assert app.selected() == "Cube/Hello.lsl"
        await pilot.press("k")
        assert app.selected() == "Cube"
        await pilot.press("q")
    drive(script)


def test_events_update_their_rows_and_a_listing_rebuilds_the_table() -> None:
    async def script(app: TopApp, pilot: Any) -> None:
        app.feed.out.put(("event", {"seq": 1, "type": "script.state", "path": "Cube/Other.lsl",
                                    "state": "running", "was": "stopped"}))
        app.feed.out.put(("event", {"seq": 2, "type": "runtime.debug", "path": "Cube/Hello.lsl",
                                    "message": "hi there", "time": 1.0}))
        app.drain()
        assert cell(app, "Cube/Other.lsl", "state") == "running"
        assert cell(app, "Cube/Hello.lsl", "output") == "hi there"
        assert "2 running, 0 stopped" in str(app.query_one("#header").render())
        app.feed.out.put(("listing", [*listing(), {"kind": "script", "path": "/m/Box/New.lsl", "state": "stopped"}]))
        app.drain()
        assert app.shown == ["Box", "Box/New.lsl", "Cube", "Cube/Hello.lsl", "Cube/Other.lsl"]
        assert cell(app, "Cube/Hello.lsl", "output") == "hi there"  # kept through the listing
        await pilot.press("q")
    drive(script)


def test_a_refusal_is_shown() -> None:
    async def script(app: TopApp, pilot: Any) -> None:
        app.feed.out.put(("note", "stop Cube/Hello.lsl: the viewer cannot do that"))
        app.drain()
        assert "the viewer cannot do that" in str(app.query_one("#message").render())
        await pilot.press("q")
    drive(script)
