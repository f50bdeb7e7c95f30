"""Windows path forms: a Windows viewer under Wine, or on Windows with the client in WSL2.

Most residents run the Windows viewer. Every local path it names (the handshake's `challenge`,
live sync's temp files and the path it passes to the external editor, `script.list`'s `temp_dir`)
is then a Windows path, while the sim itself (and a client on the Linux side) reads and writes the
local file behind it:

* ``"wine"``: the viewer's temp dir is ``PREFIX/drive_c/users/USER/AppData/Local/Temp``, named
  ``C:\\users\\USER\\AppData\\Local\\Temp``; Wine's ``Z:`` drive is the Unix root (``Z:\\tmp\\x`` is
  ``/tmp/x``). `ensure_wine_prefix` creates what Wine's first run would: ``drive_c/`` and the
  ``dosdevices/c:`` -> ``../drive_c`` and ``dosdevices/z:`` -> ``/`` links.
* ``"wsl"``: Windows' drives are mounted at ``MOUNT/<letter>`` (default ``/mnt``); the temp dir is
  ``MOUNT/c/Users/USER/AppData/Local/Temp``, named ``C:\\Users\\USER\\AppData\\Local\\Temp``.
"""

from __future__ import annotations

import os
from pathlib import Path

WINDOWS_MODES = ("wine", "wsl")


def default_wine_prefix() -> Path:
    """$WINEPREFIX, else ~/.wine (Wine's own default)."""
    env = os.environ.get("WINEPREFIX")
    return Path(env) if env else Path.home() / ".wine"


def ensure_wine_prefix(prefix: Path) -> None:
    """The skeleton Wine's first run leaves in a prefix, where missing: drive_c/, dosdevices/c: ->
    ../drive_c and dosdevices/z: -> / (symlinks)."""
    (prefix / "drive_c").mkdir(parents=True, exist_ok=True)
    dosdevices = prefix / "dosdevices"
    dosdevices.mkdir(parents=True, exist_ok=True)
    for name, target in (("c:", "../drive_c"), ("z:", "/")):
        link = dosdevices / name
        if not link.exists() and not link.is_symlink():
            os.symlink(target, link)


class WindowsPaths:
    """How a Windows viewer names the local files the sim writes (see the module docstring)."""

    def __init__(
        self,
        mode: str,
        *,
        wine_prefix: Path | str | None = None,
        windows_mount: Path | str | None = None,
        user: str = "resident",
    ) -> None:
        if mode not in WINDOWS_MODES:
            raise ValueError("windows_paths must be None, 'wine' or 'wsl'")
        self.mode = mode
        self.user = user
        if mode == "wine":
            self.prefix: Path | None = Path(wine_prefix) if wine_prefix is not None else default_wine_prefix()
            self.mount: Path | None = None
        else:
            self.prefix = None
            self.mount = Path(windows_mount) if windows_mount is not None else Path("/mnt")

    @property
    def temp_dir(self) -> Path:
        """The local directory behind the viewer's %TEMP%."""
        if self.prefix is not None:
            return self.prefix / "drive_c" / "users" / self.user / "AppData" / "Local" / "Temp"
        assert self.mount is not None
        return self.mount / "c" / "Users" / self.user / "AppData" / "Local" / "Temp"

    def prepare(self) -> str:
        """Create what is missing (the Wine prefix skeleton, the temp dir); the temp dir's local path."""
        if self.prefix is not None:
            ensure_wine_prefix(self.prefix)
        self.temp_dir.mkdir(parents=True, exist_ok=True)
        return str(self.temp_dir)

    def to_windows(self, local_path: str | os.PathLike[str], drive: str = "C") -> str:
        """The Windows name of a local path: through drive C: (or another letter: under Wine the
        prefix's dosdevices link for it, under WSL ``MOUNT/<letter>``), or under Wine through Z:
        (the Unix root). ValueError for a path the drive does not reach."""
        letter = drive.rstrip(":\\").upper()
        if len(letter) != 1 or not letter.isalpha():
            raise ValueError(f"not a drive letter: {drive!r}")
        path = Path(os.path.abspath(local_path))
        if self.prefix is not None:
            if letter == "Z":
                return "Z:" + str(path).replace("/", "\\")
            root = Path(os.path.abspath(self.prefix / "drive_c")) if letter == "C" else None
            if root is None:
                link = self.prefix / "dosdevices" / f"{letter.lower()}:"
                if not link.is_symlink() and not link.exists():
                    raise ValueError(f"no drive {letter}: in the Wine prefix")
                root = Path(os.path.realpath(link))
        else:
            assert self.mount is not None
            if letter == "Z":
                raise ValueError("WSL has no Z: drive for the Linux side")
            root = Path(os.path.abspath(self.mount / letter.lower()))
        try:
            rel = path.relative_to(root)
        except ValueError:
            raise ValueError(f"{path} is not on drive {letter}: ({root})") from None
        parts = rel.parts
        return f"{letter}:\\" + "\\".join(parts)

    def to_local(self, windows_path: str) -> str:
        """The local path a Windows name stands for (the inverse of `to_windows`)."""
        if len(windows_path) < 2 or windows_path[1] != ":":
            raise ValueError(f"not a Windows drive path: {windows_path!r}")
        letter = windows_path[0].upper()
        rest = [p for p in windows_path[2:].replace("/", "\\").split("\\") if p]
        if self.prefix is not None:
            if letter == "Z":
                return "/" + "/".join(rest)
            base = self.prefix / "drive_c" if letter == "C" else self.prefix / "dosdevices" / f"{letter.lower()}:"
        else:
            assert self.mount is not None
            base = self.mount / letter.lower()
        return str(base.joinpath(*rest))
