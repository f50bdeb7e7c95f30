"""The viewer's live-sync temp files, read and written only when they are the viewer's (issue 21).

A temp file's path comes from the peer on the viewer's port (script.list's `temp_dir`, or the
path `slfs edit` is given by whatever started it), and the temp dir is often shared (/tmp). So
before live sync reads or writes one, it must be:

- directly in the viewer's temp dir (the viewer writes `<temp dir>/sl_script_...`: live-sync.md),
  its parent compared after realpath, so `temp_dir/../x` or a symlinked parent is outside;
- a regular file (not a FIFO or device), not a symlink (lstat; opened with O_NOFOLLOW), owned by
  us, with one link (a hard link would make our write land in, or our read come from, a file
  elsewhere).

The temp dir itself (and every directory above it) is one no other user can change under us:
owned by us or root, and writable by nobody else unless sticky (as /tmp is). Every operation goes
through a descriptor of that checked directory, so a directory swapped after the check is not
followed. A refusal is an FsError: ELOOP for a symlink (what open(2) with O_NOFOLLOW says), EPERM
for any other file or directory that is not the viewer's, EFBIG for a file larger than any script.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
import tempfile

import attrs

from ..world.fs_errors import FsError

log = logging.getLogger(__name__)

# A script holds at most 262,144 bytes in-world (naming_rules.SCRIPT_MAX); a temp file may hold
# more (an envelope, Firestorm's unprocessed source), but never this much.
MAX_TEMP_BYTES = 1 << 20
# Linux viewers put their temp files in /tmp (LLDir_Linux sets mTempDir to "/tmp"); forks and the
# research page (live-sync.md: "$TMPDIR or /tmp/") also use $TMPDIR, which gettempdir() reads.
LINUX_TEMP_DIRS = ("/tmp",)

Stamp = tuple[int, int]  # (st_mtime_ns, st_size)


@attrs.frozen
class TempDirs:
    """Where a subscription's temp file may be: realpath'd directories, and what said so."""

    dirs: tuple[str, ...]
    source: str
    windows_drives: str | None = None  # WSL2's drvfs root: see check_dir


def _uid() -> int:
    return os.geteuid()


def _others_may_write(st: os.stat_result) -> bool:
    """Someone else can add, remove or rename entries: world-writable, or group-writable by a
    group that is not ours (with user-private groups, umask 002 makes our own dirs g+w)."""
    if st.st_mode & stat.S_ISVTX:
        return False  # sticky: only an entry's owner may remove or rename it
    if st.st_mode & stat.S_IWOTH:
        return True
    return bool(st.st_mode & stat.S_IWGRP) and st.st_gid != os.getegid()


def _on_drives(real: str, windows_drives: str | None) -> bool:
    if not windows_drives:
        return False
    root = os.path.realpath(windows_drives)
    return real == root or real.startswith(root.rstrip("/") + "/")


def check_dir(path: str, windows_drives: str | None = None) -> str:
    """`path` realpath'd, when it is a directory the viewer's temp files may be in: ours, or root's
    and sticky (/tmp), and no directory above it changeable by another user. EPERM otherwise.
    `windows_drives` is WSL2's mount of the Windows drives (-o windows_mount), or None."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise FsError(exc.errno or errno.ENOENT, f"temp dir {real}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise FsError(errno.ENOTDIR, f"temp dir {real}: not a directory")
    if _on_drives(real, windows_drives):
        # WSL2's drvfs shows every Windows file as the mounting user's, mode 0777 (without the
        # `metadata` mount option): Windows ACLs decide who may write there and the mode bits say
        # nothing, so only the files themselves are judged (owner, one link, no symlink).
        log.info("live: %s is on the Windows drives (%s): its mode bits are not checked", real, windows_drives)
        return real
    sticky_root = st.st_uid == 0 and bool(st.st_mode & stat.S_ISVTX)
    if st.st_uid != _uid() and not sticky_root:
        raise FsError(errno.EPERM, f"temp dir {real} belongs to uid {st.st_uid}, not to you: refused "
                      "(the viewer's temp dir is yours, or a sticky system one like /tmp)")
    if _others_may_write(st):
        raise FsError(errno.EPERM, f"temp dir {real} is writable by other users and not sticky: refused")
    above = os.path.dirname(real)
    while True:
        ast = os.stat(above)
        if ast.st_uid not in (0, _uid()) or _others_may_write(ast):
            raise FsError(errno.EPERM, f"temp dir {real}: {above} above it can be changed by another user: refused")
        if above == os.path.dirname(above):
            return real
        above = os.path.dirname(above)


def viewer_dirs(temp_dir: str, windows_drives: str | None = None) -> TempDirs:
    """The temp dir script.list named (local already), checked."""
    return TempDirs((check_dir(temp_dir, windows_drives),), "script.list's temp_dir", windows_drives)


def fallback_dirs(temp_path: str, *, windows: bool, windows_drives: str | None = None) -> TempDirs:
    """Where a viewer that named no temp dir keeps its temp files (a viewer without script.list,
    or one answering without `temp_dir`). Not simply the first file's directory: whoever names
    the file would choose it. For a Linux viewer the system temp dirs (LINUX_TEMP_DIRS,
    $TMPDIR). A Windows viewer (Wine, WSL2) keeps them in its %TEMP%, which has no fixed local
    place: there the file's own directory, but only one no other user can write (check_dir),
    which another user cannot have put a file in."""
    candidates = [*LINUX_TEMP_DIRS, tempfile.gettempdir()]
    if windows:
        candidates = [os.path.dirname(temp_path)]
    dirs: list[str] = []
    refused: list[str] = []
    for candidate in candidates:
        try:
            real = check_dir(candidate, windows_drives)
        except FsError as exc:
            refused.append(exc.message)
            continue
        if real not in dirs:
            dirs.append(real)
    if not dirs:
        raise FsError(errno.EPERM, "; ".join(refused))
    return TempDirs(tuple(dirs), "the viewer named no temp_dir: " + (
        "the Windows temp file's own private directory" if windows else "the system temp dirs"), windows_drives)


def _refuse_stat(path: str, st: os.stat_result) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise FsError(errno.ELOOP, f"{path} is a symbolic link, not the viewer's temp file: refused "
                      "(never read or written through)")
    if not stat.S_ISREG(st.st_mode):
        raise FsError(errno.EPERM, f"{path} is not a regular file: refused")
    if st.st_uid != _uid():
        raise FsError(errno.EPERM, f"{path} belongs to uid {st.st_uid}, not to you: refused")
    if st.st_nlink > 1:
        raise FsError(errno.EPERM, f"{path} has {st.st_nlink} hard links: refused (a write would reach "
                      "another file)")


def _in_dir(path: str, where: TempDirs) -> tuple[str, str]:
    """(the checked directory holding `path`, its name there); EPERM when outside."""
    parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    if parent not in where.dirs:
        raise FsError(errno.EPERM, f"{path} is not in the viewer's temp dir ({', '.join(where.dirs)}, "
                      f"from {where.source}): refused")
    return check_dir(parent, where.windows_drives), os.path.basename(path)


class _Dir:
    """A descriptor of a checked directory, the same one the check saw."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            st, now = os.stat(path), os.fstat(self.fd)
            if (st.st_dev, st.st_ino) != (now.st_dev, now.st_ino):
                raise FsError(errno.EPERM, f"temp dir {path} changed while it was checked: refused")
        except BaseException:
            os.close(self.fd)
            raise

    def __enter__(self) -> _Dir:
        return self

    def __exit__(self, *_exc: object) -> None:
        os.close(self.fd)

    def lstat(self, name: str) -> os.stat_result:
        st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        _refuse_stat(os.path.join(self.path, name), st)
        return st


def check_file(path: str, where: TempDirs, limit: int = MAX_TEMP_BYTES) -> os.stat_result:
    """The lstat of `path` when it is the viewer's temp file (module doc); FileNotFoundError when
    there is none, FsError when it is refused."""
    parent, name = _in_dir(path, where)
    with _Dir(parent) as d:
        st = d.lstat(name)
    _refuse_size(path, st.st_size, limit)
    return st


def _refuse_size(path: str, size: int, limit: int) -> None:
    if size > limit:
        raise FsError(errno.EFBIG, f"{path}: {size} bytes or more, more than any script ({limit}): refused")


def read_file(path: str, where: TempDirs, limit: int = MAX_TEMP_BYTES) -> tuple[Stamp, bytes]:
    """The temp file's (stamp, whole content), checked before and after opening it (O_NOFOLLOW:
    a symlink put there in between fails with ELOOP; O_NONBLOCK: a FIFO does not hang the open).
    FileNotFoundError when there is none."""
    parent, name = _in_dir(path, where)
    with _Dir(parent) as d:
        d.lstat(name)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=d.fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                _refuse_stat(path, os.stat(name, dir_fd=d.fd, follow_symlinks=False))
            raise
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(fd)
            _refuse_stat(path, st)
            _refuse_size(path, st.st_size, limit)
            data = f.read(limit + 1)  # it may grow after the fstat
            _refuse_size(path, len(data), limit)
            return (st.st_mtime_ns, st.st_size), data


def read_sidecar(path: str, where: TempDirs, limit: int = MAX_TEMP_BYTES) -> bytes:
    """A file the viewer writes beside its temp file (`<temp file>.log`), under the same checks:
    b"" when it is missing or refused (it is only shown)."""
    try:
        return read_file(path, where, limit)[1]
    except (OSError, FsError):
        return b""


def write_atomically(path: str, where: TempDirs, data: bytes, mtime_s: int) -> Stamp:
    """`data` as the whole temp file: a new file beside it (O_EXCL|O_NOFOLLOW, the original's
    permission bits as lstat gave them, never a symlink target's) renamed over it, with the given
    whole-second mtime; the (st_mtime_ns, st_size) it then has. The original is checked again
    right before the rename; a symlink put there after that is replaced itself (rename(2) does
    not follow it), so nothing else is ever written. FileNotFoundError when the file is gone (it
    is never made again: the viewer removed it)."""
    parent, name = _in_dir(path, where)
    with _Dir(parent) as d:
        before = d.lstat(name)
        # Permission bits only: no set-id bit is carried to a file we write.
        mode = stat.S_IMODE(before.st_mode) & 0o777
        # mkstemp cannot create relative to a directory descriptor: the same O_EXCL|O_NOFOLLOW
        # create under a random name (its retry on EEXIST is moot with 64 random bits).
        tmp = f".slfs-{secrets.token_hex(8)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=d.fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fchmod(fd, mode)  # after the create: the umask does not narrow it
                os.utime(fd, ns=(mtime_s * 1_000_000_000, mtime_s * 1_000_000_000))
                os.fsync(fd)
                now = d.lstat(name)  # still the file we checked (the viewer rewrites in place)
                if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
                    raise FsError(errno.EPERM, f"{path} was replaced by another file while we wrote it: refused")
                os.replace(tmp, name, src_dir_fd=d.fd, dst_dir_fd=d.fd)
                st = os.fstat(fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=d.fd)
            except FileNotFoundError:
                pass
            raise
    return st.st_mtime_ns, st.st_size
