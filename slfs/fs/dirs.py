"""What each kind of directory does under lookup, opendir and the calls that make, remove or move
a name in it, as files.py's backends do for file data.

The kinds: an in-world folder (its items, prims and new files, with its overlay entries beside
them), an overlay directory (disk), a control directory (`.slfs` and the directories in it) and
the live directory (`.slfs/live`: a control directory where tools' temp files may be made). Files,
symlinks and control files are no directory: nothing is found in them and nothing made.

The handlers in operations.py pick the backend of the parent's kind (`Dirs.of`) and delegate.
Whether a name made in a folder goes in-world or to the overlay is the model's rule
(model/routing.py), asked here and nowhere else in the fs layer.
"""

from __future__ import annotations

import errno
import os
from typing import Any, Protocol, TypeVar

from ..model import attribute_writes
from ..model.overlay import Overlay
from ..model.routing import goes_local
from ..model.workspace import Workspace
from ..model.writes import Writer
from ..world import names
from ..world.fs_errors import FsError
from ..world.tree import ROOT_INODE, Folder, Item, NewFile, Node, OverlayNode, Tree
from .attributes import Attributes
from .control_dir import Control
from .files import Handle
from .listings import Listing, Listings
from .virtual import FILE, LINK, LIVE, Virtual

AnyNode = Node | Virtual

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2

D = TypeVar("D", contravariant=True)


class DirBackend(Protocol[D]):
    """What a kind of directory does; D is its node type (Dirs.of picks the backend by it).
    `mode` is the one the file is made with (the caller's umask applied)."""

    def find(self, d: D, name: str) -> AnyNode | None: ...

    def listing(self, d: D, epoch: int) -> Listing: ...

    def mkdir(self, d: D, name: str, mode: int) -> Node: ...

    def rmdir(self, d: D, node: AnyNode) -> None: ...

    def symlink(self, d: D, name: str, target: bytes) -> Node: ...

    def link(self, node: AnyNode, d: D, name: str) -> Node: ...

    async def create(self, d: D, name: str, flags: int, mode: int) -> tuple[Node, Handle]: ...

    async def unlink(self, d: D, node: AnyNode) -> None: ...

    async def rename(self, d: D, old: str, src: AnyNode, dst_parent: AnyNode, new: str, dst: AnyNode | None,
                     flags: int) -> None: ...


class NotADir:
    """A file, a symlink or a control file: nothing is found in it, and no name made."""

    def find(self, d: AnyNode, name: str) -> AnyNode | None:
        return None

    def listing(self, d: AnyNode, epoch: int) -> Listing:
        raise FsError(errno.ENOTDIR, "")

    def mkdir(self, d: AnyNode, name: str, mode: int) -> Node:
        raise FsError(errno.EPERM, "")

    def rmdir(self, d: AnyNode, node: AnyNode) -> None:
        raise FsError(errno.ENOTDIR, "")

    def symlink(self, d: AnyNode, name: str, target: bytes) -> Node:
        raise FsError(errno.EPERM, "")

    def link(self, node: AnyNode, d: AnyNode, name: str) -> Node:
        raise FsError(errno.EPERM, f"link {name}: hard links exist only in the local overlay")

    async def create(self, d: AnyNode, name: str, flags: int, mode: int) -> tuple[Node, Handle]:
        raise FsError(errno.EPERM, f"{name}: objects cannot be created from the file system")

    async def unlink(self, d: AnyNode, node: AnyNode) -> None:
        raise FsError(errno.EPERM, "")

    async def rename(self, d: AnyNode, old: str, src: AnyNode, dst_parent: AnyNode, new: str, dst: AnyNode | None,
                     flags: int) -> None:
        raise FsError(errno.EPERM, "")


class Moves:
    """A name of an in-world folder or an overlay directory renamed: a prim within its object, a
    file within the overlay, to it (model's Writer.move_to_overlay) or in-world (rename_to_remote),
    where the routing rule sends its new name."""

    def __init__(self, tree: Tree, writer: Writer, overlay: Overlay, attributes: Attributes) -> None:
        self.tree = tree
        self.writer = writer
        self.overlay = overlay
        self.attributes = attributes

    async def move(self, src_parent: Folder | OverlayNode, old: str, src: AnyNode, dst_parent: AnyNode, new: str,
                   dst: AnyNode | None) -> None:
        if isinstance(src, Virtual) or isinstance(dst, Virtual) or isinstance(dst_parent, Virtual):
            raise FsError(errno.EPERM, "")
        if isinstance(src, Folder):
            if dst_parent is not src.parent or dst is not None:
                raise FsError(errno.EXDEV if dst is None else errno.EEXIST, "")
            await self.writer.rename_folder(src, new)
            return
        if not isinstance(dst_parent, (Folder, OverlayNode)):
            raise FsError(errno.ENOTDIR, "")  # the kernel asks only for directories
        if goes_local(dst_parent, new):
            if isinstance(src, OverlayNode):
                self.overlay.rename(src, dst_parent, new, dst)  # within the overlay
                return
            await self.writer.move_to_overlay(src, src_parent, old, dst_parent, new, dst)
            return
        assert isinstance(dst_parent, Folder)  # all of an overlay directory is local
        if isinstance(dst, Item):  # rsync -aX: its temporary file's attributes must be the item's
            attribute_writes.check_rename(src, old, new, self.tree.path_of(dst), self.attributes.xattrs(dst))
        await self.writer.rename_to_remote(src, src_parent, old, dst_parent, new, dst)


class InWorldDir:
    """A folder of the tree (the mount root, an object, a prim): its items and prims, its new
    files, its hidden `.slfs`, and the overlay entries the routing rule sends beside them."""

    def __init__(self, ws: Workspace, writer: Writer, overlay: Overlay, control: Control, listings: Listings,
                 moves: Moves) -> None:
        self.ws = ws
        self.tree = ws.tree
        self.writer = writer
        self.overlay = overlay
        self.control = control
        self.listings = listings
        self.moves = moves

    def find(self, d: Folder, name: str) -> AnyNode | None:
        if name == names.CONTROL_DIR:
            return self.control.control_dir(d)
        node = d.entries.get(name) or d.new_files.get(name)
        return node or self.overlay.find(d, name)

    def listing(self, d: Folder, epoch: int) -> Listing:
        if d.inode != ROOT_INODE:
            self.ws.content.start_prefetch(d)
        return self.listings.of_folder(d, epoch)

    def mkdir(self, d: Folder, name: str, mode: int) -> Node:
        if not goes_local(d, name):
            raise FsError(errno.EPERM, f"mkdir {name}: prims cannot be created from the file system; "
                          "only overlay (dot) directories")
        if self.find(d, name) is not None:
            raise FsError(errno.EEXIST, "")
        return self.overlay.mkdir(d, name, mode)

    def rmdir(self, d: Folder, node: AnyNode) -> None:
        if isinstance(node, OverlayNode):
            self.overlay.rmdir(node)
            return
        if isinstance(node, Folder):
            raise FsError(errno.EPERM, f"{self.tree.path_of(node)}: prims cannot be deleted from the file system")
        raise FsError(errno.ENOTDIR, "")

    def symlink(self, d: Folder, name: str, target: bytes) -> Node:
        if not goes_local(d, name):
            raise FsError(errno.EPERM, f"symlink {name}: in-world folders hold only scripts and notecards")
        return self.overlay.symlink(d, name, target)

    def link(self, node: AnyNode, d: Folder, name: str) -> Node:
        if not isinstance(node, OverlayNode) or not goes_local(d, name):
            raise FsError(errno.EPERM, f"link {name}: hard links exist only in the local overlay")
        return self.overlay.link(node, d, name)

    async def create(self, d: Folder, name: str, flags: int, mode: int) -> tuple[Node, Handle]:
        if goes_local(d, name):
            node, fd = self.overlay.create(d, name, flags, mode)
            return node, Handle(node.inode, fd=fd, writable=True)
        if d.inode == ROOT_INODE:
            raise FsError(errno.EPERM, f"{name}: objects cannot be created from the file system")
        await self.writer.check_can_create(d, name)
        new = self.writer.new_file(d, name)
        # A new file (MemoryFile) is created in-world when it is written, or at its release if it
        # never is; an item re-created after an rm starts empty and is saved likewise. Flushes
        # before the first write wait (bash closes a duplicate first): saved then, the empty
        # text would be refused by older viewers and the write land on the old text.
        return new, Handle(new.inode, writable=True, trunc_pending=True)

    async def unlink(self, d: Folder, node: AnyNode) -> None:
        if isinstance(node, OverlayNode):
            self.overlay.unlink(node)
        elif isinstance(node, Node):
            await self.writer.remove(d, node)
        else:
            raise FsError(errno.EPERM, "")

    async def rename(self, d: Folder, old: str, src: AnyNode, dst_parent: AnyNode, new: str, dst: AnyNode | None,
                     flags: int) -> None:
        await self.moves.move(d, old, src, dst_parent, new, dst)


class OverlayDir:
    """A directory of the local overlay (on disk): everything made in it is local."""

    def __init__(self, overlay: Overlay, listings: Listings, moves: Moves) -> None:
        self.overlay = overlay
        self.listings = listings
        self.moves = moves

    def find(self, d: OverlayNode, name: str) -> AnyNode | None:
        return self.overlay.find(d, name)

    def listing(self, d: OverlayNode, epoch: int) -> Listing:
        if not os.path.isdir(d.path):
            raise FsError(errno.ENOTDIR, "")
        return Listing(sorted(self.listings.overlay_entries(d, d.path).items()))

    def mkdir(self, d: OverlayNode, name: str, mode: int) -> Node:
        return self.overlay.mkdir(d, name, mode)

    def rmdir(self, d: OverlayNode, node: AnyNode) -> None:
        if not isinstance(node, OverlayNode):
            raise FsError(errno.ENOTDIR, "")
        self.overlay.rmdir(node)

    def symlink(self, d: OverlayNode, name: str, target: bytes) -> Node:
        return self.overlay.symlink(d, name, target)

    def link(self, node: AnyNode, d: OverlayNode, name: str) -> Node:
        if not isinstance(node, OverlayNode):
            raise FsError(errno.EPERM, f"link {name}: hard links exist only in the local overlay")
        return self.overlay.link(node, d, name)

    async def create(self, d: OverlayNode, name: str, flags: int, mode: int) -> tuple[Node, Handle]:
        node, fd = self.overlay.create(d, name, flags, mode)
        return node, Handle(node.inode, fd=fd, writable=True)

    async def unlink(self, d: OverlayNode, node: AnyNode) -> None:
        if not isinstance(node, OverlayNode):
            raise FsError(errno.EPERM, "")
        self.overlay.unlink(node)

    async def rename(self, d: OverlayNode, old: str, src: AnyNode, dst_parent: AnyNode, new: str,
                     dst: AnyNode | None, flags: int) -> None:
        await self.moves.move(d, old, src, dst_parent, new, dst)


class ControlDir:
    """A control directory (`.slfs`, by-id/, syntax/, the history view's): what fs/control_dir.py makes
    up, read-only; no name is made in it, as in a file."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self.closed = NotADir()

    def find(self, d: Virtual, name: str) -> AnyNode | None:
        return self.control.lookup(d, name)

    def listing(self, d: Virtual, epoch: int) -> Listing:
        return Listing(sorted(self.rows(d)))

    def rows(self, d: Virtual) -> list[tuple[str, int]]:
        """(name, inode) of what the directory holds, unsorted."""
        return [(v.name, v.inode) for v in self.control.children(d)]

    def mkdir(self, d: Virtual, name: str, mode: int) -> Node:
        return self.closed.mkdir(d, name, mode)

    def rmdir(self, d: Virtual, node: AnyNode) -> None:
        self.closed.rmdir(d, node)

    def symlink(self, d: Virtual, name: str, target: bytes) -> Node:
        return self.closed.symlink(d, name, target)

    def link(self, node: AnyNode, d: Virtual, name: str) -> Node:
        return self.closed.link(node, d, name)

    async def create(self, d: Virtual, name: str, flags: int, mode: int) -> tuple[Node, Handle]:
        return await self.closed.create(d, name, flags, mode)

    async def unlink(self, d: Virtual, node: AnyNode) -> None:
        await self.closed.unlink(d, node)

    async def rename(self, d: Virtual, old: str, src: AnyNode, dst_parent: AnyNode, new: str, dst: AnyNode | None,
                     flags: int) -> None:
        await self.closed.rename(d, old, src, dst_parent, new, dst, flags)


class LiveDir:
    """`.slfs/live`: the live files and their sidecars (a control directory), and the temp files
    tools make beside a live file and rename over it (sed -i, perl -pi), which save it."""

    def __init__(self, ws: Workspace, writer: Writer, control: ControlDir) -> None:
        self.ws = ws
        self.live = writer.live
        self.control = control

    def find(self, d: Virtual, name: str) -> AnyNode | None:
        found = self.control.find(d, name)
        if found is None:
            return self.ws.live.new_files.get(name)  # sed -i's temp file, say
        return found

    def listing(self, d: Virtual, epoch: int) -> Listing:
        rows = self.control.rows(d)
        rows += [(name, n.inode) for name, n in self.ws.live.new_files.items()]
        return Listing(sorted(rows))

    def mkdir(self, d: Virtual, name: str, mode: int) -> Node:
        return self.control.mkdir(d, name, mode)

    def rmdir(self, d: Virtual, node: AnyNode) -> None:
        self.control.rmdir(d, node)

    def symlink(self, d: Virtual, name: str, target: bytes) -> Node:
        return self.control.symlink(d, name, target)

    def link(self, node: AnyNode, d: Virtual, name: str) -> Node:
        return self.control.link(node, d, name)

    async def create(self, d: Virtual, name: str, flags: int, mode: int) -> tuple[Node, Handle]:
        # A tool's temp file (sed -i, perl -pi), saved by its rename over a live file.
        node = self.live.new_file(name)
        return node, Handle(node.inode, writable=True)

    async def unlink(self, d: Virtual, node: AnyNode) -> None:
        if not (isinstance(node, NewFile) and node.live):
            raise FsError(errno.EPERM, "")
        self.live.remove(node)

    async def rename(self, d: Virtual, old: str, src: AnyNode, dst_parent: AnyNode, new: str, dst: AnyNode | None,
                     flags: int) -> None:
        """A temp file renamed: over a live file it is saved into it (sed -i)."""
        if not (isinstance(src, NewFile) and src.live):
            raise FsError(errno.EPERM, "")
        if dst_parent is not d:
            raise FsError(errno.EXDEV, "")  # mv copies it instead
        if isinstance(dst, Virtual) and dst.live is None:
            raise FsError(errno.EPERM, "")  # a sidecar (.diag, .log, .state)
        ls = await self.live.rename(src, new, replace=not flags & RENAME_NOREPLACE)
        if ls is not None:
            # The kernel's entry for `new` now holds the renamed file's inode: the live file's node
            # is made on it now (its count stays with the inode).
            self.control.find(d, new)


class Dirs:
    """The directory backends, and the one place that picks a node's."""

    def __init__(self, ws: Workspace, writer: Writer, overlay: Overlay, control: Control, listings: Listings,
                 attributes: Attributes) -> None:
        moves = Moves(ws.tree, writer, overlay, attributes)
        self.folders = InWorldDir(ws, writer, overlay, control, listings, moves)
        self.overlay = OverlayDir(overlay, listings, moves)
        self.control = ControlDir(control)
        self.live = LiveDir(ws, writer, self.control)
        self.none = NotADir()

    def of(self, node: AnyNode) -> DirBackend[Any]:
        if isinstance(node, Folder):
            return self.folders
        if isinstance(node, OverlayNode):
            return self.overlay
        if isinstance(node, Virtual) and node.kind not in (FILE, LINK):
            return self.live if node.kind == LIVE else self.control
        return self.none
