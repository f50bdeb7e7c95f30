"""The programs slfs starts for the viewer's editor commands: the user's editor and the desktop
notifier. Argument vectors only, never a shell; what to run and on which path is decided in
model/editor_commands.py (a path inside the mount, a line number, the user's template).
"""

from __future__ import annotations

import html
import logging
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import trio

from ..protocol.text import clean, one_line
from ..world.open_cmd import TEMPLATE

log = logging.getLogger(__name__)

MAX_LINE = 10_000_000  # no script is longer (a script is at most 256 KiB of source)
MAX_NOTE = 1000  # characters of a notification's text
NOTIFY_TIMEOUT = 10.0  # notify-send returns at once unless the bus hangs
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


async def run_editor(argv: list[str]) -> None:
    """Run the editor (an argument vector, never a shell) until it exits; OSError when it cannot start."""
    log.info("editor.open_file: running %s", shlex.join(one_line(a, 300) for a in argv))
    await trio.run_process(argv, check=False, stdin=subprocess.DEVNULL, capture_stdout=True, capture_stderr=True)
