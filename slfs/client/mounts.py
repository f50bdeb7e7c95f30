"""Which mount a command acts on, found in the registry of running mounts, and starting one in the
background when a verb that needs the viewer finds none (`slfs edit`, `slfs open-uri`).

Nothing here prints: what a user should hear of goes to the caller's `note` (this layer's words)
and `echo` (the started `slfs mount`'s own output line).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..protocol.constants import DEFAULT_PORT
from ..registry import read_registry, stale_message, stale_mounts
from .client_error import ClientError, NoMount
from .connection import CONNECT_TIMEOUT, ControlClient

START_WAIT = 30.0  # how long a mount started here has to reach the viewer

Note = Callable[[str], None]


def _quiet(message: str) -> None:
    pass


def default_port() -> int:
    """The viewer port `slfs mount` uses without --port: $SLFS_PORT, else the viewer's default."""
    try:
        return int(os.environ.get("SLFS_PORT", DEFAULT_PORT))
    except ValueError:
        return DEFAULT_PORT


def _inside(path: str, mountpoint: str) -> bool:
    mountpoint = mountpoint.rstrip("/") or "/"
    return path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/")


def _containing(path: str, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    hits = [e for e in entries if _inside(path, str(e.get("mountpoint", "")))]
    return max(hits, key=lambda e: len(str(e["mountpoint"]))) if hits else None


def _lookup(path: str, entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The mount holding `path`: by its absolute path first (no lookups in the mount), then by the
    real path (a symlink to a mount, such as ~/sl -> /mnt/sl)."""
    hit = _containing(os.path.abspath(path), entries)
    if hit is None:
        try:
            hit = _containing(os.path.realpath(path), entries)
        except OSError:
            hit = None
    return hit


def find_mount(mount: str | None = None, path: str | None = None,
               entries: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The registry entry a command acts on: `--mount MOUNT`, else the mount holding PATH, else the
    mount holding the current directory, else the only running mount."""
    entries = read_registry() if entries is None else entries
    if mount is not None:
        hit = _lookup(mount, entries)
        if hit is None:
            _refuse_stale(mount)
            raise NoMount(f"{mount}: not an slfs mount (running: "
                          f"{', '.join(str(e['mountpoint']) for e in entries) or 'none'})", "ENOENT")
        return hit
    if path is not None:
        hit = _lookup(path, entries)
        if hit is not None:
            return hit
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = None
    if cwd is not None:
        hit = _containing(cwd, entries)
        if hit is not None:
            return hit
    for where in (path, cwd):
        if where is not None:
            _refuse_stale(where)
    if not entries:
        stale = stale_mounts()
        if stale:
            raise NoMount("no slfs mount is running; " + "; ".join(stale_message(e) for e in stale), "ENOTCONN")
        raise NoMount("no slfs mount is running", "ENOENT")
    if len(entries) > 1:
        raise NoMount(f"several mounts are running: {', '.join(str(e['mountpoint']) for e in entries)}; "
                      "use --mount", "EINVAL")
    return entries[0]


def _refuse_stale(path: str) -> None:
    """A path in a mount whose daemon was killed: say so, and how to clear it (not 'no mount')."""
    stale = stale_mounts()
    hit = _lookup(path, stale) if stale else None
    if hit is not None:
        raise NoMount(stale_message(hit), "ENOTCONN")


def mount_path(entry: dict[str, Any], arg: str) -> str:
    """How to name `arg` to the daemon: its absolute path when it is inside the mount, else the
    argument as given (a relative one is then taken relative to the mount's root)."""
    mountpoint = str(entry["mountpoint"])
    absolute = os.path.abspath(arg)
    if _inside(absolute, mountpoint):
        return absolute
    try:
        real = os.path.realpath(arg)
    except OSError:
        real = ""
    if real and _inside(real, mountpoint):
        return real
    return arg


def connect(entry: dict[str, Any], *, connect_timeout: float = CONNECT_TIMEOUT) -> ControlClient:
    sock = entry.get("socket")
    if not sock:
        raise ClientError(f"{entry.get('mountpoint')}: the daemon has no control socket (an older slfs?)")
    return ControlClient(str(sock), connect_timeout=connect_timeout)


def mount_for_port(port: int) -> dict[str, Any] | None:
    """A running mount of the viewer on this machine's `port`, if any."""
    for entry in read_registry():
        host, _, p = str(entry.get("endpoint", "")).rpartition(":")
        if p == str(port) and host in ("127.0.0.1", "localhost", "::1", "[::1]"):
            return entry
    return None


def start_mount(port: int, connect_wait: float = START_WAIT, *, echo: Note = _quiet) -> dict[str, Any]:
    """`slfs mount --port PORT ~/sl` in the background (~/sl-PORT when ~/sl is taken); returns its
    registry entry once the daemon answers on its control socket. The daemon unmounts and exits
    when no viewer connects within `connect_wait` (a URI's port may have none of ours)."""
    home = Path.home()
    taken = {str(e.get("mountpoint")) for e in read_registry()}
    mountpoint = home / "sl"
    if str(mountpoint) in taken or os.path.realpath(mountpoint) in taken or os.path.ismount(mountpoint):
        mountpoint = home / f"sl-{port}"
    mountpoint.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([sys.executable, "-m", "slfs", "mount", "--port", str(port),
                          "-o", f"connect_wait={connect_wait:g}", str(mountpoint)],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=START_WAIT + 5, check=False)
    if res.returncode != 0:
        raise ClientError(f"could not mount {mountpoint} for port {port}: "
                          f"{(res.stderr or res.stdout).strip() or f'exit status {res.returncode}'}")
    echo(res.stdout.strip())
    real = os.path.realpath(mountpoint)
    entry = next((e for e in read_registry() if e.get("mountpoint") == real), None)
    if entry is None:
        raise ClientError(f"{mountpoint}: mounted, but the daemon is not in the registry")
    return entry


def wait_connected(entry: dict[str, Any], timeout: float) -> None:
    """Return once the mount's daemon is connected to its viewer; ClientError after `timeout` s."""
    deadline = time.monotonic() + timeout
    state = "unknown"
    while time.monotonic() < deadline:
        try:
            with connect(entry) as c:
                status = c.request("status", _timeout=max(0.5, deadline - time.monotonic()))
            state = str(status.get("state"))
            if state == "connected":
                return
            detail = status.get("state_detail") or status.get("last_error")
            if detail:
                state = f"{state} ({detail})"
        except ClientError as exc:
            state = exc.message
        time.sleep(0.1)
    raise ClientError(f"{entry.get('mountpoint')}: not connected to the viewer on {entry.get('endpoint')} "
                      f"within {timeout:g} s (state: {state})", "ETIMEDOUT")


def viewer_mount(mount: str | None = None, *, note: Note = _quiet, echo: Note = _quiet) -> dict[str, Any]:
    """The mount a verb started by the viewer uses (`slfs edit`; `slfs mcp --auto-mount`): --mount,
    else as the other verbs find it, else (several running) the one of the default port, else
    (none running) a new one of the default port at ~/sl, as `slfs open-uri` does; connected to
    the viewer."""
    if mount:
        entry = find_mount(mount)
    else:
        try:
            entry = find_mount()
        except NoMount as exc:
            port = default_port()
            found = mount_for_port(port)
            if found is not None:
                entry = found
            elif exc.code == "ENOENT":
                note(f"no slfs mount is running: mounting one for port {port}")
                entry = start_mount(port, echo=echo)
            else:
                raise
    wait_connected(entry, START_WAIT)
    return entry
