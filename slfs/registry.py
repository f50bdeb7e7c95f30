"""The registry of running mounts: one JSON file per mount under the runtime directory.

Kept apart from the daemon so the CLI verbs can find mounts without importing the FUSE code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import paths


def registry_path(mountpoint: str) -> Path:
    return paths.runtime_dir() / "mounts" / f"{paths.mount_key(mountpoint)}.json"


def read_registry() -> list[dict[str, Any]]:
    """Running mounts: {pid, mountpoint, endpoint, socket, started}; entries of dead daemons are
    skipped."""
    out = []
    folder = paths.runtime_dir() / "mounts"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            entry = json.loads(p.read_text())
            os.kill(int(entry["pid"]), 0)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out
