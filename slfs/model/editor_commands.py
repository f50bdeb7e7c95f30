"""The viewer's editor commands: what opening a file and showing a message mean here.

`editor.open_file {path, line?}` and `editor.show_message {message, level?}` (the protocol
document's "known extension commands") are data from whoever is on the viewer's port, and the path
and the message may carry names and text other residents chose. So:

- a path is opened only when it resolves (symlinks followed, `realpath`) to a file inside this
  mount; the editor gets that resolved absolute path, as one whole argument (after `--` where the
  editor takes it: local/launch.py), so it can never be read as an option (`-c`, `+cmd`) or a command;
- `{line}` is an integer in 1..MAX_LINE, anything else is line 1;
- at most one notifier runs at a time, with bounded text free of control characters after `--`.

No caller of the client's `command.execute` was found in the viewer's C++ (viewer-source.md §2), so
what a viewer would name is not known: the only local files a viewer has are its live-sync temp
files in its temp dir (live-sync.md), and one that `.slfs/live/` shows is opened as that live file.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import trio

from .. import event_types as ev
from ..local.launch import MAX_LINE, MAX_NOTE, Notifier, editor_argv, run_editor
from ..protocol.text import one_line
from ..winpaths import WindowsPathError, is_windows_path, match_case
from ..world.open_cmd import check_template

if TYPE_CHECKING:
    from ..winpaths import PathTranslator
    from .live import LiveScripts
    from .options import Options

log = logging.getLogger(__name__)

# How long translating and resolving an editor.open_file path may take (a worker thread: a path can
# lead through a stuck file system, or through a symlink into this mount, which the loop serves).
RESOLVE_TIMEOUT = 10.0

_DIGITS = re.compile(r"[0-9]{1,8}")


class Refused(Exception):
    """A path not opened, and why."""


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


# --- the commands --------------------------------------------------------------------------------

class EditorHost(Protocol):
    options: Options
    paths: PathTranslator
    mountpoint: str
    live: LiveScripts

    def spawn(self, fn: Callable[..., Any], *args: Any) -> None: ...
    def emit(self, event: ev.SlfsEvent, /) -> None: ...
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
        self.host.emit(ev.ViewerMessage(level=level, message=message))
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
        self.host.emit(ev.ViewerOpenFile(path=path, line=line, error=why))

    async def _open(self, given: str, line: int) -> None:
        live = {ls.temp_path: self.host.live.abspath(ls) for ls in self.host.live.by_id.values() if ls.gone is None}
        try:
            real = await self._resolve(given, live)
        except Refused as exc:
            self.refuse(given, line, str(exc))
            return
        self.host.emit(ev.ViewerOpenFile(path=given, line=line, opened=real))
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
        """The user's editor, waited for as a job of the mount."""
        try:
            await run_editor(argv)
        except OSError as exc:
            self.host.note_error(f"open_cmd {argv[0]!r} failed: {exc}")
