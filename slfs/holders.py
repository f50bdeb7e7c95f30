"""Which processes hold a mount busy, as `fuser -m` finds them: a working or root directory, an
executable, an open file or a mapped file under the mountpoint. Read from /proc only: resolving
those links is the kernel's (d_path), so the daemon can ask about its own mount without a request
reaching itself."""

from __future__ import annotations

import os

import attrs

MAX_COMMAND = 120  # a command line is another program's text: bounded, and printable


@attrs.frozen(order=True)
class Holder:
    pid: int
    command: str

    def __str__(self) -> str:
        return f"{self.pid} ({self.command})"


def _under(path: str, mountpoint: str) -> bool:
    path = path.removesuffix(" (deleted)")
    return path == mountpoint or path.startswith(mountpoint.rstrip("/") + "/")


def _links(proc: str) -> list[str]:
    names = [f"{proc}/cwd", f"{proc}/root", f"{proc}/exe"]
    try:
        names += [f"{proc}/fd/{fd}" for fd in os.listdir(f"{proc}/fd")]
    except OSError:
        pass
    out = []
    for name in names:
        try:
            out.append(os.readlink(name))
        except OSError:
            continue
    return out


def _mapped(proc: str) -> list[str]:
    try:
        with open(f"{proc}/maps", "rb") as f:
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return []
    # address perms offset dev inode path: the path is the sixth field and may hold spaces
    return [fields[5] for line in lines if len(fields := line.split(None, 5)) == 6]


def command_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read(4096).rstrip(b"\0").split(b"\0")
    except OSError:
        return "?"
    text = " ".join(a.decode(errors="replace") for a in argv if a) or "?"
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= MAX_COMMAND else text[: MAX_COMMAND - 3] + "..."


def mount_holders(mountpoint: str, *, exclude: frozenset[int] = frozenset()) -> list[Holder]:
    """The processes (this user may inspect) holding something under `mountpoint`, by pid."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in exclude:
            continue
        proc = f"/proc/{entry}"
        if any(_under(p, mountpoint) for p in _links(proc)) or any(_under(p, mountpoint) for p in _mapped(proc)):
            out.append(Holder(int(entry), command_of(int(entry))))
    return sorted(out)
