"""Where slfs keeps things on the local disk (XDG base directories)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def state_dir() -> Path:
    """Logs, event logs and the recovery folder: things that must outlive the daemon."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "slfs"


def data_dir() -> Path:
    """The local overlay and the trash."""
    return _xdg("XDG_DATA_HOME", ".local/share") / "slfs"


def runtime_dir() -> Path:
    """Control sockets and the registry of running mounts."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isdir(base):
        return Path(base) / "slfs"
    return Path(f"/tmp/slfs-{os.getuid()}")


def mount_key(mountpoint: str | os.PathLike[str]) -> str:
    return hashlib.sha1(os.fsencode(os.path.realpath(mountpoint))).hexdigest()[:16]


def ensure(path: Path, mode: int = 0o700) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    return path
