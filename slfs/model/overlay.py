"""The local overlay: dot and temp files, `.git/`, `.vscode/`... kept on disk beside the remote
items of a folder, and passed through as they are.

Overlay nodes are keyed by their path on disk. The names of one disk file (hard links: `ln`,
git's objects) share one inode, as the kernel expects: a link's reply carries the inode of its
target, and only then do `stat` of every name, and what is written through one name, agree at once.
Such a node works through the name it was last looked up by, and removing that name moves it to
another name the file still has, so it never points at a removed path.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from .. import paths
from .errors import FsError
from .tree import Folder, Item, NewFile, Node, OverlayNode, Tree

KEY_PREFIX = "local:"


class Overlay:
    def __init__(self, tree: Tree, *, shared: bool = False) -> None:
        self.tree = tree
        # The overlay's directories are the user's alone (their names are object names), unless
        # the mount is shared with other users (allow_other): then they show as 0755 there too.
        self.dir_mode = 0o755 if shared else 0o700
        self._root_checked = False
        # Hard links: the inode of each non-directory by its disk identity (st_dev, st_ino), and the
        # paths (and their parents) known for an inode whose file has several names.
        self._by_disk: dict[tuple[int, int], int] = {}
        self._disk_of: dict[int, tuple[int, int]] = {}
        self._names: dict[int, dict[str, Node]] = {}

    @staticmethod
    def root_dir() -> Path:
        return paths.data_dir() / "overlay"

    def folder_dir(self, folder: Folder) -> Path:
        """Where the local overlay of a folder lives: keyed by the object's directory name, so it
        survives remounts and re-rezzing (which changes UUIDs)."""
        root = self.root_dir()
        if folder is self.tree.root:
            return root / "root"
        obj = folder.object_folder
        base = root / "objects" / obj.name
        return base / folder.name if folder.is_child else base

    def dir_of(self, parent: Node) -> str | None:
        """The disk directory holding `parent`'s overlay entries (None where there is none)."""
        if isinstance(parent, OverlayNode):
            return parent.path
        if isinstance(parent, Folder):
            return str(self.folder_dir(parent))
        return None

    def find(self, parent: Node, name: str) -> OverlayNode | None:
        base = self.dir_of(parent)
        if base is None:
            return None
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return self.node(parent, name, path, st)

    def node(self, parent: Node, name: str, path: str, st: os.stat_result | None = None) -> OverlayNode:
        key = KEY_PREFIX + path
        ino = self._inode(parent, key, path, st)
        node = self.tree.node(ino)
        if not isinstance(node, OverlayNode):
            node = OverlayNode(inode=ino, uuid=key, name=name, path=path, overlay_parent=parent)
            self.tree.add_node(node)
        node.uuid, node.path, node.name, node.overlay_parent = key, path, name, parent
        return node

    def _inode(self, parent: Node, key: str, path: str, st: os.stat_result | None) -> int:
        """The path's own inode, or for another name of a file that has one, that file's inode."""
        if st is None:
            try:
                st = os.lstat(path)
            except OSError:
                return self.tree.inode_for(key)
        if stat.S_ISDIR(st.st_mode):
            return self.tree.inode_for(key)
        disk = (st.st_dev, st.st_ino)
        ino = self._by_disk.get(disk)
        node = self.tree.node(ino) if ino is not None else None
        if ino is None or not (isinstance(node, OverlayNode) and _same_file(node.path, disk)):
            # The first name seen of this file, or its inode was forgotten (or the disk inode
            # number reused by another file): the path's own inode.
            ino = self.tree.inode_for(key)
            node = self.tree.node(ino)
        self._by_disk[disk] = ino
        self._disk_of[ino] = disk
        if st.st_nlink > 1:
            self.tree.bind_key(key, ino)
            names = self._names.setdefault(ino, {})
            if isinstance(node, OverlayNode) and node.overlay_parent is not None:
                names.setdefault(node.path, node.overlay_parent)
            names[path] = parent
        return ino

    def moved(self, old_path: str, new_path: str) -> None:
        """After a rename on disk, the node (and for a directory everything below) follows."""
        for key, ino in self.tree.rekey_prefix(KEY_PREFIX + old_path, KEY_PREFIX + new_path):
            path = key[len(KEY_PREFIX):]
            before = old_path + path[len(new_path):]
            names = self._names.get(ino)
            if names is not None and before in names:
                names[path] = names.pop(before)
            node = self.tree.node(ino)
            # A file with several names keeps working through its other name if that one is current.
            if isinstance(node, OverlayNode) and (names is None or node.path == before):
                node.uuid, node.path = key, path

    def adopt_inode(self, path: str, inode: int) -> None:
        """A file becoming overlay content at `path` keeps the kernel inode it had."""
        self.tree.bind_key(KEY_PREFIX + path, inode)

    def removed(self, node: OverlayNode) -> None:
        """The name `node.path` is gone: a new file at that path must get a new inode. A file that
        still has other names lives on under one of them."""
        self.tree.unbind_key(node.uuid, node.inode)
        names = self._names.pop(node.inode, {})
        names.pop(node.path, None)
        disk = self._disk_of.get(node.inode)
        others = {p: parent for p, parent in names.items() if disk is not None and _same_file(p, disk)}
        if others and self.tree.node(node.inode) is node:
            path, parent = next(iter(others.items()))
            node.uuid, node.path, node.name = KEY_PREFIX + path, path, os.path.basename(path)
            node.overlay_parent = parent
            if len(others) > 1:
                self._names[node.inode] = others
            return
        # Its last name, or the inode went to an item (an overlay file renamed onto an item's
        # name): other names of the file are looked up afresh, as a file of their own.
        for path, parent in others.items():
            self.tree.unbind_key(KEY_PREFIX + path, node.inode)
            if isinstance(parent, Folder):
                self.tree.invalidate_entry(parent, os.path.basename(path))
        if disk is not None and self._by_disk.get(disk) == node.inode:
            del self._by_disk[disk]
        self._disk_of.pop(node.inode, None)
        node.overlay_parent = None

    # Disk work the writer runs off the trio thread.

    @staticmethod
    def read(node: OverlayNode) -> bytes:
        with open(node.path, "rb") as f:
            return f.read()

    def write_new(self, parent: Node, name: str, data: bytes) -> str:
        """Write `data` as the overlay file `name` of `parent` (replacing one there atomically)."""
        path = os.path.join(self.ensure(parent), name)
        tmp = path + ".slfs-tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return path

    def unlink(self, node: OverlayNode) -> None:
        os.unlink(node.path)
        self.removed(node)

    # Changes the fs layer asks for on overlay files and directories: made on disk as asked.

    @staticmethod
    def change(node: OverlayNode, *, size: int | None = None, mode: int | None = None, uid: int | None = None,
               gid: int | None = None, atime_ns: int | None = None, mtime_ns: int | None = None) -> None:
        """setattr: each change given (None: unchanged). A symlink's mode is not changed."""
        if size is not None:
            os.truncate(node.path, size)
        if mode is not None and not stat.S_ISLNK(os.lstat(node.path).st_mode):
            os.chmod(node.path, stat.S_IMODE(mode))
        if uid is not None or gid is not None:
            os.lchown(node.path, -1 if uid is None else uid, -1 if gid is None else gid)
        if atime_ns is not None or mtime_ns is not None:
            st = os.lstat(node.path)
            os.utime(node.path, ns=(st.st_atime_ns if atime_ns is None else atime_ns,
                                    st.st_mtime_ns if mtime_ns is None else mtime_ns),
                     follow_symlinks=False)

    def mkdir(self, parent: Folder | OverlayNode, name: str, mode: int) -> OverlayNode:
        path = os.path.join(self.ensure(parent), name)
        os.mkdir(path, mode)
        return self.node(parent, name, path)

    def rmdir(self, node: OverlayNode) -> None:
        os.rmdir(node.path)
        self.removed(node)

    def create(self, parent: Folder | OverlayNode, name: str, flags: int, mode: int) -> tuple[OverlayNode, int]:
        """A new overlay file, opened: its node and the descriptor (the caller's to close)."""
        path = os.path.join(self.ensure(parent), name)
        fd = os.open(path, (flags | os.O_CREAT) & ~os.O_NOCTTY, mode)
        return self.node(parent, name, path), fd

    def symlink(self, parent: Folder | OverlayNode, name: str, target: bytes) -> OverlayNode:
        path = os.path.join(self.ensure(parent), name)
        os.symlink(target, path)
        return self.node(parent, name, path)

    def link(self, node: OverlayNode, parent: Folder | OverlayNode, name: str) -> OverlayNode:
        path = os.path.join(self.ensure(parent), name)
        os.link(node.path, path)
        return self.node(parent, name, path)

    def rename(self, src: OverlayNode, parent: Folder | OverlayNode, name: str, dst: Node | None) -> OverlayNode:
        """Within the overlay: a plain rename on disk, never over an item, a folder or a folder's
        new file (those are remote names)."""
        if isinstance(dst, (Item, Folder)) or (isinstance(dst, NewFile) and dst.folder is not None):
            raise FsError(errno.EEXIST, "")
        path = os.path.join(self.ensure(parent), name)
        if isinstance(dst, OverlayNode):
            self.removed(dst)
        os.rename(src.path, path)
        self.moved(src.path, path)
        return self.node(parent, name, path)

    def move_dir(self, before: Path, after: Path) -> None:
        """A renamed object or prim directory takes its overlay along (when it has one)."""
        if before != after and before.is_dir() and not after.exists():
            self._make_dirs(str(after.parent))
            os.rename(before, after)
            self.moved(str(before), str(after))

    def ensure(self, parent: Node) -> str:
        base = self.dir_of(parent)
        if base is None:
            raise FsError(errno.EPERM, "")
        self._make_dirs(base)
        return base

    def _make_dirs(self, path: str) -> None:
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


def _same_file(path: str, disk: tuple[int, int]) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == disk
