"""Where slfs keeps things on the local disk (XDG base directories)."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

# sun_path of a Unix socket holds 108 bytes with the terminating NUL.
SOCKET_PATH_MAX = 107
# Where a control socket goes when its path in the runtime dir would be too long: a directory of
# its own made there with a random name (mkdtemp), never a predictable one another user could make first.
FALLBACK_RUNTIME_BASE = "/tmp"
SHORT_DIR_PREFIX = "slfs-"


class RuntimeDirError(Exception):
    """The runtime dir (registry and control sockets) cannot be trusted or used; the message says why."""


def _xdg(var: str, default: str) -> Path:
    value = os.environ.get(var)
    return Path(value) if value and os.path.isabs(value) else Path.home() / default


def state_dir() -> Path:
    """Logs, event logs and the recovery folder: things that must outlive the daemon."""
    return _xdg("XDG_STATE_HOME", ".local/state") / "slfs"


def data_dir() -> Path:
    """The local overlay and the trash."""
    return _xdg("XDG_DATA_HOME", ".local/share") / "slfs"


def _fallback_runtime_dir() -> Path:
    """Without $XDG_RUNTIME_DIR: in the state dir, under the user's home, where no other user can
    make it first (a predictable /tmp/slfs-UID could be, and would then be refused: a denial of
    service)."""
    return state_dir() / "run"


def check_private_dir(path: Path) -> None:
    """Refuse (RuntimeDirError) a dir another user could have made or can use: it must be a real
    directory (lstat: not a symlink), owned by us, with no group or other permission bits."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise RuntimeDirError(f"cannot check {path}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise RuntimeDirError(f"{path} is a symbolic link, not a directory of our own; refusing it (remove it)")
    if not stat.S_ISDIR(st.st_mode):
        raise RuntimeDirError(f"{path} is not a directory; refusing it (remove it)")
    if st.st_uid != os.geteuid():
        raise RuntimeDirError(f"{path} is owned by uid {st.st_uid}, not by us (uid {os.geteuid()}); refusing it "
                              "(another user may have made it: remove it)")
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise RuntimeDirError(f"{path} has mode {stat.S_IMODE(st.st_mode):04o}, open to other users; refusing it "
                              f"(chmod 700 {path})")


def private_dir(path: Path) -> Path:
    """`path`, created 0700 when missing (its parent must exist), then checked."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise RuntimeDirError(f"cannot create {path}: {exc.strerror}") from None
    check_private_dir(path)
    return path


def runtime_dir(*, create: bool = False) -> Path:
    """Control sockets and the registry of running mounts: a dir of ours alone, checked on every use
    (RuntimeDirError otherwise); created 0700 with `create`, else it may be missing (no mounts)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    path = Path(base) / "slfs" if base and os.path.isdir(base) else _fallback_runtime_dir()
    if create:
        try:
            ensure(path.parent)
        except OSError as exc:
            raise RuntimeDirError(f"cannot create {path.parent}: {exc.strerror}") from None
        return private_dir(path)
    try:
        check_private_dir(path)
    except FileNotFoundError:
        pass
    return path


def control_socket_path(mountpoint: str | os.PathLike[str], *, make_short: bool = True) -> str:
    """The mount's control socket: in the runtime dir, or, when that path is over the Unix socket
    limit (a long $XDG_RUNTIME_DIR or home), in a short dir of its own made by mkdtemp (random
    name, 0700, so another user cannot have made it); the registry names the socket either way,
    and the daemon removes the dir when it ends (release_socket_path). Without `make_short` (a check
    before the daemon starts) no short dir is made: "" stands for one."""
    name = f"{mount_key(mountpoint)}.sock"
    path = runtime_dir(create=True) / name
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        return str(path)
    if not make_short:
        return ""
    try:
        short = Path(tempfile.mkdtemp(prefix=f"{SHORT_DIR_PREFIX}{os.getuid()}-", dir=FALLBACK_RUNTIME_BASE)) / name
    except OSError as exc:
        raise RuntimeDirError(f"the control socket path {path} is over the {SOCKET_PATH_MAX}-byte limit of a "
                              f"Unix socket, and no short dir can be made in {FALLBACK_RUNTIME_BASE}: "
                              f"{exc.strerror}") from None
    if len(os.fsencode(short)) > SOCKET_PATH_MAX:
        os.rmdir(short.parent)
        raise RuntimeDirError(f"the control socket path {path} is {len(os.fsencode(path))} bytes, over the "
                              f"{SOCKET_PATH_MAX}-byte limit of a Unix socket, and so is {short}")
    log.info("%s would be %d bytes, over the %d-byte limit of a Unix socket; the control socket is %s",
             path, len(os.fsencode(path)), SOCKET_PATH_MAX, short)
    return str(short)


def release_socket_path(socket_path: str) -> None:
    """The daemon ends: the short dir control_socket_path made for its socket goes too (the socket
    itself is gone by then; a dir still holding anything is left)."""
    parent = Path(socket_path).parent
    if parent.parent == Path(FALLBACK_RUNTIME_BASE) and parent.name.startswith(f"{SHORT_DIR_PREFIX}{os.getuid()}-"):
        try:
            os.rmdir(parent)
        except OSError:
            pass


def mount_key(mountpoint: str | os.PathLike[str]) -> str:
    return hashlib.sha1(os.fsencode(os.path.realpath(mountpoint))).hexdigest()[:16]


def private_opener(path: str, flags: int) -> int:
    """An `opener=` for open(): the file is created 0600, and one made wider before is made 0600
    (logs and event logs hold in-world names, chat and paths: for the user alone)."""
    fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except OSError:
        pass  # not ours to change (a file system without modes): it is still written
    return fd


def ensure(path: Path, mode: int = 0o700) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=mode)
    return path
