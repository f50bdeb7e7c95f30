"""`slfs top --once`: one frame as text, its columns and cuts, plain or coloured (slfs/cli/top/frame.py)."""

from __future__ import annotations

from slfs.cli.top.frame import COMPILE_MAX, cut, render, widths
from slfs.cli.top.model import TopModel


def model() -> TopModel:
    m = TopModel("/m")
    m.status = {"state": "connected", "viewer": "Sim", "viewer_version": "1", "agent": "Res"}
    m.load([
        {"kind": "object", "path": "/m/Cube"},
        {"kind": "script", "path": "/m/Cube/Hello.lsl", "state": "running",
         "last_compile": {"compiled": True, "errors": 0}},
        {"kind": "script", "path": "/m/Cube/Broken.lsl", "state": "stopped",
         "last_compile": {"compiled": False, "errors": 1,
                          "first": {"row": 5, "column": 27, "level": "error", "message": "Syntax error"}}},
    ])
    m.apply({"seq": 1, "type": "runtime.debug", "path": "Cube/Hello.lsl", "message": "Hello!", "time": 1e9})
    return m


def test_plain_frame() -> None:
    text = render(model(), width=120)
    assert "\x1b[" not in text
    lines = text.splitlines()
    assert lines[0] == "slfs top  /m  connected  viewer: Sim 1  as Res"
    assert lines[1].startswith("1 object, 2 scripts: 1 running, 1 stopped")
    head = lines[3]
    assert head.split() == ["NAME", "STATE", "COMPILE", "AT", "LAST", "OUTPUT"]
    assert lines[4] == "Cube"
    broken, hello = lines[5], lines[6]
    assert broken.split()[:3] == ["Broken.lsl", "stopped", "1"] and "1 error: 5:27: Syntax error" in broken
    assert hello.startswith("  Hello.lsl   running  ok") and hello.endswith("Hello!")
    # the columns line up under their headings
    assert hello.index("running") == head.index("STATE") and hello.index("ok") == head.index("COMPILE")
    assert hello.index("Hello!") == head.index("LAST OUTPUT")
    assert "events" in lines and any("runtime.debug  Hello!" in ln for ln in lines)
    assert lines[-1].startswith("keys: ") and all(len(ln) <= 120 for ln in lines)


def test_colour_frame_paints_states_and_compiles() -> None:
    text = render(model(), width=120, colour=True)
    assert "\x1b[32mrunning\x1b[0m" in text and "\x1b[33mstopped\x1b[0m" in text
    assert "\x1b[31m1 error: 5:27: Syntax error\x1b[0m" in text and "\x1b[32mok\x1b[0m" in text


def test_narrow_frames_cut_with_an_ellipsis() -> None:
    text = render(model(), width=60)
    assert all(len(ln) <= 60 for ln in text.splitlines()), text
    assert "\u2026" in text
    assert cut("abcdef", 4) == "abc\u2026" and cut("abc", 3) == "abc" and cut("abc", 0) == ""


def test_widths_give_the_compile_column_room_and_the_output_the_rest() -> None:
    m = model()
    name, state, comp, at, rest = widths(m, m.order, 160)
    assert name == len("  Broken.lsl") and state == 7 and at == 8 and comp == COMPILE_MAX
    assert name + state + comp + at + rest + 8 == 160


def test_filter_and_empty_frames() -> None:
    assert "nothing matches 'zzz'" in render(model(), needle="zzz")
    empty = TopModel("/m")
    assert "no object is published" in render(empty) and "\nnone\n" in render(empty)
