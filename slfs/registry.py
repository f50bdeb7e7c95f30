"""The registry of running mounts: one JSON file per mount under the runtime directory.

Kept apart from the daemon so the CLI verbs can find mounts without importing the FUSE code.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from pathlib import Path
from typing import Any

from . import jsontext, paths


def registry_path(mountpoint: str) -> Path:
    return paths.runtime_dir() / "mounts" / f"{paths.mount_key(mountpoint)}.json"


def daemon_alive(pid: int) -> bool:
    """Whether our daemon `pid` still runs. A pid another user's process holds (EPERM) is not
    ours: the daemon runs as the user who mounted."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def remove_dead_entry(mountpoint: str) -> bool:
    """Remove the registry file of `mountpoint` when its daemon is gone (killed with SIGKILL, so it
    could not remove it itself), or it is unreadable. True when a file was removed."""
    p = registry_path(mountpoint)
    try:
        entry = jsontext.loads(p.read_text())
        pid = int(entry["pid"])
    except FileNotFoundError:
        return False
    except (OSError, ValueError, KeyError, TypeError):
        pid = 0
    if pid > 0 and daemon_alive(pid):
        return False
    p.unlink(missing_ok=True)
    return True


def read_registry() -> list[dict[str, Any]]:
    """Running mounts: {pid, mountpoint, endpoint, socket, started}; entries of dead daemons are
    skipped."""
    out = []
    folder = paths.runtime_dir() / "mounts"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            entry = jsontext.loads(p.read_text())
            alive = daemon_alive(int(entry["pid"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if alive and isinstance(entry, dict):
            out.append(entry)
    return out


def _endpoint_key(endpoint: str) -> str:
    """One key per viewer listener: `localhost` is the loopback address the viewer listens on."""
    host, _, port = endpoint.rpartition(":")
    host = host.strip("[]").lower()
    return f"{'127.0.0.1' if host == 'localhost' else host}:{port}"


class EndpointTaken(Exception):
    """Another running daemon of this user holds the viewer endpoint (its registry entry, or None
    while it is still starting)."""

    def __init__(self, endpoint: str, holder: dict[str, Any] | None) -> None:
        self.endpoint, self.holder = endpoint, holder
        where = (f"at {holder.get('mountpoint')} (pid {holder.get('pid')})" if holder is not None
                 else "by another slfs mount that is starting")
        hint = f"; unmount it first: slfs umount {holder.get('mountpoint')}" if holder is not None else ""
        super().__init__(f"the viewer at {endpoint} is already mounted {where}: one mount per viewer "
                         f"(two would save over each other's edits){hint}")


def claim_endpoint(endpoint: str) -> int:
    """Hold the viewer endpoint for this daemon's life: an flock on a file per endpoint, which the
    kernel releases however the daemon ends (kill -9 too), so a second mount of the same viewer
    is refused, naming the first, and two mounts starting at once cannot both pass. Returns the
    lock's file descriptor (closed at exit). Raises EndpointTaken. (A G1 viewer also refuses two
    connections at once: its challenge file is shared, research/viewer-source.md section 8.)"""
    key = _endpoint_key(endpoint)
    folder = paths.ensure(paths.runtime_dir(create=True) / "mounts")
    name = hashlib.sha1(key.encode()).hexdigest()[:16]
    fd = os.open(folder / f"endpoint-{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        holder = next((e for e in read_registry() if _endpoint_key(str(e.get("endpoint", ""))) == key), None)
        raise EndpointTaken(endpoint, holder) from None
    except OSError:
        os.close(fd)
        raise
    return fd


def _unescape_mount_field(field: str) -> str:
    """/proc/self/mounts writes a space, tab, newline and backslash in a path as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def our_fuse_mounts(mounts_file: str = "/proc/self/mounts") -> list[str]:
    """The mountpoints of this user's slfs mounts the kernel has (`fuse.slfs`, user_id ours)."""
    out = []
    try:
        with open(mounts_file) as f:
            lines = f.readlines()
    except OSError:
        return []
    for line in lines:
        fields = line.split()
        if len(fields) < 4 or fields[2] != "fuse.slfs":
            continue
        if f"user_id={os.getuid()}" in fields[3].split(","):
            out.append(_unescape_mount_field(fields[1]))
    return out


def stale_mounts() -> list[dict[str, Any]]:
    """This user's slfs mounts the kernel still has whose daemon is gone (killed with SIGKILL, or
    crashed: its registry file names a dead pid): {mountpoint, pid}. Requests to them fail with
    ENOTCONN until they are unmounted. A mount with no registry file here is not counted: it may
    be another session's (another XDG_RUNTIME_DIR), or a daemon that is still starting."""
    mounted = set(our_fuse_mounts())
    out: list[dict[str, Any]] = []
    folder = paths.runtime_dir() / "mounts"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            entry = jsontext.loads(p.read_text())
            pid, mountpoint = int(entry["pid"]), str(entry["mountpoint"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if mountpoint in mounted and not daemon_alive(pid):
            out.append({"mountpoint": mountpoint, "pid": pid})
    return out


def stale_message(entry: dict[str, Any]) -> str:
    mountpoint, pid = entry["mountpoint"], entry["pid"]
    return (f"{mountpoint}: stale mount: its daemon (pid {pid}) is gone, so every request to it fails "
            f"with 'Transport endpoint is not connected'; clear it with: slfs umount {mountpoint}  "
            f"(or: fusermount3 -u {mountpoint}), then mount again")
