"""Windows paths the viewer names, as local paths (a viewer under Wine, or slfs in WSL2).

Most viewers are Windows builds. Run under Wine on Linux, or on Windows with slfs in WSL2, the
viewer names every local file by its own Windows path: the handshake's challenge file, live sync's
temp files and temp dir, `editor.open_file`'s path. A PathMapper turns such a path into the local
one, or refuses it with a message naming the option to set:

- a POSIX absolute path is passed through unchanged, in every mode;
- a Windows path is drive-absolute, `X:\\...` or `X:/...` (either separator);
- Wine (`-o windows_paths=wine`): the drive letter resolves through the prefix's
  `dosdevices/x:` symlink (`c:` is usually `../drive_c`, `z:` is `/`), read with readlink and taken
  relative to `dosdevices/`;
- WSL2 (`-o windows_paths=wsl`): `C:\\...` is `/mnt/c/...` under `-o windows_mount=/mnt`;
- Windows names are case-insensitive: a component that does not exist with its exact case is
  matched case-insensitively in its directory (a bounded scan), else kept as given;
- refused: `..` components, device paths (`\\\\.\\`, `\\\\?\\`), UNC paths (`\\\\server\\share`),
  drive-relative paths (`C:foo`), NUL bytes and control characters, a `:` after the drive (an
  alternate data stream), paths over MAX_PATH_BYTES, a drive with no dosdevices link (or not
  mounted under the WSL mount), and any result that is not absolute.
- the daemon's own mount (`mountpoint`, passed in) is never looked into: a path that reaches it is
  recognised by its prefix (its last component compared ignoring case, by name only) and the rest
  kept as given. A lookup there from the daemon's own thread would wait for an answer only that
  thread can give (a Wine viewer's `editor.open_file` of `Z:\\home\\...\\sl\\Box\\x` hung the
  mount for good). The callers still run a translation in a worker thread, under a bound: a path
  outside the mount can lead into it through a symlink.

The paths come from the network: nothing here raises anything but WindowsPathError, whose message
is safe to log (paths are shown with repr). This module knows no other slfs layer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import attrs

# What `-o windows_paths` takes, and the modes a mapper runs in.
CHOICES = ("auto", "wine", "wsl", "off")
MODES = ("native", "wine", "wsl")
MAX_PATH_BYTES = 4096  # PATH_MAX, the terminating NUL included: longer is refused
MAX_SCAN = 4096  # directory entries read looking for a case-insensitive match
WSL_INTEROP = ("sys/fs/binfmt_misc/WSLInterop", "sys/fs/binfmt_misc/WSLInterop-late")

_DRIVE = re.compile(r"^([A-Za-z]):([\\/]|$)")
_DRIVE_RELATIVE = re.compile(r"^[A-Za-z]:(?![\\/])")
_SEPARATORS = re.compile(r"[\\/]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class WindowsPathError(ValueError):
    """A path the viewer named that cannot be used here; the message says why and what to set."""


def is_windows_path(path: str) -> bool:
    """Whether `path` is in a Windows form (drive-absolute, drive-relative, UNC or device), that is,
    anything a PathMapper does not pass through as a POSIX path."""
    return bool(_DRIVE_RELATIVE.match(path) or _DRIVE.match(path) or path.startswith(("\\\\", "//")))


def basename(path: str) -> str:
    """The last component of a POSIX or Windows path (both separators count for a Windows one)."""
    if is_windows_path(path):
        return _SEPARATORS.split(path)[-1]
    return os.path.basename(path)


def in_wsl(environ: Mapping[str, str] | None = None, proc: str = "/proc") -> bool:
    """Whether this runs in WSL2: its interop binfmt entry exists, or WSL_DISTRO_NAME is set."""
    environ = os.environ if environ is None else environ
    if environ.get("WSL_DISTRO_NAME"):
        return True
    return any(os.path.exists(os.path.join(proc, name)) for name in WSL_INTEROP)


def default_wine_prefix(environ: Mapping[str, str] | None = None) -> str:
    """$WINEPREFIX when it is an absolute path, else ~/.wine."""
    environ = os.environ if environ is None else environ
    prefix = environ.get("WINEPREFIX", "")
    if prefix and os.path.isabs(os.path.expanduser(prefix)):
        return os.path.normpath(os.path.expanduser(prefix))
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".wine")


def within(path: str, directory: str) -> bool:
    """Whether `path` is `directory` or under it, comparing normalised strings: no file is looked at."""
    if not directory:
        return False
    path, directory = os.path.normpath(path), os.path.normpath(directory)
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _names_mount(directory: str, name: str, mountpoint: str) -> bool:
    """Whether `directory`/`name` is `mountpoint`, the name compared ignoring case (as Windows
    does), without a look at either: a lookup of a mount point is a request to that file system."""
    mount = os.path.normpath(mountpoint)
    return os.path.dirname(mount) == directory and name.casefold() == os.path.basename(mount).casefold()


def _case_insensitive(directory: str, name: str) -> str:
    """`name`, or the one entry of `directory` (the first in sorted order when several) equal to it
    ignoring case; `name` itself when there is none or the directory cannot be read."""
    if os.path.lexists(os.path.join(directory, name)):
        return name
    want = name.casefold()
    found: list[str] = []
    try:
        with os.scandir(directory) as entries:
            for seen, entry in enumerate(entries):
                if seen >= MAX_SCAN:
                    break
                if entry.name.casefold() == want:
                    found.append(entry.name)
    except (OSError, ValueError):
        return name
    return min(found) if found else name


def match_case(directory: str, relative: str) -> str:
    """`directory`/`relative` with each component of `relative` matched ignoring case where it does
    not exist as given (see _case_insensitive). For the part of a Windows path inside the daemon's
    mount, which to_local keeps as given: blocking, for a worker thread, never the mount's loop."""
    local = directory
    exists = True
    for part in (p for p in relative.split("/") if p and p != "."):
        if exists:
            part = _case_insensitive(local, part)
            exists = os.path.lexists(os.path.join(local, part))
        local = os.path.join(local, part)
    return local


@attrs.frozen(kw_only=True)
class PathMapper:
    """How the viewer's paths become local ones. `mode` is native, wine or wsl; `auto` says
    `-o windows_paths=auto` chose it (auto is wine, without WSL, once a Windows path arrives)."""

    mode: str = "native"
    wine_prefix: str = ""
    windows_mount: str = "/mnt"
    auto: bool = False

    def __attrs_post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"PathMapper mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    @property
    def option(self) -> str:
        """The option that chose this mode, as a user would type it."""
        return "windows_paths=auto" if self.auto else f"windows_paths={'off' if self.mode == 'native' else self.mode}"

    def describe(self, *, windows_seen: bool = True) -> str:
        """The `.slfs/status` value: `native`, `wine (prefix DIR)`, `wsl (DIR)`, with `, detected`
        when auto chose it; auto without WSL says native until a Windows path has arrived."""
        tag = ", detected" if self.auto else ""
        if self.mode == "wine":
            if self.auto and not windows_seen:
                return f"native (auto: a Windows path would go through the Wine prefix {self.wine_prefix})"
            return f"wine (prefix {self.wine_prefix}{tag})"
        if self.mode == "wsl":
            return f"wsl ({self.windows_mount}{tag})"
        return "native"

    def to_local(self, path: str, *, mountpoint: str = "") -> str:
        """The local path of `path`, or WindowsPathError saying why not and what to set. Nothing
        under `mountpoint` (the daemon's own mount) is looked at: see the module doc."""
        if not isinstance(path, str) or not path:
            raise WindowsPathError("no path given")
        if "\0" in path:
            raise WindowsPathError(f"{path!r}: contains a NUL byte; refused")
        try:
            size = len(os.fsencode(path))
        except UnicodeError:
            raise WindowsPathError(f"{path!r}: not valid Unicode; refused") from None
        if size >= MAX_PATH_BYTES:
            raise WindowsPathError(f"{path[:64]!r}...: {size} bytes, longer than a path can be; refused")
        if not is_windows_path(path):
            if not os.path.isabs(path):
                raise WindowsPathError(f"{path!r}: not an absolute path; refused")
            return path  # a POSIX path: the viewer runs here (or names a Wine Z: path by its Unix name)
        return self._windows(path, mountpoint)

    def _refuse(self, path: str, why: str) -> WindowsPathError:
        return WindowsPathError(f"{path!r}: {why}; refused (-o {self.option})")

    def _windows(self, path: str, mountpoint: str) -> str:
        if path.startswith(("\\\\.\\", "\\\\?\\", "//./", "//?/", "\\\\.", "\\\\?")):
            raise self._refuse(path, "a device path (\\\\.\\ or \\\\?\\) is not a file the viewer can share")
        if path.startswith(("\\\\", "//")):
            raise self._refuse(path, "a network (UNC) path \\\\server\\share is not on this machine")
        drive = _DRIVE.match(path)
        if drive is None:
            raise self._refuse(path, "a drive-relative path (C:foo) names no definite file")
        if _CONTROL.search(path):
            raise self._refuse(path, "contains a control character")
        parts = [p for p in _SEPARATORS.split(path[drive.end():]) if p and p != "."]
        if ".." in parts:
            raise self._refuse(path, "has a '..' component")
        if any(":" in p for p in parts):
            raise self._refuse(path, "has a ':' after the drive (an alternate data stream)")
        letter = drive.group(1).lower()
        if self.mode == "native":
            raise WindowsPathError(
                f"{path!r} is a Windows path, and -o {self.option} does not translate them: set "
                "-o windows_paths=wine (a viewer running under Wine) or -o windows_paths=wsl (slfs in WSL2)")
        base = self._wine_drive(path, letter) if self.mode == "wine" else self._wsl_drive(path, letter, mountpoint)
        local = base
        exists = True
        for part in parts:
            if within(local, mountpoint):
                exists = False  # inside the mount: kept as given, never looked at
            elif mountpoint and _names_mount(local, part, mountpoint):
                part = os.path.basename(os.path.normpath(mountpoint))
            elif exists:
                part = _case_insensitive(local, part)
                exists = os.path.lexists(os.path.join(local, part))
            local = os.path.join(local, part)
        if not os.path.isabs(local):
            raise self._refuse(path, f"its local path {local!r} is not absolute")
        if len(os.fsencode(local)) >= MAX_PATH_BYTES:
            raise self._refuse(path, "its local path is longer than a path can be")
        return local

    def _wine_drive(self, path: str, letter: str) -> str:
        if not self.wine_prefix:
            raise WindowsPathError(f"{path!r}: no Wine prefix is known; set -o wine_prefix=DIR")
        dosdevices = os.path.join(self.wine_prefix, "dosdevices")
        link = os.path.join(dosdevices, f"{letter}:")
        try:
            target = os.readlink(link)
        except OSError as exc:
            what = "no link" if isinstance(exc, FileNotFoundError) else f"no readable link ({exc.strerror})"
            hint = "" if os.path.isdir(dosdevices) else f" ({self.wine_prefix} is not a Wine prefix)"
            raise WindowsPathError(
                f"{path!r}: drive {letter.upper()}: has {what} in {dosdevices}{hint}; if the viewer runs in "
                "another Wine prefix, set -o wine_prefix=DIR") from None
        if not target or "\0" in target:
            raise self._refuse(path, f"drive {letter.upper()}:'s link in {dosdevices} is empty")
        base = os.path.normpath(os.path.join(dosdevices, target))  # a relative link is relative to dosdevices/
        if not os.path.isabs(base):
            raise self._refuse(path, f"drive {letter.upper()}: resolves to {base!r}, not an absolute path")
        return base

    def _wsl_drive(self, path: str, letter: str, mountpoint: str) -> str:
        base = os.path.join(self.windows_mount, letter)
        if not os.path.isabs(base):
            raise self._refuse(path, f"the Windows mount {self.windows_mount!r} is not absolute")
        if not within(base, mountpoint) and not os.path.isdir(base):
            raise WindowsPathError(
                f"{path!r}: drive {letter.upper()}: is not mounted at {base}; if WSL mounts the Windows "
                "drives elsewhere (/etc/wsl.conf, [automount] root), set -o windows_mount=DIR")
        return base


def detect(choice: str = "auto", wine_prefix: str | None = None, windows_mount: str | None = None, *,
           environ: Mapping[str, str] | None = None, proc: str = "/proc") -> PathMapper:
    """The mapper `-o windows_paths=CHOICE` (auto, wine, wsl or off) means here. Auto: WSL2 when
    this runs in WSL2 (in_wsl), else Wine with the prefix given, $WINEPREFIX or ~/.wine, used once
    a Windows path arrives; an explicit wine_prefix makes auto Wine, an explicit windows_mount WSL."""
    if choice not in CHOICES:
        raise ValueError(f"windows_paths must be one of {', '.join(CHOICES)}, not {choice!r}")
    prefix = wine_prefix or default_wine_prefix(environ)
    mount = windows_mount or "/mnt"
    if choice == "off":
        return PathMapper(mode="native", wine_prefix=prefix, windows_mount=mount)
    if choice in ("wine", "wsl"):
        return PathMapper(mode=choice, wine_prefix=prefix, windows_mount=mount)
    if wine_prefix:
        mode = "wine"
    elif windows_mount:
        mode = "wsl"
    else:
        mode = "wsl" if in_wsl(environ, proc) else "wine"
    return PathMapper(mode=mode, wine_prefix=prefix, windows_mount=mount, auto=True)


class PathTranslator:
    """A mount's PathMapper and whether a Windows path has come through it yet (`.slfs/status`).
    Shared by the session (the challenge), the live scripts and the workspace (editor.open_file)."""

    def __init__(self, mapper: PathMapper | None = None, mountpoint: str = "") -> None:
        self.mapper = mapper or PathMapper()
        self.mountpoint = mountpoint  # the daemon's own mount: never looked into (see the module doc)
        self.windows_seen = False

    def to_local(self, path: str) -> str:
        """PathMapper.to_local, noting that a Windows path came. Blocking (it may look at the
        directories on the way outside the mount): callers on the event loop run it in a worker thread."""
        if isinstance(path, str) and is_windows_path(path):
            self.windows_seen = True
        return self.mapper.to_local(path, mountpoint=self.mountpoint)

    def in_mount(self, local: str) -> bool:
        """Whether a local path is the daemon's own mount or under it (by its prefix alone)."""
        return within(local, self.mountpoint)

    def status(self) -> str:
        return self.mapper.describe(windows_seen=self.windows_seen)


__all__ = ["CHOICES", "MAX_PATH_BYTES", "MAX_SCAN", "MODES", "PathMapper", "PathTranslator", "WindowsPathError",
           "basename", "default_wine_prefix", "detect", "in_wsl", "is_windows_path", "match_case", "within"]
