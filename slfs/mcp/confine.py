"""Every path an agent names is mount-relative and stays inside the mount: absolute paths, `..`,
NULs and symlinks (the overlay holds the user's own files, `.git/` and the like, and a symlink
there may point anywhere) are refused, and so is anything whose real path is outside the mount.
The mount's own `.slfs/by-id/UUID` links are followed: they point inside it."""

from __future__ import annotations

import os
import stat

from ..client import ClientError

CONTROL = ".slfs"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def confine(mountpoint: str, path: str, *, write: bool = False) -> str:
    """The absolute path of the mount-relative `path` ("" is the mount itself); ClientError EPERM
    or EINVAL with the reason when it is not one the MCP server may touch. With `write`, the
    control directories are refused too, but for the live files (`.slfs/live/NAME`)."""
    if not isinstance(path, str):
        raise ClientError("a path is a string", "EINVAL")
    if "\x00" in path:
        raise ClientError("a path cannot hold NUL characters", "EINVAL")
    if path.startswith("/") or path.startswith("~"):
        raise ClientError(f"{path}: give paths relative to the mount ({mountpoint}), e.g. 'Object/Script.lsl'",
                          "EPERM")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ClientError(f"{path}: '..' is not allowed; paths stay inside the mount", "EPERM")
    if write and CONTROL in parts and not (len(parts) == 3 and parts[:2] == [CONTROL, "live"]):
        raise ClientError(f"{path}: the .slfs control files are not written through this tool "
                          "(use slfs_set_running, slfs_reset and the other tools)", "EPERM")
    root = os.path.realpath(mountpoint)
    current = mountpoint
    for i, part in enumerate(parts):
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except OSError:
            break  # a name to create, or ENOENT for the operation to report
        if stat.S_ISLNK(st.st_mode):
            ours = i == 2 and parts[:2] == [CONTROL, "by-id"]
            if not ours:
                raise ClientError(f"{path}: {'/'.join(parts[:i + 1])} is a symbolic link; links are not "
                                  "followed (only the mount's own .slfs/by-id/ links)", "EPERM")
    full = os.path.join(mountpoint, *parts)
    real = os.path.realpath(full)
    if not _inside(real, root):
        raise ClientError(f"{path}: resolves outside the mount", "EPERM")
    return real if parts[:2] == [CONTROL, "by-id"] else full


def relative(mountpoint: str, path: str) -> str:
    """A path the daemon answered with, as the agent names paths: relative to the mount."""
    if _inside(path, mountpoint):
        return os.path.relpath(path, mountpoint) if path != mountpoint else ""
    return path
