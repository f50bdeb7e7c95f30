"""Copies kept on the local disk: the recovery folder (content the viewer did not take) and the
trash (items deleted in-world).

Written off the trio thread: a slow or full disk must never stall the session or the kernel's
requests. A copy that cannot be written (ENOSPC, EROFS, EACCES on the state dir) is a logged error
and a status line, never an exception that ends the mount; the caller learns it (None) and says so
in its own error.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import trio

from .. import paths

log = logging.getLogger(__name__)

RECOVERY = "recovery"
TRASH = "trash"


def folder_of(kind: str) -> Path:
    return (paths.state_dir() if kind == RECOVERY else paths.data_dir()) / kind


def _write_new(folder: Path, name: str, data: bytes) -> Path:
    """Write `data` to a file of its own under `folder` (never over another copy)."""
    paths.ensure(folder)
    target = folder / name
    n = 1
    while True:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            break
        except FileExistsError:
            n += 1
            target = folder / f"{name}.{n}"
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(target)
        raise
    os.close(fd)
    return target


class Keeper:
    def __init__(self) -> None:
        self.last_recovery = ""
        self.failures = 0
        self.last_failure = ""

    async def keep(self, kind: str, item_path: str, data: bytes, why: str) -> Path | None:
        """Keep a copy; its path, or None when the disk refused (logged, counted)."""
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{item_path.replace('/', '__') or 'unnamed'}"
        try:
            target = await trio.to_thread.run_sync(_write_new, folder_of(kind), name, data)
        except OSError as exc:
            self.failures += 1
            self.last_failure = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {kind} copy of {item_path} failed: {exc}"
            log.error("%s: could not keep %d bytes of %s in the %s folder (%s): %s", kind, len(data),
                      item_path, kind, why, exc)
            return None
        if kind == RECOVERY:
            self.last_recovery = str(target)
        log.info("%s: kept %d bytes of %s in %s (%s)", kind, len(data), item_path, target, why)
        return target
