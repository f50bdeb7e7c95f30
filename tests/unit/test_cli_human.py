"""The lines `slfs events` and `slfs status` print for people, and errors said once (cli/human.py)."""

from __future__ import annotations

import io
import time

import pytest

from slfs.cli import human
from slfs.cli.output import PrintableStream, err


def test_event_line_has_local_time_path_kind_and_message() -> None:
    at = time.time()
    line = human.event_line({"seq": 3, "time": at, "type": "runtime.debug", "path": "Hello Cube/Hello.lsl",
                             "object_name": "Hello Cube", "message": "hi\nthere"})
    assert line == f"{time.strftime('%H:%M:%S', time.localtime(at))}  Hello Cube/Hello.lsl  runtime.debug  hi there"


def test_event_line_of_an_older_day_has_its_date() -> None:
    at = time.time() - 3 * 86400
    assert human.event_line({"time": at, "type": "disconnected", "reason": "viewer closed"}) == (
        f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(at))}  disconnected  viewer closed")


@pytest.mark.parametrize("event,message", [
    ({"type": "connected", "viewer": "Second Life Release", "version": "7.1"}, "to Second Life Release 7.1"),
    ({"type": "compile", "compiled": True, "diagnostics": []}, "ok"),
    ({"type": "compile", "compiled": False, "diagnostics": [
        {"row": 5, "column": 27, "level": "ERROR", "message": "syntax error"},
        {"row": 9, "column": 1, "level": "ERROR", "message": "other"}]}, "failed, 2 errors: 5:27: syntax error"),
    ({"type": "runtime.error", "message": "Script run-time error", "error": "Stack-Heap Collision", "line": 12},
     "Script run-time error: Stack-Heap Collision (line 12)"),
    ({"type": "script.state_requested", "action": "stop"}, "stop"),
    ({"type": "refused", "errno": "EACCES", "message": "no modify permission"}, "EACCES no modify permission"),
    ({"type": "live.save", "name": "x.lsl", "bytes": 12, "script_id": "abc"}, "name=x.lsl bytes=12"),
])
def test_event_message(event: dict[str, object], message: str) -> None:
    assert human.event_message(event) == message


def test_event_line_is_coloured_only_when_asked_and_never_lets_network_escapes_through() -> None:
    e = {"time": time.time(), "type": "runtime.error", "path": "A/b.lsl", "message": "\x1b]0;owned\x07boom"}
    plain = human.event_line(e)
    assert "\x1b" not in plain and "boom" in plain
    coloured = human.event_line(e, colour=True)
    assert "\x1b[31mruntime.error\x1b[0m" in coloured
    assert "\x1b]" not in coloured  # only our own colour codes


def test_object_summary_counts_scripts_per_object() -> None:
    root = "/m"
    entries = [
        {"kind": "object", "path": "/m/Cube"},
        {"kind": "script", "path": "/m/Cube/a.lsl", "state": "running", "last_compile": {"compiled": True}},
        {"kind": "script", "path": "/m/Cube/b.lsl", "state": "stopped",
         "last_compile": {"compiled": False, "errors": 2}},
        {"kind": "script", "path": "/m/Cube/Door@1/c.luau", "state": "faulted", "last_compile": None},
        {"kind": "notecard", "path": "/m/Cube/Notes"},
        {"kind": "object", "path": "/m/Empty"},
    ]
    lines = human.object_summary(entries, root)
    assert lines == [
        "  Cube   3 scripts: 1 running, 1 stopped, 1 faulted; failing compile: b.lsl (2 errors)",
        "  Empty  no scripts",
    ]


@pytest.mark.parametrize("message,said", [
    ("stop /m/x.lsl: stop /m/x.lsl: not a script", "stop /m/x.lsl: not a script"),
    ("stop /m/x.lsl: /m/x.lsl: not a script", "stop /m/x.lsl: not a script"),
    ("slfs: no slfs mount is running", "no slfs mount is running"),
    ("run /m/x.lsl: ENOENT: no such file", "run /m/x.lsl: ENOENT: no such file"),
    ("a: b: c", "a: b: c"),
])
def test_said_once(message: str, said: str) -> None:
    assert human.said_once(message) == said


def test_err_says_each_prefix_once(capsys: pytest.CaptureFixture[str]) -> None:
    err("stop X: stop X: the viewer did not confirm")
    assert capsys.readouterr().err == "slfs: stop X: the viewer did not confirm\n"


def test_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert human.use_colour(PrintableStream(Tty()))  # type: ignore[arg-type]
    assert not human.use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not human.use_colour(Tty()) and human.is_terminal(Tty())
