"""The registry of running mounts: one JSON file per mount under the runtime directory.

Kept apart from the daemon so the CLI verbs can find mounts without importing the FUSE code.
"""

from __future__ import annotations

import os
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
