"""`slfs edit TEMPFILE`: the viewer's external editor command. It live-syncs the script open in the
viewer's editor (through the mount) and starts the user's editor on the live file; the viewer
starts it without a terminal, so what happens is also written to edit.log."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .. import paths, winpaths
from ..client import ClientError, MountClient, mounts
from ..protocol import constants
from ..world.open_cmd import TEMPLATE
from .output import VerbError, emit_json, err

EDITOR_GRACE = 0.5  # an editor that exits non-zero this soon failed to start
EDIT_LOG_MAX = 1 << 20  # edit.log is moved to edit.log.1 beyond this size


def parse_temp_name(path: str) -> tuple[str | None, str, str]:
    """The viewer's temp file name -> (script name, or None for the fallback name; script_id in lower
    case; extension). VerbError (exit status 2) when the name is not one of the viewer's. The viewer
    under Wine or on Windows (slfs in WSL2) names it by its Windows path: `\\` separates too."""
    base = winpaths.basename(path)
    parsed = constants.parse_temp_name(base)
    if parsed is not None:
        return parsed
    raise VerbError(f"{path}: not a temp file of the viewer's script editor (sl_script_NAME_ID.lsl or .luau, "
                    "ID being 32 hex digits); set the viewer's external editor to: slfs edit \"%s\"", 2)


def edit_log_path() -> Path:
    return paths.state_dir() / "edit.log"


def edit_log(message: str) -> None:
    """A line in edit.log: the viewer starts `slfs edit` without a terminal, so this is where a user
    sees what was started and why no editor window appeared. Never fails."""
    try:
        log = edit_log_path()
        paths.ensure(log.parent)
        try:
            if log.stat().st_size > EDIT_LOG_MAX:
                os.replace(log, log.with_name(log.name + ".1"))
        except FileNotFoundError:
            pass
        with open(log, "a", encoding="utf-8", opener=paths.private_opener) as f:
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} slfs[{os.getpid()}]: {message}\n")
    except OSError:
        pass


def edit_note(message: str) -> None:
    """On standard error and in edit.log."""
    err(message)
    edit_log(message)


def echo(line: str) -> None:
    """A mount started for the viewer says where it is (its own `slfs: mounted ...` line)."""
    print(line, file=sys.stderr)


def editor_argv(path: str, open_cmd: str | None, env: dict[str, str] | None = None) -> tuple[list[str], str]:
    """The argument vector of the user's editor on `path`, and where it came from: the mount's
    `-o open_cmd` (split into words as the daemon does, `{path}` replaced, `{line}` being 1, the path
    appended when no word has `{path}`), else $VISUAL, else $EDITOR (split into words, the path
    appended), else xdg-open. Never a shell command line: the path stays one argument."""
    environ = os.environ if env is None else env
    if open_cmd and open_cmd.strip():
        try:
            words = shlex.split(open_cmd)
        except ValueError as exc:
            raise VerbError(f"-o open_cmd={open_cmd!r}: {exc}") from None
        argv = [TEMPLATE.sub(lambda m: path if m.group(0) == "{path}" else "1", w) for w in words]
        if not any("{path}" in w for w in words):
            argv.append(path)
        return argv, "open_cmd"
    for var in ("VISUAL", "EDITOR"):
        value = environ.get(var, "")
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise VerbError(f"${var}={value!r}: {exc}") from None
        if words:
            return [*words, path], f"${var}"
    return ["xdg-open", path], "xdg-open"


# Editors that draw in the terminal they are started in: without one they hang or quit.
TERMINAL_EDITORS = frozenset({
    "vi", "vim", "vim.basic", "vim.tiny", "view", "nvim", "nvi", "elvis", "vis", "nano", "pico",
    "micro", "joe", "jmacs", "jstar", "jpico", "jed", "ne", "mg", "zile", "hx", "helix", "kak", "mcedit",
    "tilde", "dte", "amp",
})
# (program, how it runs a command): the first installed makes the example.
TERMINALS = (("x-terminal-emulator", "-e"), ("gnome-terminal", "--"), ("konsole", "-e"),
             ("xfce4-terminal", "-x"), ("xterm", "-e"))


def is_terminal_editor(argv: list[str]) -> bool:
    name = os.path.basename(argv[0])
    if name in TERMINAL_EDITORS:
        return True
    # emacs opens a window unless told not to; emacsclient likewise
    return name in ("emacs", "emacsclient") and any(a in ("-nw", "-t", "--tty", "--no-window-system")
                                                     for a in argv[1:])


def terminal_editor_refusal(argv: list[str], source: str, mountpoint: str | None, *, wait: bool) -> str | None:
    """Why the editor from $VISUAL/$EDITOR cannot run here: a terminal editor, and slfs edit has no
    terminal to give it (the viewer starts it without one; without --wait the editor is detached).
    The message says to set the mount's open_cmd and shows one that works: the same editor in a
    terminal window of its own."""
    if source not in ("$VISUAL", "$EDITOR") or not is_terminal_editor(argv):
        return None
    has_terminal = sys.stdin.isatty()
    if wait and has_terminal:
        return None
    terminal, run = next(((t, r) for t, r in TERMINALS if shutil.which(t)), TERMINALS[0])
    example = f"{terminal} {run} {shlex.join(argv[:-1])} {{path}}"
    mount = shlex.quote(mountpoint or os.path.expanduser("~/sl"))
    where = "slfs edit runs without a terminal" if not has_terminal else "slfs edit without --wait detaches it"
    return (f"{source} is {shlex.join(argv[:-1])}, a terminal editor, and {where} (the viewer starts it "
            "without one), so it cannot run: set the mount's open_cmd to start it in a window of its own, "
            f"for example: slfs umount {mount}; slfs mount -o open_cmd={shlex.quote(example)} {mount}"
            + (" (or run slfs edit --wait in a terminal)" if has_terminal else ""))


def _exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _log_tail(log: Path, offset: int, limit: int = 2000) -> str:
    """What the editor wrote to edit.log since `offset`, on one line, shortened."""
    try:
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return text if len(text) <= limit else "..." + text[-limit:]


def run_editor(live: dict[str, Any], out: dict[str, Any], *, wait: bool, json_out: bool) -> int:
    """Start the user's editor on the live file `live["path"]`; print `out["path"]` (or `out` as
    JSON, with "editor" added) once it runs. Without `wait` the editor is detached (its own session,
    stdin from /dev/null, its output appended to edit.log) and this returns at once, or exits 1
    when the editor is not found or exits non-zero within EDITOR_GRACE seconds; with `wait` it runs
    on our terminal and its exit status is returned."""
    argv, source = editor_argv(str(live["path"]), live.get("open_cmd"))
    why = terminal_editor_refusal(argv, source, out.get("mount"), wait=wait)
    if why is not None:
        raise VerbError(why)
    edit_note(f"starting the editor ({source}): {shlex.join(argv)}")
    log = edit_log_path()
    offset: int | None = None  # where the editor's output starts in edit.log
    sink: Any = subprocess.DEVNULL
    if not wait:
        try:
            paths.ensure(log.parent)
            sink = open(log, "ab", opener=paths.private_opener)  # noqa: SIM115 - closed below, the child keeps its copy
            offset = sink.tell()
        except OSError:
            sink = subprocess.DEVNULL
    try:
        if wait:
            # Our stdin and stderr, so a terminal editor works in the terminal slfs edit runs in;
            # stdout too unless it must hold only JSON.
            proc = subprocess.Popen(argv, stdout=2 if json_out else None, close_fds=True)
        else:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, close_fds=True,
                                    start_new_session=True)
    except OSError as exc:
        raise VerbError(f"the editor ({source}) could not be started: {shlex.join(argv)}: "
                        f"{exc.strerror or exc}") from None
    finally:
        if sink is not subprocess.DEVNULL:
            sink.close()
    out["editor"] = {"argv": argv, "source": source, "pid": proc.pid}
    if wait:
        if not json_out:
            print(out["path"], flush=True)
        status = _exit_status(proc.wait())
        out["editor"]["status"] = status
        if status:
            edit_note(f"the editor ({source}) exited with status {status}: {shlex.join(argv)}")
        if json_out:
            emit_json(out)
        return status
    try:
        returncode: int | None = proc.wait(EDITOR_GRACE)
    except subprocess.TimeoutExpired:
        returncode = None
    if returncode:
        tail = _log_tail(log, offset) if offset is not None else ""
        raise VerbError(f"the editor ({source}) exited with status {_exit_status(returncode)} at once: "
                        f"{shlex.join(argv)}" + (f": {tail}" if tail else ""))
    if returncode is None:
        # It outlives us: no zombie is left to reap, and no warning about a child still running.
        proc.returncode = 0
    if json_out:
        emit_json(out)
    else:
        print(out["path"], flush=True)
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    edit_log("slfs edit " + shlex.join([*(["--mount", args.mount] if args.mount else []),
                                        *(["--wait"] if args.wait else []), args.tempfile]))
    try:
        parse_temp_name(args.tempfile)
        # A Windows path (the viewer under Wine, or on Windows with slfs in WSL2) goes to the daemon
        # as the viewer gave it: the daemon translates it with the mount's -o windows_paths options,
        # as it does the handshake's challenge file.
        temp_path = args.tempfile if winpaths.is_windows_path(args.tempfile) else os.path.abspath(args.tempfile)
        entry = mounts.viewer_mount(args.mount, note=edit_note, echo=echo)
        live = MountClient(entry).live_subscribe(temp_path)
        return run_editor(live, {**live, "mount": entry["mountpoint"]}, wait=args.wait, json_out=args.json)
    except (VerbError, ClientError) as exc:
        edit_log(f"error: {exc}")  # run_verb prints it on standard error
        raise
