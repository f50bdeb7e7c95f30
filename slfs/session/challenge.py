"""Reading the handshake's challenge file safely.

The viewer names a file holding a UUID; whoever can read it is the local user. The path comes from
the network, so the file must be a regular file (not a symlink, FIFO or device), owned by us, and
small; it is opened with O_NOFOLLOW | O_NONBLOCK so neither a symlink nor a FIFO can trick or block us.
Anyone can listen on the viewer's port while the viewer is down, so the content is sent back only
when it is exactly one UUID ("a temporary file ... containing a UUID, and nothing else": the newer
protocol document, SessionHandshake.challenge): any other file of ours (a key, a token) is refused
without a byte of it being sent or logged.

A viewer under Wine, or on Windows with slfs in WSL2, names the file by its Windows path: it is
translated first (slfs/winpaths.py) and the local file gets every check above; a path that cannot
be translated is refused with the reason and the option to set. The answer always comes from the
file, never from its name.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable

from ..winpaths import WindowsPathError

MAX_CHALLENGE_BYTES = 1024
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")


class ChallengeError(Exception):
    """The challenge file cannot be used; the message says why."""


def read_challenge(path: str, to_local: Callable[[str], str] | None = None) -> str:
    """Return the UUID the file holds (surrounding whitespace stripped), or raise ChallengeError.
    `to_local` turns the viewer's path into the local one (PathTranslator.to_local); it may raise
    WindowsPathError."""
    if not isinstance(path, str) or not path:
        raise ChallengeError("no challenge path given")
    if "\0" in path:
        raise ChallengeError("challenge path contains a NUL byte")
    local = path
    if to_local is not None:
        try:
            local = to_local(path)
        except WindowsPathError as exc:
            raise ChallengeError(f"challenge file: {exc}") from None
    return _read(local, repr(path) if local == path else f"{path!r} (here {local!r})")


def _read(path: str, shown: str) -> str:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise ChallengeError(f"challenge file {shown} does not exist") from None
    except OSError as exc:
        raise ChallengeError(f"cannot stat challenge file {shown}: {exc.strerror}") from None
    except ValueError as exc:  # a path the OS cannot take (a lone surrogate)
        raise ChallengeError(f"challenge file {shown}: {exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise ChallengeError(f"challenge file {shown} is a symbolic link")
    if not stat.S_ISREG(st.st_mode):
        raise ChallengeError(f"challenge file {shown} is not a regular file")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ChallengeError(f"cannot open challenge file {shown}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)  # what we opened, not what the path named a moment ago
        if not stat.S_ISREG(st.st_mode):
            raise ChallengeError(f"challenge file {shown} is not a regular file")
        if st.st_uid != os.getuid():
            raise ChallengeError(
                f"challenge file {shown} is owned by uid {st.st_uid}, not by us (uid {os.getuid()})"
            )
        if st.st_size > MAX_CHALLENGE_BYTES:
            raise ChallengeError(f"challenge file {shown} is too big ({st.st_size} bytes)")
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
