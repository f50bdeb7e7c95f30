"""The programs the viewer's editor commands start: the user's editor and the desktop notifier.

`editor.open_file {path, line?}` and `editor.show_message {message, level?}` (the protocol
document's "known extension commands") are data from whoever is on the viewer's port, and the path
and the message may carry names and text other residents chose. So:

- a path is opened only when it resolves (symlinks followed, `realpath`) to a file inside this
  mount; the editor gets that resolved absolute path, as one whole argument (after `--` where the
  editor takes it), so it can never be read as an option (`-c`, `+cmd`) or a command;
- `{line}` is an integer in 1..MAX_LINE, anything else is line 1;
- at most one notifier runs at a time, with bounded text free of control characters after `--`.

No caller of the client's `command.execute` was found in the viewer's C++ (viewer-source.md §2), so
what a viewer would name is not known: the only local files a viewer has are its live-sync temp
files in its temp dir (live-sync.md), and one that `.slfs/live/` shows is opened as that live file.
"""

from __future__ import annotations

import html
import logging
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import trio

from ..protocol.text import clean, one_line
from ..winpaths import WindowsPathError, is_windows_path, match_case
from ..world.open_cmd import TEMPLATE, check_template

if TYPE_CHECKING:
    from ..winpaths import PathTranslator
    from .live import LiveScripts
    from .options import Options

log = logging.getLogger(__name__)

MAX_LINE = 10_000_000  # no script is longer (a script is at most 256 KiB of source)
MAX_NOTE = 1000  # characters of a notification's text
NOTIFY_TIMEOUT = 10.0  # notify-send returns at once unless the bus hangs
# How long translating and resolving an editor.open_file path may take (a worker thread: a path can
# lead through a stuck file system, or through a symlink into this mount, which the loop serves).
RESOLVE_TIMEOUT = 10.0
TITLE = "Second Life"
# The protocol document's levels (info, warn, error; newer-viewers.md: the default is info) as
# notify-send's urgencies; anything else is info.
URGENCY = {"info": "low", "warn": "normal", "warning": "normal", "error": "critical"}

# Editors whose command line takes `--` as "only file names follow" (vim/nvim/vi: `--`; emacs:
# startup.el's `--`; nano, micro and the getopt/GOption/QCommandLineParser ones: the parser's end of
# options). Not VS Code (`code -g {path}:{line}`), whose path:line goes where its own parser wants it.
DASHDASH_EDITORS = frozenset({
    "vi", "vim", "nvim", "gvim", "view", "ex", "rvim", "vim.basic", "vim.tiny", "vim.gtk3",
    "emacs", "emacsclient", "nano", "micro", "gedit", "gnome-text-editor", "kate", "kwrite",
    "mousepad", "pluma", "xed", "geany",
})

_DIGITS = re.compile(r"[0-9]{1,8}")


class Refused(Exception):
    """A path not opened, and why."""


# --- the argument vector (the template, -o open_cmd: open_cmd.py) ---------------------------------

def line_number(value: Any) -> tuple[int, str | None]:
    """The line to show (1..MAX_LINE) of what the viewer sent, and a complaint when it was not one:
    an int, an integral float or a string of digits; never a bool (JSON true is not a line)."""
    if value is None:
        return 1, None
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif ((isinstance(value, float) and value.is_integer() and abs(value) <= MAX_LINE)
          or (isinstance(value, str) and _DIGITS.fullmatch(value))):
        number = int(value)
    if number is not None and 1 <= number <= MAX_LINE:
        return number, None
    return 1, f"line {one_line(repr(value), 80)} is not a line number (1..{MAX_LINE:,}); line 1 instead"


def editor_argv(words: list[str], path: str, line: int) -> list[str]:
    """The argument vector of the user's editor on `path` (absolute) at `line`: `{path}` and
    `{line}` replaced in one pass (a file name holding "{line}" stays as it is), the path appended
    when no word has `{path}`, and `--` before a whole-word path that ends the command when the
    program is an editor known to take it and the template has none."""
    if not os.path.isabs(path) or path.startswith("//") or isinstance(line, bool) or not 1 <= line <= MAX_LINE:
        raise ValueError(f"not an absolute path and a line number: {path!r}, {line!r}")
    program = os.path.basename(words[0])
    dashdash = program in DASHDASH_EDITORS and "--" not in words
    if not any("{path}" in w for w in words[1:]):
        words = [*words, "{path}"]
    argv = []
    for i, word in enumerate(words):
        if dashdash and word == "{path}" and i == len(words) - 1:
            argv.append("--")  # only after the last option: `vim {path} +5` would open a file "+5"
        argv.append(TEMPLATE.sub(lambda m: path if m.group(0) == "{path}" else str(line), word) if i else word)
    return argv


# --- which path is opened ---------------------------------------------------------------------------

def resolve_in_mount(path: str, mountpoint: str, live_files: Mapping[str, str]) -> str:
    """The real path to open for the path the viewer named, or Refused. Blocking (it stats through
    the mount): run it in a worker thread.

    `live_files` maps live-sync temp files (local paths) to their files in `.slfs/live/`: the viewer
    naming its own temp file means the script it syncs, which the user edits through the mount (the
    temp file is in a directory the viewer controls, outside the mount)."""
    if not mountpoint:
        raise Refused("no mount to open it in")
    if not os.path.isabs(path):
        raise Refused("not an absolute path")
    try:
        real = os.path.realpath(path, strict=True)
        for temp, live in live_files.items():
            if os.path.realpath(temp) == real:
                log.info("editor.open_file: %s is the live-sync temp file of %s; opening that", path, live)
                real = os.path.realpath(live, strict=True)
                break
        mount = os.path.realpath(mountpoint, strict=True)
    except (OSError, ValueError) as exc:
        raise Refused(f"cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None
    if real != mount and os.path.commonpath([real, mount]) != mount:
        raise Refused(f"resolves to {real}, outside the mount {mount}")
    return real


# --- notifications ---------------------------------------------------------------------------------

def notification_text(message: Any) -> str:
    """A message as a notification's body: at most MAX_NOTE characters, no escape sequence or
    control character (newlines kept), and markup characters escaped (notification servers read
    the body as markup: Desktop Notifications Specification, "body-markup", so a `<a href>` a
    script chose would be a link)."""
    return html.escape(clean(str(message), MAX_NOTE, keep_newlines=True), quote=False)


def notify_argv(program: str, level: Any, message: Any) -> list[str]:
    """notify-send's argument vector: the urgency from a fixed set, the text after `--` (GOption,
    which notify-send parses with, ends options there: g_option_context_parse)."""
    urgency = URGENCY.get(level, "low") if isinstance(level, str) else "low"
    return [program, "-u", urgency, "--", TITLE, notification_text(message)]


class Notifier:
    """At most one notifier process at a time. While one runs, only the latest message waits: a
    burst (a reset of 50 scripts) shows its first and its last message, not 50 bubbles, and the
    latest is the one still true. The ones dropped are counted and logged."""

    def __init__(self, spawn: Callable[..., Any], program: str = "notify-send") -> None:
        self._spawn = spawn
        self._program = program
        self._waiting: tuple[Any, Any] | None = None
        self._busy = False
        self._dropped_now = 0  # since the last one shown
        self.dropped = 0
        self.shown = 0
        self._missing_logged = False

    def show(self, level: Any, message: Any) -> None:
        if self._waiting is not None:
            self._dropped_now += 1
            self.dropped += 1
        self._waiting = (level, message)
        if not self._busy:
            self._busy = True
            self._spawn(self._drain)

    async def _drain(self) -> None:
        try:
            while self._waiting is not None:
                level, message = self._waiting
                self._waiting = None
                if self._dropped_now:
                    log.info("notifications: %d dropped while one was showing (%d in all); showing the latest",
                             self._dropped_now, self.dropped)
                    self._dropped_now = 0
                await self._run(level, message)
        finally:
            self._busy = False

    async def _run(self, level: Any, message: Any) -> None:
        exe = shutil.which(self._program)
        if exe is None:
            if not self._missing_logged:
                log.info("%s is not installed: viewer messages are only in the log and the events", self._program)
                self._missing_logged = True
            return
        self.shown += 1
        with trio.move_on_after(NOTIFY_TIMEOUT):  # cancelling kills it
            try:
                await trio.run_process(notify_argv(exe, level, message), check=False, stdin=subprocess.DEVNULL,
                                       capture_stdout=True, capture_stderr=True)
            except OSError as exc:
                log.info("%s failed: %s", self._program, exc)


# --- the commands --------------------------------------------------------------------------------

class EditorHost(Protocol):
    options: Options
    paths: PathTranslator
    mountpoint: str
    live: LiveScripts

    def spawn(self, fn: Callable[..., Any], *args: Any) -> None: ...
    def emit(self, kind: str, **fields: Any) -> None: ...
    def note_error(self, message: str) -> None: ...


class EditorCommands:
    """What the workspace does with the viewer's `editor.*` commands."""

    def __init__(self, host: EditorHost) -> None:
        self.host = host
        self.notifier = Notifier(host.spawn)

    def on_command(self, command: str, params: dict[str, Any]) -> bool:
        """Handle an editor command; False when it is none of ours."""
        if command == "editor.show_message":
            self.show_message(params)
        elif command == "editor.open_file":
            self.open_file(params)
        else:
            return False
        return True

    def show_message(self, params: dict[str, Any]) -> None:
        raw_level, message = params.get("level"), str(params.get("message", ""))
        level = raw_level if raw_level in ("info", "warn", "error") else "warn" if raw_level == "warning" else "info"
        log.log(logging.ERROR if level == "error" else logging.WARNING if level == "warn" else logging.INFO,
                "viewer says: %s", one_line(message, MAX_NOTE))
        self.host.emit("viewer.message", level=level, message=message)
        self.notifier.show(level, message)

    def open_file(self, params: dict[str, Any]) -> None:
        given, raw_line = params.get("path"), params.get("line")
        line, complaint = line_number(raw_line)
        if complaint is not None:
            log.warning("editor.open_file: %s", complaint)
        if not isinstance(given, str) or not given:
            self.refuse(str(given), line, "no path given")
            return
        self.host.spawn(self._open, given, line)

    def refuse(self, path: str, line: int, why: str) -> None:
        # note_error logs it too (a warning) and puts it in `.slfs/status`'s last_error.
        self.host.note_error(f"editor.open_file {one_line(path, 200)}: refused: {one_line(why, 500)}")
        self.host.emit("viewer.open_file", path=path, line=line, error=why)

    async def _open(self, given: str, line: int) -> None:
        live = {ls.temp_path: self.host.live.abspath(ls) for ls in self.host.live.by_id.values() if ls.gone is None}
        try:
            real = await self._resolve(given, live)
        except Refused as exc:
            self.refuse(given, line, str(exc))
            return
        self.host.emit("viewer.open_file", path=given, line=line, opened=real)
        if self.host.options.open_cmd:
            await self.run_editor(editor_argv(check_template(self.host.options.open_cmd), real, line))

    async def _resolve(self, given: str, live_files: Mapping[str, str]) -> str:
        """The viewer's path translated (a Windows one: winpaths, which never looks into this mount)
        and resolved inside the mount, in a worker thread under RESOLVE_TIMEOUT: never a lookup
        from the loop's thread, which alone answers the kernel's requests about this mount."""

        def translate_and_resolve() -> str:
            try:
                path = self.host.paths.to_local(given)
            except WindowsPathError as exc:
                raise Refused(str(exc)) from None
            if is_windows_path(given) and self.host.paths.in_mount(path):
                # Windows ignores case; the mount's part was kept as given: matched here, in this thread.
                mount = self.host.paths.mountpoint
                path = match_case(mount, os.path.relpath(path, mount))
            return resolve_in_mount(path, self.host.mountpoint, live_files)

        with trio.move_on_after(RESOLVE_TIMEOUT):
            return await trio.to_thread.run_sync(translate_and_resolve, abandon_on_cancel=True)
        raise Refused(f"not resolved within {RESOLVE_TIMEOUT:g} s")

    async def run_editor(self, argv: list[str]) -> None:
        """Run the editor (an argument vector, never a shell), waiting for it as a job of the mount."""
        log.info("editor.open_file: running %s", shlex.join(one_line(a, 300) for a in argv))
        try:
            await trio.run_process(argv, check=False, stdin=subprocess.DEVNULL, capture_stdout=True,
                                   capture_stderr=True)
        except OSError as exc:
            self.host.note_error(f"open_cmd {argv[0]!r} failed: {exc}")
