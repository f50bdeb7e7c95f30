"""What each kind of file does under open, read, write, resize, commit and release.

The handlers in operations.py look the node up, check what the kernel asked, and delegate to the
backend of the node's kind (`Files.of`): items (the model's content and the writer's buffer), new
and orphaned files (memory), overlay files (disk), live files (.slfs/live) and control files
(status, sidecars). One dispatch on the node's kind lives here; no handler tests kinds for file data.

The model decides (Writer, Workspace, LiveWrites); a backend translates a kernel request into one
of its calls. A handle follows its inode, not the kind it was opened as: a file renamed or replaced
while open reads and writes what its inode means now (`Files.follow`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

import attrs
import pyfuse3

from ..model.live import LiveScript
from ..model.overlay import Overlay
from ..model.workspace import Workspace
from ..model.writes import Writer
from ..world.fs_errors import FsError
from ..world.tree import Folder, Item, MemoryFile, Node, OverlayNode, Tree
from .virtual import FILE, LINK, Virtual

# A read-only open of fetched content (the warm `grep -r`) gets no Handle: its fh is the item's
# inode plus this (counted handles stay far below it), so open, flush and release touch no table
# and allocate nothing. Its reads follow the inode, as every handle's do.
BARE_FH = 1 << 48

AnyNode = Node | Virtual


@attrs.define(eq=False)
class Handle:
    inode: int
    data: bytes = b""  # snapshot for read-only opens of control files
    fd: int = -1  # overlay files
    writable: bool = False
    # Opened with O_TRUNC and nothing written through it yet: bash's `>` flushes (closes the
    # duplicated fd) before it writes, so such a flush waits; release stores a bare truncation.
    trunc_pending: bool = False
    # Why a write through it was refused whole (EFBIG): later writes through it fail the same way,
    # so a program that goes on writing never lands the rest on the in-world text.
    refused: str = ""

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@attrs.frozen
class Opened:
    """What a backend's open answers: the kernel's FileInfo flags, and the handle to keep (None:
    a bare read-only open, fh BARE_FH + inode)."""

    handle: Handle | None
    keep_cache: bool = False
    direct_io: bool = False


N = TypeVar("N", contravariant=True)


class FileBackend(Protocol[N]):
    """What a kind of file does; N is its node type (Files.of picks the backend by it)."""

    async def open(self, node: N, flags: int) -> Opened: ...

    def read(self, node: N, h: Handle, off: int, size: int) -> bytes | Awaitable[bytes]: ...

    async def write(self, node: N, h: Handle, off: int, buf: bytes) -> int: ...

    async def resize(self, node: N, size: int, *, by_path: bool) -> None: ...

    def set_mode(self, node: N, mode: int) -> None: ...

    async def commit(self, node: N, h: Handle | None, *, durable: bool) -> None: ...


def _wants_write(flags: int) -> bool:
    return flags & os.O_ACCMODE != os.O_RDONLY


class ItemFile:
    """A script or notecard: reads the content the workspace caches, writes the writer's buffer."""

    def __init__(self, ws: Workspace, writer: Writer) -> None:
        self.ws = ws
        self.tree: Tree = ws.tree
        self.writer = writer

    async def open(self, node: Item, flags: int) -> Opened:
        if not node.readable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(node)}: script is not readable "
                          "(needs copy and modify permission)")
        if _wants_write(flags):
            trunc = await self.writer.open_item(node, truncate=bool(flags & os.O_TRUNC))
            return Opened(Handle(node.inode, writable=True, trunc_pending=trunc))
        if node.edit.buffer is not None:  # being edited through another handle: its buffer, uncached
            return Opened(None)
        if not (node.cache.content_valid and node.cache.content is not None):
            await self.ws.content.read_content(node)
        return Opened(None, keep_cache=True)

    def read(self, node: Item, h: Handle, off: int, size: int) -> bytes | Awaitable[bytes]:
        if node.edit.buffer is not None:
            return bytes(node.edit.buffer[off : off + size])
        if h.writable or (node.cache.content_valid and node.cache.content is not None):
            # The kernel keeps one page cache per inode: a handle opened before the content changed
            # must not serve its old copy after the change's invalidation, or the stale pages it
            # brings back outlive every later open (keep_cache). Like a local file, it reads what
            # the file holds now; its own copy only while the new content is still on its way.
            return (node.cache.content or b"")[off : off + size]
        return h.data[off : off + size]

    def read_bare(self, node: Item, off: int, size: int) -> bytes | Awaitable[bytes]:
        """A read through a bare read-only handle: what the file holds now (a local edit's buffer,
        the content, the old content while a newer one is on its way); content dropped since the
        open (a newer revision) is fetched as for a first read."""
        if node.edit.buffer is not None:
            return bytes(node.edit.buffer[off : off + size])
        if node.cache.content is not None:
            return node.cache.content[off : off + size]
        return self._read_fetched(node, off, size)

    async def _read_fetched(self, item: Item, off: int, size: int) -> bytes:
        data = await self.ws.content.read_content(item)
        return data[off : off + size]

    async def write(self, node: Item, h: Handle, off: int, buf: bytes) -> int:
        await self.writer.write_item(node, off, buf)
        return len(buf)

    async def resize(self, node: Item, size: int, *, by_path: bool) -> None:
        await self.writer.resize_item(node, size, by_path=by_path)

    def set_mode(self, node: Item, mode: int) -> None:
        pass  # modes show the in-world permissions

    async def commit(self, node: Item, h: Handle | None, *, durable: bool) -> None:
        await self.writer.commit_item(node)


class MemoryFileBackend:
    """A file created in the mount and not yet in-world, or an orphan (an item file replaced while
    open): its data is in memory, the writer creates it in-world at commit (an orphan never)."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer

    async def open(self, node: MemoryFile, flags: int) -> Opened:
        self.writer.open_memory_file(node, truncate=bool(flags & os.O_TRUNC))
        return Opened(Handle(node.inode, writable=_wants_write(flags)))

    def read(self, node: MemoryFile, h: Handle, off: int, size: int) -> bytes:
        return bytes(node.data[off : off + size])

    async def write(self, node: MemoryFile, h: Handle, off: int, buf: bytes) -> int:
        self.writer.write_memory_file(node, off, buf)
        return len(buf)

    async def resize(self, node: MemoryFile, size: int, *, by_path: bool) -> None:
        self.writer.resize_memory_file(node, size)

    def set_mode(self, node: MemoryFile, mode: int) -> None:
        self.writer.set_memory_file_mode(node, stat.S_IMODE(mode))

    async def commit(self, node: MemoryFile, h: Handle | None, *, durable: bool) -> None:
        await self.writer.commit_new_file(node)


class OverlayFile:
    """A file of the local overlay: a file descriptor on disk. Its other attributes are set by
    Overlay.change (setattr), not here."""

    async def open(self, node: OverlayNode, flags: int) -> Opened:
        fd = os.open(node.path, flags & ~(os.O_CREAT | os.O_EXCL | os.O_NOCTTY))
        return Opened(Handle(node.inode, fd=fd, writable=_wants_write(flags)))

    def read(self, node: OverlayNode, h: Handle, off: int, size: int) -> bytes:
        return os.pread(h.fd, size, off)

    @staticmethod
    def read_bare(node: OverlayNode, off: int, size: int) -> bytes:
        # Renamed to a local name while open: the overlay file took the item's inode.
        fd = os.open(node.path, os.O_RDONLY)
        try:
            return os.pread(fd, size, off)
        finally:
            os.close(fd)

    async def write(self, node: OverlayNode, h: Handle, off: int, buf: bytes) -> int:
        return os.pwrite(h.fd, buf, off)

    async def resize(self, node: OverlayNode, size: int, *, by_path: bool) -> None:
        raise AssertionError("overlay sizes are set by Overlay.change")

    def set_mode(self, node: OverlayNode, mode: int) -> None:
        raise AssertionError("overlay modes are set by Overlay.change")

    async def commit(self, node: OverlayNode, h: Handle | None, *, durable: bool) -> None:
        if durable and h is not None and h.fd >= 0:
            os.fsync(h.fd)


def _live(node: Virtual) -> LiveScript:
    if node.live is None:  # Files.of gives LiveFile only live nodes
        raise FsError(errno.EBADF, f"{node.name} is not a live file")
    return node.live


class LiveFile:
    """A live file (MOUNT/.slfs/live/NAME): the viewer's temp file of a script open in its editor."""

    def __init__(self, writer: Writer) -> None:
        self.live = writer.live

    async def open(self, node: Virtual, flags: int) -> Opened:
        wants_write = _wants_write(flags)
        truncate = bool(flags & os.O_TRUNC) and wants_write
        await self.live.open(_live(node), truncate=truncate)
        # As for items: a flush before the first write (bash closes a duplicate) saves nothing.
        # The viewer rewrites its temp file on its own saves: never a stale page.
        return Opened(Handle(node.inode, writable=wants_write, trunc_pending=truncate), direct_io=True)

    def read(self, node: Virtual, h: Handle, off: int, size: int) -> bytes:
        ls = _live(node)
        return bytes((ls.local if ls.local is not None else ls.shown)[off : off + size])

    async def write(self, node: Virtual, h: Handle, off: int, buf: bytes) -> int:
        if not h.writable:
            raise FsError(errno.EBADF, "")
        self.live.write(_live(node), off, buf)
        return len(buf)

    async def resize(self, node: Virtual, size: int, *, by_path: bool) -> None:
        self.live.resize(_live(node), size)

    def set_mode(self, node: Virtual, mode: int) -> None:
        pass

    async def commit(self, node: Virtual, h: Handle | None, *, durable: bool) -> None:
        await self.live.commit(_live(node))


class ControlFile:
    """A file slfs makes up (status, events, sidecars): a snapshot rendered at open, or a writer
    that acts at write() so `echo bogus > F.state` fails where the shell sees it (bash ignores
    errors from close)."""

    async def open(self, node: Virtual, flags: int) -> Opened:
        wants_write = _wants_write(flags)
        if wants_write and node.writer is None:
            raise FsError(errno.EACCES, f"{node.name} is read-only")
        if node.prepare is not None and not wants_write:
            await node.prepare()
        data = node.render() if node.render is not None and not wants_write else b""
        return Opened(Handle(node.inode, data, writable=wants_write), direct_io=node.direct_io or wants_write)

    def read(self, node: Virtual, h: Handle, off: int, size: int) -> bytes:
        if node.direct_io and node.render is not None and off + size > len(h.data):
            # Growing files (events, logs): a read past the snapshot sees what was added since,
            # so `tail -f` follows them.
            h.data = node.render()
        return h.data[off : off + size]

    async def write(self, node: Virtual, h: Handle, off: int, buf: bytes) -> int:
        if node.writer is None:
            raise FsError(errno.EACCES, "")
        await node.writer(buf)
        return len(buf)

    async def resize(self, node: Virtual, size: int, *, by_path: bool) -> None:
        raise FsError(errno.EACCES, "")

    def set_mode(self, node: Virtual, mode: int) -> None:
        pass

    async def commit(self, node: Virtual, h: Handle | None, *, durable: bool) -> None:
        pass  # control files act at write()


class Files:
    """The backends, and the one place that picks a node's."""

    def __init__(self, ws: Workspace, writer: Writer) -> None:
        self.writer = writer
        self.items = ItemFile(ws, writer)
        self.memory = MemoryFileBackend(writer)
        self.overlay = OverlayFile()
        self.live = LiveFile(writer)
        self.control = ControlFile()

    def of(self, node: AnyNode) -> FileBackend[Any] | None:
        """The backend of a file node; None for directories, symlinks and the like."""
        if isinstance(node, Item):
            return self.items
        if isinstance(node, MemoryFile):
            return self.memory
        if isinstance(node, OverlayNode):
            return self.overlay
        if isinstance(node, Virtual):
            if node.live is not None:
                return self.live
            if node.kind == FILE:
                return self.control
        return None

    @staticmethod
    async def write(backend: FileBackend[Any], node: AnyNode, h: Handle, off: int, buf: bytes) -> int:
        """A write through `h`; one refused whole (EFBIG) refuses every later one through it."""
        if h.refused:
            raise FsError(errno.EFBIG, h.refused)
        try:
            written = await backend.write(node, h, off, buf)
        except FsError as exc:
            if exc.errno == errno.EFBIG:
                h.refused, h.trunc_pending = exc.message, False
            raise
        h.trunc_pending = False
        return written

    async def commit_truncation(self, node: AnyNode | None, h: Handle) -> None:
        """A handle opened with O_TRUNC and never written, at its release: the empty file is stored."""
        h.trunc_pending = False
        backend = self.of(node) if node is not None else None
        if node is not None and backend is not None:
            await backend.commit(node, h, durable=False)

    async def setattr(self, node: AnyNode, attr: pyfuse3.EntryAttributes, fields: pyfuse3.SetattrFields,
                      h: Handle | None) -> None:
        """A setattr: an overlay file's attributes are its own on disk; a size goes to the file's
        backend (through `h` when the kernel names an open file), a mode too, an mtime to the model."""
        if isinstance(node, OverlayNode):
            Overlay.change(node, size=attr.st_size if fields.update_size else None,
                           mode=attr.st_mode if fields.update_mode else None,
                           uid=attr.st_uid if fields.update_uid else None,
                           gid=attr.st_gid if fields.update_gid else None,
                           atime_ns=attr.st_atime_ns if fields.update_atime else None,
                           mtime_ns=attr.st_mtime_ns if fields.update_mtime else None)
            return
        backend = self.of(node)
        if fields.update_size:
            if h is not None:
                h.trunc_pending = False
            if backend is None:
                raise FsError(errno.EACCES if isinstance(node, Virtual) else errno.EISDIR, "")
            await backend.resize(node, attr.st_size, by_path=h is None)
        if fields.update_mode and backend is not None:
            backend.set_mode(node, attr.st_mode)
        if fields.update_mtime and isinstance(node, (Item, MemoryFile, Folder)):
            # rsync -a, cp -p, touch -d: kept (an item's across remounts, until its text changes;
            # a folder's until its listing changes).
            self.writer.set_mtime(node, attr.st_mtime_ns)
        # Other changes to items (owner, atime) are accepted and not kept: modes show the in-world
        # permissions.

    @staticmethod
    def readlink(node: AnyNode) -> bytes:
        """An overlay symlink's target on disk, or a by-id link's (the item's path now)."""
        if isinstance(node, OverlayNode):
            return os.fsencode(os.readlink(node.path))
        if not isinstance(node, Virtual) or node.kind != LINK or node.target is None:
            raise FsError(errno.EINVAL, "")
        target = node.target()
        if target is None:
            raise FsError(errno.ENOENT, "")
        return os.fsencode(target)

    def follow(self, h: Handle, node: AnyNode) -> FileBackend[Any] | None:
        """The backend for what a handle's inode means now, its descriptor made to match: an
        overlay file renamed onto an item's name while open (gedit) writes the item next, and an
        item renamed to a local name while open reads the overlay file."""
        backend = self.of(node)
        if backend is self.overlay:
            assert isinstance(node, OverlayNode)
            if h.fd < 0:
                h.fd = os.open(node.path, os.O_RDWR if h.writable else os.O_RDONLY)
        else:
            h.close()
        return backend

    def read_bare(self, node: AnyNode, off: int, size: int) -> bytes | Awaitable[bytes]:
        if isinstance(node, Item):
            return self.items.read_bare(node, off, size)
        if isinstance(node, MemoryFile):  # a file renamed over the item while open takes its inode
            return bytes(node.data[off : off + size])
        if isinstance(node, OverlayNode) and not os.path.isdir(node.path):
            return self.overlay.read_bare(node, off, size)
        raise FsError(errno.EBADF, f"inode {node.inode} is no longer a file")

    @staticmethod
    def info(fh: int, opened: Opened, inode: int) -> pyfuse3.FileInfo:
        if opened.handle is None:
            return pyfuse3.FileInfo(fh=BARE_FH + inode, keep_cache=opened.keep_cache)
        return pyfuse3.FileInfo(fh=fh, keep_cache=opened.keep_cache, direct_io=opened.direct_io)
