"""The local overlay's directories and files on disk: where they live, made with the mount's modes,
and the changes asked of them made as asked. Nothing here knows the tree."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .. import paths


class OverlayDisk:
    def __init__(self, *, shared: bool) -> None:
        # The overlay's directories and index are the user's alone (they hold object names), unless
        # the mount is shared with other users (allow_other): then they show as 0755 there too.
        self.dir_mode = 0o755 if shared else 0o700
        self.file_mode = 0o644 if shared else 0o600
        self._root_checked = False

    @staticmethod
    def root_dir() -> Path:
        return paths.data_dir() / "overlay"

    def agent_dir(self, agent: str) -> Path:
        return self.root_dir() / "agents" / agent

    def make_dirs(self, path: str) -> None:
        """`path` and the directories above it up to the overlay root, each made with dir_mode
        (os.makedirs gives the ones above the umask's mode, 0755 usually)."""
        if not self._root_checked:
            root = self.root_dir()
            paths.ensure(root.parent)
            try:
                os.mkdir(root, self.dir_mode)
            except FileExistsError:
                if stat.S_IMODE(os.stat(root).st_mode) != self.dir_mode:
                    os.chmod(root, self.dir_mode)  # one made 0755 by an older slfs: it guards all below
            self._root_checked = True
        missing: list[str] = []
        while not os.path.isdir(path):
            missing.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
        for d in reversed(missing):
            try:
                os.mkdir(d, self.dir_mode)
            except FileExistsError:
                pass

    @staticmethod
    def write_file(path: str, data: bytes) -> None:
        """Write `data` as the file `path`, replacing one there atomically."""
        tmp = path + ".slfs-tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)

    @staticmethod
    def change(path: str, *, size: int | None = None, mode: int | None = None, uid: int | None = None,
               gid: int | None = None, atime_ns: int | None = None, mtime_ns: int | None = None) -> None:
        """setattr: each change given (None: unchanged). A symlink's mode is not changed."""
        if size is not None:
            os.truncate(path, size)
        if mode is not None and not stat.S_ISLNK(os.lstat(path).st_mode):
            os.chmod(path, stat.S_IMODE(mode))
        if uid is not None or gid is not None:
            os.lchown(path, -1 if uid is None else uid, -1 if gid is None else gid)
        if atime_ns is not None or mtime_ns is not None:
            st = os.lstat(path)
            os.utime(path, ns=(st.st_atime_ns if atime_ns is None else atime_ns,
                               st.st_mtime_ns if mtime_ns is None else mtime_ns),
                     follow_symlinks=False)
