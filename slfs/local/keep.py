"""Copies kept on the local disk: the recovery folder (content the viewer did not take) and the
trash (items deleted in-world).

Written off the trio thread: a slow or full disk must never stall the session or the kernel's
requests. A copy that cannot be written (ENOSPC, EROFS, EACCES on the state dir) is a logged error
and a status line, never an exception that ends the mount; the caller learns it (None) and says so
in its own error.

A copy is named `{time}-{item path with / as __}`. In-world names are data from the network: an
item path is up to three names of 255 bytes each, any Unicode. So a name that is too long for the
file system, or that had to be changed to be a safe file name (control characters, lone
surrogates), is cut on a UTF-8 boundary to a readable prefix plus `~` and a digest of the path, and
the full path is kept beside it in `NAME.meta.json`. A sidecar rather than an xattr: the folders are
plain files people look at, copy and back up, and a sidecar survives `cp`, tar and every file
system (tmpfs had no user xattrs before Linux 6.6).
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import time
from pathlib import Path

import attrs
import trio

from .. import paths
from ..world.names import encodable

log = logging.getLogger(__name__)

RECOVERY = "recovery"
TRASH = "trash"

NAME_MAX = 255  # bytes of one file name (Linux, every file system slfs's folders live on)
META_SUFFIX = ".meta.json"
# A copy's name before a `.N` of a second copy in the same second and the sidecar's suffix: the
# three together stay within NAME_MAX.
NAME_BUDGET = NAME_MAX - len(META_SUFFIX) - len(".99999")
DIGEST_HEX = 16
# What a file name people list must not hold: C0 and C1 controls and DEL (a name printed by `ls`
# must not drive the terminal; NUL cannot be in a name at all).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f]")


def folder_of(kind: str) -> Path:
    return (paths.state_dir() if kind == RECOVERY else paths.data_dir()) / kind


def copy_name(stamp: str, item_path: str) -> tuple[str, bool]:
    """The file name of a copy of `item_path` taken at `stamp`, and whether it says the path plainly
    (False: it was cut or cleaned, and the sidecar holds the path)."""
    plain = f"{stamp}-{item_path.replace('/', '__') or 'unnamed'}"
    clean = _UNSAFE.sub("_", encodable(plain))
    raw = clean.encode("utf-8")
    if clean == plain and len(raw) <= NAME_BUDGET:
        return plain, True
    tail = "~" + hashlib.sha256(item_path.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_HEX]
    head = raw[:NAME_BUDGET - len(tail)].decode("utf-8", "ignore")  # a cut character is dropped whole
    return head + tail, False


def _create(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _write_new(folder: Path, name: str, data: bytes, meta: dict[str, object] | None = None) -> Path:
    """Write `data` to a file of its own under `folder` (never over another copy), and `meta`, when
    given, to its `.meta.json` sidecar. Both are written or neither is left behind."""
    paths.ensure(folder)
    n = 1
    while True:
        target = folder / (name if n == 1 else f"{name}.{n}")
        n += 1
        try:
            fd = _create(target)
        except FileExistsError:
            continue
        made = [(fd, target)]
        try:
            if meta is not None:
                side = target.with_name(target.name + META_SUFFIX)
                try:
                    made.append((_create(side), side))
                except FileExistsError:
                    # Another item's name may look like this copy's sidecar: take the next number.
                    os.close(fd)
                    os.unlink(target)
                    continue
                _write_all(made[1][0], (json.dumps({**meta, "file": target.name}, indent=1) + "\n").encode())
            _write_all(fd, data)
        except BaseException:
            for f, p in made:
                os.close(f)
                os.unlink(p)
            raise
        for f, _p in made:
            os.close(f)
        return target


def probe(folder: Path, size: int) -> None:
    """Raise the OSError a copy of `size` bytes into `folder` would meet now: a folder that cannot
    be made (a file in its place), a read-only or unwritable folder, a full disk. Writes nothing
    that stays (an unnamed O_TMPFILE file, space reserved by fallocate, then closed)."""
    paths.ensure(folder)
    try:
        fd = os.open(folder, os.O_WRONLY | os.O_TMPFILE | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise
        # A file system without O_TMPFILE: permission and free space, as far as they can be seen.
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder)) from None
        st = os.statvfs(folder)
        if st.f_bavail * st.f_frsize < size:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder)) from None
        return
    try:
        os.posix_fallocate(fd, 0, max(size, 1))
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            raise
    finally:
        os.close(fd)


def kept_clause(target: str | None, noun: str = "content") -> str:
    """How an error message says where the content it did not save went: "your content is in
    PATH", or, when the recovery copy failed as well, that it did (the log says why)."""
    return f"your {noun} is in {target}" if target is not None else "the recovery copy failed too (see the log)"


def _holds(path: Path, data: bytes) -> bool:
    """Whether the copy at `path` is still there and holds `data` (it may have been moved, removed
    or edited since it was made)."""
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


@attrs.frozen
class TextCopy:
    """Where a text a save did not land is kept (KeptCopies.keep_text)."""

    path: Path | None  # the copy that holds it; None when none was needed or the disk refused it
    made: bool = False  # written now (False: an earlier copy of the same text holds it)
    inworld: bool = False  # the text is the one in-world (what the file was read from): nothing to keep


class KeptCopies:
    """The recovery and trash copies of texts, on disk (one per distinct text and item)."""

    def __init__(self) -> None:
        self.last_recovery = ""
        self.kept = 0  # recovery copies made this run
        self.failures = 0
        self.last_failure = ""
        # The recovery copies made this run, by (item id or path, digest of the text): the same text
        # failing again (an editor's fsync, then its close) is kept once.
        self._texts: dict[tuple[str, str], Path] = {}

    def _failed(self, kind: str, item_path: str, size: int, why: str, exc: OSError) -> None:
        self.failures += 1
        self.last_failure = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {kind} copy of {item_path} failed: {exc}"
        log.error("%s: could not keep %d bytes of %s in the %s folder (%s): %s", kind, size,
                  item_path, kind, why, exc)

    async def keep(self, kind: str, item_path: str, data: bytes, why: str) -> Path | None:
        """Keep a copy; its path, or None when the disk refused (logged, counted)."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        name, plain = copy_name(stamp, item_path)
        meta: dict[str, object] | None = None
        if not plain:
            meta = {"path": item_path, "kind": kind, "reason": why, "time": stamp, "bytes": len(data)}
        try:
            target = await trio.to_thread.run_sync(_write_new, folder_of(kind), name, data, meta)
        except OSError as exc:
            self._failed(kind, item_path, len(data), why, exc)
            return None
        if kind == RECOVERY:
            self.last_recovery = str(target)
            self.kept += 1
        log.info("%s: kept %d bytes of %s in %s (%s)", kind, len(data), item_path, target, why)
        return target

    async def keep_text(self, key: str, item_path: str, data: bytes, why: str, *,
                        inworld: tuple[bytes | None, ...] = ()) -> TextCopy:
        """Keep a text of `key` (an item's id, or its path when there is no item) that a save did
        not land: one copy per distinct text. A text equal to one of `inworld` (what the item holds
        in-world, what the file was read from: an editor restoring the original after its own write
        failed) is not a text of the user's to recover and gets no copy; the same text failing
        again names the copy made of it before, when that still holds it. `last_recovery` names
        the copy of the user's text kept last."""
        if any(data == known for known in inworld if known is not None):
            log.info("recovery: %s failed with the text it holds in-world (%d bytes); nothing to keep",
                     item_path, len(data))
            return TextCopy(None, inworld=True)
        digest = hashlib.sha256(data).hexdigest()
        earlier = self._texts.get((key, digest))
        if earlier is not None and await trio.to_thread.run_sync(_holds, earlier, data):
            self.last_recovery = str(earlier)
            log.info("recovery: the same text of %s failed again; it is in %s already", item_path, earlier)
            return TextCopy(earlier)
        target = await self.keep(RECOVERY, item_path, data, why)
        if target is not None:
            self._texts[(key, digest)] = target
        return TextCopy(target, made=target is not None)

    async def check(self, kind: str, item_path: str, size: int, why: str) -> OSError | None:
        """Whether a copy of `size` bytes could be kept now (None), else the error (logged, counted):
        an rm asks before it answers, so a trash that cannot take the copy fails the rm itself."""
        try:
            await trio.to_thread.run_sync(probe, folder_of(kind), size)
        except OSError as exc:
            self._failed(kind, item_path, size, why, exc)
            return exc
        return None
