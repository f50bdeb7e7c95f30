"""The viewer's editor commands start programs on the peer's word (slfs/model/editor_commands.py,
slfs/local/launch.py): the path
opened must resolve inside the mount, the argument vector keeps it a file name, the line is an
integer, and notifications are one at a time, bounded and free of terminal escapes."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import attrs
import pytest
import trio

from slfs.event_types import SlfsEvent
from slfs.local import launch
from slfs.local.launch import MAX_LINE, MAX_NOTE, Notifier, editor_argv, notify_argv
from slfs.model.editor_commands import EditorCommands, Refused, line_number, resolve_in_mount
from slfs.model.options import Options, parse_options
from slfs.winpaths import PathTranslator, detect
from slfs.world.open_cmd import check_template

P = "/home/u/sl/Hello Cube/Hello.lsl"


def _capture_info(caplog: pytest.LogCaptureFixture) -> None:
    """What the commands decide (model/editor_commands.py) and what runs (local/launch.py) log."""
    for name in ("slfs.model.editor_commands", "slfs.local.launch"):
        caplog.set_level(logging.INFO, name)


# --- {line} -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "line"), [(7, 7), (1, 1), (MAX_LINE, MAX_LINE), (7.0, 7), ("12", 12), (None, 1)])
def test_a_line_number_is_taken(value: Any, line: int) -> None:
    assert line_number(value) == (line, None)


@pytest.mark.parametrize("value", [True, False, 0, -5, -5.0, 1e20, MAX_LINE + 1, 2.5, float("nan"), float("inf"),
                                   "1; rm -rf", "+q", "-5", "", "1e3", " 7", "\uff17", "123456789", [1], {"l": 1}])
def test_anything_else_is_line_1_with_a_complaint(value: Any) -> None:
    line, complaint = line_number(value)
    assert line == 1 and complaint is not None and "line 1" in complaint


# --- the template and the argument vector --------------------------------------------------------

@pytest.mark.parametrize(("template", "argv"), [
    ("vim", ["vim", "--", P]),
    ("vim +{line} {path}", ["vim", "+7", "--", P]),
    ("/usr/bin/nvim -es +{line}", ["/usr/bin/nvim", "-es", "+7", "--", P]),
    ("emacs +{line}", ["emacs", "+7", "--", P]),
    ("nano +{line},1 {path}", ["nano", "+7,1", "--", P]),
    ("vim -- {path}", ["vim", "--", P]),  # the user's own `--` is not doubled
    ("vim {path} +{line}", ["vim", P, "+7"]),  # not last: `--` would make "+7" a file name
    ("code -g {path}:{line}", ["code", "-g", f"{P}:7"]),  # begins with "/": never an option
    ("my-editor --line {line}", ["my-editor", "--line", "7", P]),  # unknown editor: appended as is
    ("'my editor' --new", ["my editor", "--new", P]),
])
def test_editor_argv(template: str, argv: list[str]) -> None:
    assert editor_argv(check_template(template), P, 7) == argv


def test_the_path_is_substituted_once_whole() -> None:
    """A name holding "{line}" or shell syntax stays exactly the name (one pass, no shell)."""
    odd = "/m/Box/a {line} $(touch x); b.lsl"
    assert editor_argv(check_template("vim +{line} {path}"), odd, 3) == ["vim", "+3", "--", odd]
    assert editor_argv(check_template("code -g {path}:{line}"), odd, 3) == ["code", "-g", f"{odd}:3"]


@pytest.mark.parametrize(("path", "line"), [("Hello.lsl", 1), ("+!touch /tmp/pwned", 1), ("-c!sh", 1),
                                             ("//server/x", 1), (P, 0), (P, True), (P, MAX_LINE + 1)])
def test_editor_argv_takes_only_an_absolute_path_and_a_line(path: str, line: Any) -> None:
    with pytest.raises(ValueError):
        editor_argv(["vim"], path, line)


@pytest.mark.parametrize("template", ["vim -c 'e {path}'", "vim +{path}", "vim --file={path}", "vim {path}{path}",
                                      "{path}", "{line} x", "''"])
def test_a_template_that_would_hide_the_path_in_an_option_is_refused(template: str) -> None:
    with pytest.raises(ValueError):
        check_template(template)
    with pytest.raises(ValueError, match="open_cmd"):
        parse_options([f"open_cmd={template}"])


def test_a_good_template_is_an_option() -> None:
    assert parse_options(["open_cmd=code -g {path}:{line}"]).open_cmd == "code -g {path}:{line}"


# --- which path is opened -------------------------------------------------------------------------

@pytest.fixture
def tree(tmp_path: Path) -> SimpleNamespace:
    mnt = tmp_path / "mnt"
    (mnt / "Box").mkdir(parents=True)
    (mnt / ".slfs" / "live").mkdir(parents=True)
    (mnt / "Box" / "Note.lsl").write_text("x\n")
    (mnt / ".slfs" / "live" / "Script.lsl").write_text("x\n")
    outside = tmp_path / "mnt2"  # shares a prefix with the mount, is not in it
    outside.mkdir()
    (outside / "secret").write_text("s\n")
    (mnt / "Box" / ".out").symlink_to(outside / "secret")
    (mnt / "Box" / ".in").symlink_to("Note.lsl")
    temp = tmp_path / "viewer-tmp"
    temp.mkdir()
    (temp / "sl_script_Script_0123456789abcdef0123456789abcdef.lsl").write_text("x\n")
    return SimpleNamespace(mnt=mnt, outside=outside, temp=temp,
                           temp_file=temp / "sl_script_Script_0123456789abcdef0123456789abcdef.lsl",
                           live=mnt / ".slfs" / "live" / "Script.lsl")


def test_paths_inside_the_mount_open_as_their_real_path(tree: SimpleNamespace) -> None:
    mnt = str(tree.mnt)
    real = os.path.realpath(mnt)
    assert resolve_in_mount(f"{mnt}/Box/Note.lsl", mnt, {}) == f"{real}/Box/Note.lsl"
    assert resolve_in_mount(f"{mnt}/Box/.in", mnt, {}) == f"{real}/Box/Note.lsl"  # a link inside
    assert resolve_in_mount(f"{mnt}/.slfs/live/Script.lsl", mnt, {}) == f"{real}/.slfs/live/Script.lsl"
    assert resolve_in_mount(f"{mnt}/Box/../Box/Note.lsl", mnt, {}) == f"{real}/Box/Note.lsl"


@pytest.mark.parametrize(("where", "why"), [
    ("/etc/passwd", "outside the mount"),
    ("{mnt}/Box/.out", "outside the mount"),  # a symlink in the overlay to a file outside
    ("{mnt}/../mnt2/secret", "outside the mount"),
    ("{outside}/secret", "outside the mount"),  # a sibling sharing the mount's prefix
    ("{mnt}/Box/nothing.lsl", "cannot be resolved"),
    ("{mnt}/Box/a\0b", "cannot be resolved"),
    ("Box/Note.lsl", "not an absolute path"),
    ("+!touch /tmp/pwned", "not an absolute path"),
    ("-c!sh", "not an absolute path"),
    ("{temp}/sl_script_Script_0123456789abcdef0123456789abcdef.lsl", "outside the mount"),  # not subscribed
])
def test_anything_else_is_refused(tree: SimpleNamespace, where: str, why: str) -> None:
    path = where.format(mnt=tree.mnt, outside=tree.outside, temp=tree.temp)
    with pytest.raises(Refused, match=why):
        resolve_in_mount(path, str(tree.mnt), {})


def test_no_mount_opens_nothing(tree: SimpleNamespace) -> None:
    with pytest.raises(Refused, match="no mount"):
        resolve_in_mount(f"{tree.mnt}/Box/Note.lsl", "", {})


def test_a_live_sync_temp_file_opens_as_its_live_file(tree: SimpleNamespace) -> None:
    live = {str(tree.temp_file): str(tree.live)}
    assert resolve_in_mount(str(tree.temp_file), str(tree.mnt), live) == os.path.realpath(tree.live)
    # its live file outside the mount (it never is) would still be refused
    with pytest.raises(Refused, match="outside"):
        resolve_in_mount(str(tree.temp_file), str(tree.mnt), {str(tree.temp_file): str(tree.outside / "secret")})


# --- the commands, with a host that records ---------------------------------------------------------

@attrs.define
class Host:
    mountpoint: str
    options: Options = attrs.field(factory=lambda: Options(open_cmd="vim +{line}"))
    paths: PathTranslator = attrs.field(factory=lambda: PathTranslator(detect("off", None, None)))
    live: Any = attrs.field(factory=lambda: SimpleNamespace(by_id={}, abspath=lambda ls: ls.live))
    events: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    errors: list[str] = attrs.field(factory=list)
    nursery: trio.Nursery | None = None

    def spawn(self, fn: Any, *args: Any) -> None:
        assert self.nursery is not None
        self.nursery.start_soon(fn, *args)

    def emit(self, event: SlfsEvent) -> None:
        self.events.append((event.type, {k: v for k, v in event.to_json().items() if k != "type"}))

    def note_error(self, message: str) -> None:
        self.errors.append(message)


async def open_files(host: Host, *requests: dict[str, Any]) -> list[list[str]]:
    ran: list[list[str]] = []
    ed = EditorCommands(host)

    async def run_editor(argv: list[str]) -> None:
        ran.append(argv)

    ed.run_editor = run_editor  # type: ignore[method-assign]
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host.nursery = nursery
            for params in requests:
                assert ed.on_command("editor.open_file", params)
                await trio.sleep(0.05)  # one at a time: the events come in order
    return ran


async def test_open_file_runs_the_editor_only_inside_the_mount(tree: SimpleNamespace,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    host = Host(str(tree.mnt))
    real = os.path.realpath(tree.mnt)
    _capture_info(caplog)
    ran = await open_files(host,
                           {"path": f"{tree.mnt}/Box/Note.lsl", "line": 2},
                           {"path": "/etc/passwd"},
                           {"path": f"{tree.mnt}/Box/.out", "line": 3},
                           {"path": "+!touch /tmp/pwned"},
                           {"path": r"C:\Users\x\a.lsl"},
                           {"path": f"{tree.mnt}/Box/Note.lsl", "line": True},
                           {"path": 7})
    assert ran == [["vim", "+2", "--", f"{real}/Box/Note.lsl"], ["vim", "+1", "--", f"{real}/Box/Note.lsl"]]
    kinds = {k for k, _ in host.events}
    assert kinds == {"viewer.open_file"}
    fields = [f for _, f in host.events]
    assert fields[0] == {"path": f"{tree.mnt}/Box/Note.lsl", "line": 2, "opened": f"{real}/Box/Note.lsl"}
    assert [("error" in f) for f in fields] == [False, True, True, True, True, False, True]
    assert len(host.errors) == 5 and all("editor.open_file" in e and "refused" in e for e in host.errors)
    assert "outside the mount" in host.errors[0] and "outside the mount" in host.errors[1]
    assert "not an absolute path" in host.errors[2]
    assert "line True is not a line number" in caplog.text


async def test_open_file_without_an_editor_only_tells(tree: SimpleNamespace) -> None:
    host = Host(str(tree.mnt), options=Options())
    assert await open_files(host, {"path": f"{tree.mnt}/Box/Note.lsl"}, {"path": "/etc/passwd"}) == []
    assert ["error" in f for _, f in host.events] == [False, True]


async def test_open_file_of_a_live_temp_file_opens_the_live_file(tree: SimpleNamespace) -> None:
    ls = SimpleNamespace(temp_path=str(tree.temp_file), live=str(tree.live), gone=None)
    host = Host(str(tree.mnt))
    host.live.by_id["0123456789abcdef0123456789abcdef"] = ls
    ran = await open_files(host, {"path": str(tree.temp_file), "line": 4})
    assert ran == [["vim", "+4", "--", os.path.realpath(tree.live)]]
    ls.gone = "closed"  # an ended subscription: its temp file is just a file outside the mount
    assert await open_files(host, {"path": str(tree.temp_file)}) == []


# --- notifications -----------------------------------------------------------------------------

HOSTILE = "\x1b]52;c;cm0gLXJmIH4=\x07copied \x1b[2Jcleared \x9b31m\x1b]0;title\x1b\\ <a href='x'>&</a>"


def test_notify_argv_is_bounded_clean_and_after_dashdash() -> None:
    argv = notify_argv("/usr/bin/notify-send", "error", HOSTILE + "A" * 5000)
    assert argv[:5] == ["/usr/bin/notify-send", "-u", "critical", "--", "Second Life"]
    text = argv[5]
    assert not any(c in text for c in "\x1b\x07\x9b\x00")
    assert text.startswith("copied cleared  &lt;a href='x'&gt;&amp;&lt;/a&gt;")
    assert len(text) <= MAX_NOTE + 20  # the escaped markup is the only growth
    assert notify_argv("n", "warn", "-u")[1:] == ["-u", "normal", "--", "Second Life", "-u"]
    for level in ("info", "bogus", None, 3, ["error"]):
        assert notify_argv("n", level, "m")[2] == "low"


class Recording(Notifier):
    def __init__(self, spawn: Any) -> None:
        super().__init__(spawn)
        self.running = 0
        self.most = 0
        self.texts: list[str] = []

    async def _run(self, level: Any, message: Any) -> None:
        self.running += 1
        self.most = max(self.most, self.running)
        self.texts.append(message)
        await trio.sleep(0.2)
        self.running -= 1


async def test_one_notifier_at_a_time_and_the_latest_waits(caplog: pytest.LogCaptureFixture) -> None:
    _capture_info(caplog)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            n = Recording(nursery.start_soon)
            for i in range(50):
                n.show("info", f"message {i}")
                await trio.sleep(0)
    assert n.most == 1
    # The first (or one of the first, as trio schedules) and the latest; the others dropped and counted.
    assert n.texts[-1] == "message 49" and len(n.texts) <= 3
    assert n.dropped == 50 - len(n.texts)
    assert f"({n.dropped} in all); showing the latest" in caplog.text


async def test_show_message_logs_clean_text_and_notifies(tree: SimpleNamespace, caplog: pytest.LogCaptureFixture,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    host = Host(str(tree.mnt))
    shown: list[tuple[Any, Any]] = []
    _capture_info(caplog)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            host.nursery = nursery
            ed = EditorCommands(host)

            async def run(level: Any, message: Any) -> None:
                shown.append((level, message))

            monkeypatch.setattr(ed.notifier, "_run", run)
            ed.on_command("editor.show_message", {"message": HOSTILE, "level": "bogus"})
    assert shown == [("info", HOSTILE)]  # notify_argv cleans it
    assert host.events == [("viewer.message", {"level": "info", "message": HOSTILE})]  # JSON keeps it exact
    assert "\x1b" not in caplog.text and "viewer says: copied cleared" in caplog.text


async def test_no_notify_send_is_logged_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(launch.shutil, "which", lambda _name: None)
    _capture_info(caplog)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            n = Notifier(nursery.start_soon)
            for _ in range(3):
                n.show("info", "m")
                await trio.sleep(0.01)
    assert caplog.text.count("not installed") == 1 and n.shown == 0
