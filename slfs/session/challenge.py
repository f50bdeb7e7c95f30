"""Reading the handshake's challenge file safely.

The viewer names a file holding a UUID; whoever can read it is the local user. The path comes from
the network, so the file must be a regular file (not a symlink, FIFO or device), owned by us, and
small; it is opened with O_NOFOLLOW | O_NONBLOCK so neither a symlink nor a FIFO can trick or block us.
Anyone can listen on the viewer's port while the viewer is down, so the content is sent back only
when it is exactly one UUID ("a temporary file ... containing a UUID, and nothing else": the newer
protocol document, SessionHandshake.challenge): any other file of ours (a key, a token) is refused
without a byte of it being sent or logged.

The file must also look like a challenge the viewer has just made (issue 21): named as every
generation names it, `sl_script_challenge*.tmp` (viewer-source.md section 6: G1
`sl_script_challenge.tmp`, G2 `sl_script_challenge_<secret>.tmp`, G3/G4
`sl_script_challenge_<uuid>.tmp`; V1/V2 mkstemp's `sl_script_challenge_<random>.tmp`), checked
before the file is even looked at; one link only (a hard link another user made in a directory of
theirs to a file of ours has st_nlink 2); written within the last MAX_AGE seconds (the viewer writes
it just before it sends the handshake). G1's file has default permissions (world-readable): that is
the viewer's, and allowed. A file that fails any check is refused without a byte read.

A viewer under Wine, or on Windows with slfs in WSL2, names the file by its Windows path: it is
translated first (slfs/winpaths.py) and the local file gets every check above (its name compared
ignoring case, as Windows does); a path that cannot be translated is refused with the reason and
the option to set. The answer always comes from the file, never from its name.

A challenge named inside the daemon's own mount is refused by its path alone (no viewer writes its
challenge there, and a look into the mount is a request the daemon itself must answer). Reading the
file is blocking: the session runs it in a worker thread, under a bound (session.py).
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import time
from collections.abc import Callable

from ..winpaths import WindowsPathError, basename, is_windows_path, within

MAX_CHALLENGE_BYTES = 1024
NAME_PATTERN = "sl_script_challenge*.tmp"
# How old the file may be, and how far in the future its times may lie (a clock stepped back a little
# between the viewer's write and our look).
MAX_AGE = 60.0
FUTURE_SKEW = 5.0
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")


class ChallengeError(Exception):
    """The challenge file cannot be used; the message says why."""


def read_challenge(path: str, to_local: Callable[[str], str] | None = None, *, mountpoint: str = "",
                   now: Callable[[], float] = time.time) -> str:
    """Return the UUID the file holds (surrounding whitespace stripped), or raise ChallengeError.
    `to_local` turns the viewer's path into the local one (PathTranslator.to_local); it may raise
    WindowsPathError. A path under `mountpoint` (the daemon's own mount) is refused unread. `now`
    is the clock the file's age is judged by."""
    if not isinstance(path, str) or not path:
        raise ChallengeError("no challenge path given")
    if "\0" in path:
        raise ChallengeError("challenge path contains a NUL byte")
    windows = is_windows_path(path)
    _check_name(basename(path), windows, repr(path))  # before the file (or its directory) is touched
    local = path
    if to_local is not None:
        try:
            local = to_local(path)
        except WindowsPathError as exc:
            raise ChallengeError(f"challenge file: {exc}") from None
    shown = repr(path) if local == path else f"{path!r} (here {local!r})"
    if within(local, mountpoint):
        raise ChallengeError(f"challenge file {shown} is inside this mount ({mountpoint}), where no viewer writes "
                             "its challenge; not reading it")
    if local == path:
        return _read(local, shown, now)
    _check_name(os.path.basename(local), windows, shown)  # the file opened is named so too
    return _read(local, shown, now)


def _check_name(name: str, windows: bool, shown: str) -> None:
    # A Windows viewer's file system ignores case: its name is compared as Windows would.
    if not fnmatch.fnmatchcase(name.casefold() if windows else name, NAME_PATTERN):
        raise ChallengeError(f"challenge file {shown} is not named {NAME_PATTERN} as a viewer names it; "
                             "not reading it")


def _check_inode(st: os.stat_result, shown: str, now: float) -> None:
    """Every check a stat result can answer (the path's lstat, then the opened file's fstat)."""
    if stat.S_ISLNK(st.st_mode):
        raise ChallengeError(f"challenge file {shown} is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise ChallengeError(f"challenge file {shown} is not a regular file")
    if st.st_uid != os.getuid():
        raise ChallengeError(f"challenge file {shown} is owned by uid {st.st_uid}, not by us (uid {os.getuid()})")
    if st.st_nlink != 1:
        raise ChallengeError(f"challenge file {shown} has {st.st_nlink} hard links, not 1")
    # Both times must be recent. The mtime is the write, but its owner can set it to anything
    # (utime); the ctime cannot be set at all: the kernel makes it "now" on every change of the
    # inode, utime included, so a recent ctime with a recent mtime is a file written (or touched)
    # within MAX_AGE. Either time in the future by more than FUTURE_SKEW is not a fresh file either.
    for what, when in (("modified", st.st_mtime), ("changed", st.st_ctime)):
        age = now - when
        if age > MAX_AGE:
            raise ChallengeError(f"challenge file {shown} was last {what} {age:.0f} s ago, more than "
                                 f"{MAX_AGE:g} s: not a fresh challenge")
        if age < -FUTURE_SKEW:
            raise ChallengeError(f"challenge file {shown} was last {what} {-age:.0f} s in the future: "
                                 "not a fresh challenge")
    if st.st_size > MAX_CHALLENGE_BYTES:
        raise ChallengeError(f"challenge file {shown} is too big ({st.st_size} bytes)")


def _read(path: str, shown: str, now: Callable[[], float]) -> str:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise ChallengeError(f"challenge file {shown} does not exist") from None
    except OSError as exc:
        raise ChallengeError(f"cannot stat challenge file {shown}: {exc.strerror}") from None
    except ValueError as exc:  # a path the OS cannot take (a lone surrogate)
        raise ChallengeError(f"challenge file {shown}: {exc}") from None
    _check_inode(st, shown, now())
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ChallengeError(f"cannot open challenge file {shown}: {exc.strerror}") from None
    try:
        _check_inode(os.fstat(fd), shown, now())  # what we opened, not what the path named a moment ago
        data = os.read(fd, MAX_CHALLENGE_BYTES + 1)
    except OSError as exc:
        raise ChallengeError(f"cannot read challenge file {shown}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_CHALLENGE_BYTES:
        raise ChallengeError(f"challenge file {shown} is too big")
    text = data.decode("ascii", "replace").strip()
    if not text:
        raise ChallengeError(f"challenge file {shown} is empty")
    if _UUID.fullmatch(text) is None:
        # Never say what it holds: the message goes to the log.
        raise ChallengeError(f"challenge file {shown} does not hold a UUID ({len(data)} bytes); not answering")
    return text
