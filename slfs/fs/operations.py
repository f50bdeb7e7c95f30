"""The pyfuse3 Operations: thin handlers over the workspace's tree.

Every handler runs under `guarded` (guarded.py): counted and timed, FsError answered with its
errno, any other exception with EIO and a traceback. Kernel cache invalidation is only ever issued from the
background `invalidator` task: a synchronous invalidate_entry from inside a handler deadlocks.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import stat
import sys
from collections.abc import Awaitable, Sequence
from typing import Any

import attrs
import pyfuse3
import trio

from ..model import names
from ..model.errors import FsError
from ..model.naming_rules import is_overlay_name
from ..model.options import Debug
from ..model.overlay import Overlay
from ..model.tree import (
    ROOT_INODE,
    EntryChanged,
    Folder,
    InodeChanged,
    Invalidation,
    Item,
    MemoryFile,
    NewFile,
    Node,
    OverlayNode,
)
from ..model.workspace import Workspace
from ..model.writes import Writer
from ..stats import Stats
from .attributes import XATTR_PREFIX, Attributes
from .control import FILE, LINK, LIVE, Control, Virtual
from .guarded import bind_handlers, guarded, guarded_sync
from .listings import Listing, Listings
from .lookups import Lookups
from .warm import WarmOpens

log = logging.getLogger(__name__)

_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


# A read-only open of fetched content (the warm `grep -r`) gets no Handle: its fh is the item's
# inode plus this (counted handles stay far below it), so open, flush and release touch no table
# and allocate nothing. Its reads follow the inode, as every handle's do.
BARE_FH = 1 << 48
_ACCMODE = os.O_ACCMODE

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


@attrs.define(eq=False)
class Handle:
    inode: int
    data: bytes = b""  # snapshot for read-only opens of control files
    fd: int = -1  # overlay files
    writable: bool = False
    # Opened with O_TRUNC and nothing written through it yet: bash's `>` flushes (closes the
    # duplicated fd) before it writes, so such a flush waits; release stores a bare truncation.
    trunc_pending: bool = False


class Operations(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False
    enable_acl = False

    def __init__(self, ws: Workspace, writer: Writer, overlay: Overlay, control: Control, *, lookups: Lookups,
                 stats: Stats, debug: Debug | None = None) -> None:
        super().__init__()
        self.stats = stats
        bind_handlers(self, stats)
        self.ws = ws
        self.tree = ws.tree
        self.writer = writer
        self.overlay = overlay
        self.control = control
        self.lookups = lookups  # the kernel's counts; ws.tree asks them through kernel_knows
        self._handles: dict[int, Handle] = {}
        self._dir_handles: dict[int, Listing] = {}
        self.listings = Listings(ws.tree, overlay)
        self._fh = itertools.count(1)
        debug = debug or Debug()
        self._fault = debug.fault
        self._check_listings = debug.check_listings  # the test suite's check (model/options.py Debug)
        # Moves on every change the model reports and after every handler that waited (whatever
        # may have changed meanwhile): a listing replays the attributes of the epoch it built them
        # at, never older ones.
        self.shown_epoch = 0
        self.warm = WarmOpens()
        self.attributes = Attributes(ws.tree, ws.options)
        # What the workspace's fan-out tells of each invalidation report (build_services connects it).
        self.invalidation_listeners = (self.attributes.changed, self._listing_changed)

    # --- Service: what `.slfs/status` shows of the kernel side

    def on_event(self, event: dict[str, Any]) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {"kernel_refs": self.lookups.total()}

    # --- kernel cache invalidation ------------------------------------------------------------

    async def invalidator(self) -> None:
        """Apply the tree's invalidations, merged while they wait, outside any request handler:
        names at once (invalidate_entry_async queues them), inodes in one thread trip per batch."""
        while True:
            inodes: list[tuple[int, bool]] = []
            for inv in await self.ws.invalidations.take():
                if isinstance(inv, EntryChanged):
                    self.stats.invalidated("entry")
                    try:
                        pyfuse3.invalidate_entry_async(inv.parent, os.fsencode(names.encodable(inv.name)),
                                                       ignore_enoent=True)
                    except Exception:
                        log.exception("cache invalidation failed for %r", inv)
                elif isinstance(inv, InodeChanged):
                    self.stats.invalidated("inode")
                    inodes.append((inv.inode, not inv.data))
            if inodes:
                await trio.to_thread.run_sync(self._invalidate_inodes, inodes)

    @staticmethod
    def _invalidate_inodes(inodes: list[tuple[int, bool]]) -> None:
        for inode, attr_only in inodes:
            try:
                pyfuse3.invalidate_inode(inode, attr_only)
            except OSError as exc:
                # The kernel side is going away (unmount) or no longer knows the inode: nothing
                # cached to drop. Not worth a traceback.
                if exc.errno != errno.ENOENT:
                    log.debug("cache invalidation of inode %d: %s", inode, exc)
            except Exception:
                log.exception("cache invalidation failed for inode %d", inode)

    # --- attributes ----------------------------------------------------------------------------

    def _node(self, inode: int) -> Node | Virtual:
        node = self.tree.node(inode) or self.control.nodes.get(inode)
        if node is None:
            raise FsError(errno.ENOENT, f"inode {inode} is gone")
        return node

    def _counted(self, node: Node | Virtual) -> pyfuse3.EntryAttributes:
        """Attributes for a reply that hands the kernel a reference (lookup, create, readdirplus)."""
        attr = self.attributes.entry(node)
        self.lookups.add(node.inode)
        return attr

    # --- lookup and attributes ---------------------------------------------------------------

    def _lookup(self, parent: Node | Virtual, name: str) -> Node | Virtual | None:
        if isinstance(parent, Folder):
            if name == names.CONTROL_DIR:
                return self.control.control_dir(parent)
            node = parent.entries.get(name) or parent.new_files.get(name)
            return node or self.overlay.find(parent, name)
        if isinstance(parent, OverlayNode):
            return self.overlay.find(parent, name)
        if isinstance(parent, Virtual):
            found = self.control.lookup(parent, name)
            if found is None and parent.kind == LIVE:
                return self.ws.live.new_files.get(name)  # sed -i's temp file, say
            return found
        return None

    @guarded_sync
    def lookup(self, parent_inode: int, name: bytes,
               ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes | Awaitable[pyfuse3.EntryAttributes]:
        sname = name.decode(_FS_ENCODING, _FS_ERRORS)  # os.fsdecode, without its checks
        if self._fault and sname == self._fault:
            raise RuntimeError(f"fault injected on lookup of {sname!r}")
        parent = self._node(parent_inode)
        if sname == ".":
            return self._counted(parent)
        if sname == "..":
            up = parent.parent if isinstance(parent, Node) else self._node(parent.parent_inode)
            return self._counted(up or self.tree.root)
        node = self._lookup(parent, sname)
        if isinstance(node, Item) and node.size is None:
            return self._lookup_fetched(parent, sname, node)
        if node is None:
            raise FsError(errno.ENOENT, "")
        return self._counted(node)

    async def _lookup_fetched(self, parent: Node | Virtual, sname: str, item: Item) -> pyfuse3.EntryAttributes:
        # The kernel keeps st_size from this reply, and an O_APPEND write appends at it: make it
        # exact, as getattr does (a fetch that fails fails the lookup, and is not cached).
        await self.ws.read_content(item)
        node = self._lookup(parent, sname)  # it may have moved meanwhile
        if node is None:
            raise FsError(errno.ENOENT, "")
        return self._counted(node)

    @guarded_sync
    def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            if self.lookups.forget(inode, count):
                self.tree.forgotten(inode)

    @guarded_sync
    def getattr(self, inode: int,
                ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes | Awaitable[pyfuse3.EntryAttributes]:
        node = self._node(inode)
        if isinstance(node, Item) and node.size is None:
            return self._getattr_fetched(node)
        return self.attributes.entry(node)

    async def _getattr_fetched(self, item: Item) -> pyfuse3.EntryAttributes:
        # st_size must be exact whenever a program can see it (git reads exactly st_size).
        await self.ws.read_content(item)
        return self.attributes.entry(item)

    @guarded
    async def setattr(self, inode: int, attr: pyfuse3.EntryAttributes, fields: pyfuse3.SetattrFields,
                      fh: int | None, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        node = self._node(inode)
        if isinstance(node, OverlayNode):
            self.overlay.change(node, size=attr.st_size if fields.update_size else None,
                                mode=attr.st_mode if fields.update_mode else None,
                                uid=attr.st_uid if fields.update_uid else None,
                                gid=attr.st_gid if fields.update_gid else None,
                                atime_ns=attr.st_atime_ns if fields.update_atime else None,
                                mtime_ns=attr.st_mtime_ns if fields.update_mtime else None)
            return self.attributes.entry(node)
        if fields.update_size:
            h = self._handles.get(fh) if fh is not None else None
            if h is not None:
                h.trunc_pending = False
            if isinstance(node, Item):
                await self.writer.resize_item(node, attr.st_size, by_path=h is None)
            elif isinstance(node, MemoryFile):
                self.writer.resize_memory_file(node, attr.st_size)
            elif isinstance(node, Virtual) and node.live is not None:
                self.writer.live.resize(node.live, attr.st_size)
            else:
                raise FsError(errno.EACCES if isinstance(node, Virtual) else errno.EISDIR, "")
        if fields.update_mode and isinstance(node, MemoryFile):
            self.writer.set_memory_file_mode(node, stat.S_IMODE(attr.st_mode))
        # Other changes to items (mode, owner, times) are accepted and not kept: modes show the
        # in-world permissions and mtime only moves when the content does.
        return self.attributes.entry(node)

    @guarded
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        node = self._node(inode)
        if isinstance(node, OverlayNode):
            return os.fsencode(os.readlink(node.path))
        if not isinstance(node, Virtual) or node.kind != LINK or node.target is None:
            raise FsError(errno.EINVAL, "")
        target = node.target()
        if target is None:
            raise FsError(errno.ENOENT, "")
        return os.fsencode(target)

    @guarded_sync
    def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        # Answered locally: VS Code and editors call statfs constantly.
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = 4096
        s.f_blocks = s.f_bfree = s.f_bavail = 1 << 20
        s.f_files = s.f_ffree = s.f_favail = 1 << 20
        s.f_namemax = 255
        return s

    # --- directories -------------------------------------------------------------------------

    @guarded_sync
    def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        cached = self.listings.cached(inode, self.shown_epoch)
        if cached is not None:  # listed before (a warm `find`): the same listing while all holds
            fh = next(self._fh)
            self._dir_handles[fh] = cached
            return fh
        node = self._node(inode)
        if isinstance(node, Folder):
            if node.inode != ROOT_INODE:
                self.ws.start_prefetch(node)
            listing = self.listings.of_folder(node, self.shown_epoch)
        elif isinstance(node, OverlayNode):
            if not os.path.isdir(node.path):
                raise FsError(errno.ENOTDIR, "")
            listing = Listing(sorted(self.listings.overlay_entries(node, node.path).items()))
        elif isinstance(node, Virtual) and node.kind not in (FILE, LINK):
            rows = [(v.name, v.inode) for v in self.control.children(node)]
            if node.kind == LIVE:
                rows += [(name, n.inode) for name, n in self.ws.live.new_files.items()]
            listing = Listing(sorted(rows))
        else:
            raise FsError(errno.ENOTDIR, "")
        fh = next(self._fh)
        self._dir_handles[fh] = listing
        return fh

    def _listing_changed(self, inv: Invalidation) -> None:
        """PendingInvalidations listener: no listing replays attributes from before a change, and a
        folder whose names or attributes changed lists afresh."""
        self.shown_epoch += 1
        self.listings.changed(inv)

    @guarded_sync
    def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        # Offsets are positions in the snapshot taken at opendir, so a listing stays consistent
        # while objects come and go.
        listing = self._dir_handles.get(fh)
        if listing is None:
            return
        reply = pyfuse3.readdir_reply
        entry = self.attributes.entry
        names, encoded = listing.names, listing.encoded
        nodes = listing.nodes
        folder = listing.folder
        if nodes is not None and folder is not None and folder.entries is listing.source:
            # The folder's names are the listing's (its mapping is replaced on every change):
            # entries detached since are skipped; the attributes replay while nothing changed.
            replies = listing.replies_at(self.shown_epoch, self.attributes.replayable)
            check = self._check_listings
            for i in range(start_id, len(nodes)):
                node = nodes[i]
                if node.parent is not folder:
                    continue
                attr = replies[i]
                if attr is None:
                    attr = entry(node)
                elif check:
                    self.attributes.check_replay(node, attr)
                if not reply(token, encoded[i], attr, i + 1):
                    return
                self.lookups.add(node.inode)
            return
        if nodes is not None:  # a folder's entries (items and prims), the nodes themselves
            for i in range(start_id, len(nodes)):
                node = nodes[i]
                parent = node.parent
                if parent is None or parent.entries.get(names[i]) is not node:
                    continue  # gone or renamed since: its entry would bring the old name back
                if not reply(token, encoded[i], entry(node), i + 1):
                    return
                self.lookups.add(node.inode)
            return
        inodes = listing.inodes
        for i in range(start_id, len(inodes)):
            name, inode = names[i], inodes[i]
            found = self.tree.node(inode) or self.control.nodes.get(inode)
            if found is None:
                continue
            if isinstance(found, (Item, Folder)) and found.inode != ROOT_INODE and (
                    found.parent is None or found.parent.entries.get(name) is not found):
                continue  # gone or renamed since opendir: its entry would bring the old name back
            try:
                attr = entry(found)
            except OSError:
                continue  # an overlay file removed meanwhile
            if not reply(token, encoded[i], attr, i + 1):
                return
            self.lookups.add(found.inode)

    @guarded_sync
    def releasedir(self, fh: int) -> None:
        self._dir_handles.pop(fh, None)

    @guarded
    async def mkdir(self, parent_inode: int, name: bytes, mode: int,
                    ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._node(parent_inode)
        sname = os.fsdecode(name)
        if isinstance(parent, Folder) and not is_overlay_name(sname):
            raise FsError(errno.EPERM, f"mkdir {sname}: prims cannot be created from the file system; "
                          "only overlay (dot) directories")
        if not isinstance(parent, (Folder, OverlayNode)):
            raise FsError(errno.EPERM, "")
        if isinstance(parent, Folder) and self._lookup(parent, sname) is not None:
            raise FsError(errno.EEXIST, "")
        return self._counted(self.overlay.mkdir(parent, sname, mode & ~ctx.umask))

    @guarded
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._node(parent_inode)
        node = self._lookup(parent, os.fsdecode(name))
        if node is None:
            raise FsError(errno.ENOENT, "")
        if isinstance(node, OverlayNode):
            self.overlay.rmdir(node)
            return
        if isinstance(node, Folder):
            raise FsError(errno.EPERM, f"{self.tree.path_of(node)}: prims cannot be deleted from the file system")
        raise FsError(errno.ENOTDIR, "")

    @guarded
    async def symlink(self, parent_inode: int, name: bytes, target: bytes,
                      ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._node(parent_inode)
        sname = os.fsdecode(name)
        if isinstance(parent, Folder) and not is_overlay_name(sname):
            raise FsError(errno.EPERM, f"symlink {sname}: in-world folders hold only scripts and notecards")
        if not isinstance(parent, (Folder, OverlayNode)):
            raise FsError(errno.EPERM, "")
        return self._counted(self.overlay.symlink(parent, sname, target))

    @guarded
    async def link(self, inode: int, new_parent_inode: int, new_name: bytes,
                   ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        node = self._node(inode)
        parent = self._node(new_parent_inode)
        sname = os.fsdecode(new_name)
        if not isinstance(node, OverlayNode) or not isinstance(parent, (Folder, OverlayNode)) or (
                isinstance(parent, Folder) and not is_overlay_name(sname)):
            raise FsError(errno.EPERM, f"link {sname}: hard links exist only in the local overlay")
        return self._counted(self.overlay.link(node, parent, sname))

    # --- files -------------------------------------------------------------------------------

    @guarded_sync
    def open(self, inode: int, flags: int,
             ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo | Awaitable[pyfuse3.FileInfo]:
        if not flags & _ACCMODE:
            # The warm read (grep -r): a read-only open of fetched content, no lock, await or log,
            # known at a glance for an inode whose last such open was one while nothing changed.
            warm = self.warm
            if warm.known(inode, self.shown_epoch):
                if self._check_listings:
                    warm.check(inode, self.tree.nodes.get(inode))
                return pyfuse3.FileInfo(fh=BARE_FH + inode, keep_cache=True)
            if warm.is_warm(self.tree.nodes.get(inode)):
                warm.mark(inode)
                return pyfuse3.FileInfo(fh=BARE_FH + inode, keep_cache=True)
        return self._open(inode, flags)

    async def _open(self, inode: int, flags: int) -> pyfuse3.FileInfo:
        node = self._node(inode)
        accmode = flags & os.O_ACCMODE
        wants_write = accmode != os.O_RDONLY
        fh = next(self._fh)
        if isinstance(node, Folder):
            raise FsError(errno.EISDIR, "")
        if isinstance(node, Virtual) and node.live is not None:
            truncate = bool(flags & os.O_TRUNC) and wants_write
            await self.writer.live.open(node.live, truncate=truncate)
            # As for items: a flush before the first write (bash closes a duplicate) saves nothing.
            self._handles[fh] = Handle(node.inode, writable=wants_write, trunc_pending=truncate)
            # The viewer rewrites its temp file on its own saves: never a stale page.
            return pyfuse3.FileInfo(fh=fh, direct_io=True, keep_cache=False)
        if isinstance(node, Virtual):
            if node.kind != FILE:
                raise FsError(errno.EINVAL, "")
            if wants_write and node.writer is None:
                raise FsError(errno.EACCES, f"{node.name} is read-only")
            if node.prepare is not None and not wants_write:
                await node.prepare()
            data = node.render() if node.render is not None and not wants_write else b""
            self._handles[fh] = Handle(node.inode, data, writable=wants_write)
            return pyfuse3.FileInfo(fh=fh, direct_io=node.direct_io or wants_write, keep_cache=False)
        if isinstance(node, OverlayNode):
            fd = os.open(node.path, flags & ~(os.O_CREAT | os.O_EXCL | os.O_NOCTTY))
            self._handles[fh] = Handle(node.inode, fd=fd, writable=wants_write)
            return pyfuse3.FileInfo(fh=fh, keep_cache=False)
        if isinstance(node, MemoryFile):
            self.writer.open_memory_file(node, truncate=bool(flags & os.O_TRUNC))
            self._handles[fh] = Handle(node.inode, writable=wants_write)
            return pyfuse3.FileInfo(fh=fh, keep_cache=False)
        assert isinstance(node, Item)
        if not node.readable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(node)}: script is not readable "
                          "(needs copy and modify permission)")
        if wants_write:
            trunc = await self.writer.open_item(node, truncate=bool(flags & os.O_TRUNC))
            self._handles[fh] = Handle(node.inode, writable=True, trunc_pending=trunc)
            return pyfuse3.FileInfo(fh=fh, keep_cache=False)
        if node.edit.buffer is not None:  # being edited through another handle: its buffer, uncached
            return pyfuse3.FileInfo(fh=BARE_FH + node.inode, keep_cache=False)
        if not (node.cache.content_valid and node.cache.content is not None):
            await self.ws.read_content(node)
        return pyfuse3.FileInfo(fh=BARE_FH + node.inode, keep_cache=True)

    def _handle(self, fh: int) -> tuple[Handle, Node | Virtual]:
        """The handle and the node its inode means now: data belongs to the open file, so a file
        renamed or replaced while open follows its inode, not its old name."""
        h = self._handles.get(fh)
        if h is None:
            raise FsError(errno.EBADF, f"unknown file handle {fh}")
        node = self._node(h.inode)
        if h.fd >= 0 and not isinstance(node, OverlayNode):
            # An overlay file renamed onto an item's name while open (gedit): its inode is the
            # item's now, and so is what it writes next.
            os.close(h.fd)
            h.fd = -1
        if isinstance(node, OverlayNode) and h.fd < 0:
            h.fd = os.open(node.path, os.O_RDWR if h.writable else os.O_RDONLY)
        return h, node

    @guarded_sync
    def read(self, fh: int, off: int, size: int) -> bytes | Awaitable[bytes]:
        if fh >= BARE_FH:
            return self._read_bare(fh - BARE_FH, off, size)
        h, node = self._handle(fh)
        if h.fd >= 0:
            return os.pread(h.fd, size, off)
        if isinstance(node, Item) and node.edit.buffer is not None:
            return bytes(node.edit.buffer[off : off + size])
        if isinstance(node, Item) and (h.writable or (node.cache.content_valid and node.cache.content is not None)):
            # The kernel keeps one page cache per inode: a handle opened before the content changed
            # must not serve its old copy after the change's invalidation, or the stale pages it
            # brings back outlive every later open (keep_cache). Like a local file, it reads what
            # the file holds now; its own copy only while the new content is still on its way.
            return (node.cache.content or b"")[off : off + size]
        if isinstance(node, MemoryFile):
            return bytes(node.data[off : off + size])
        if isinstance(node, Virtual) and node.live is not None:
            ls = node.live
            return bytes((ls.local if ls.local is not None else ls.shown)[off : off + size])
        if isinstance(node, Virtual) and node.direct_io and node.render is not None and off + size > len(h.data):
            # Growing files (events, logs): a read past the snapshot sees what was added since,
            # so `tail -f` follows them.
            h.data = node.render()
        return h.data[off : off + size]

    def _read_bare(self, inode: int, off: int, size: int) -> bytes | Awaitable[bytes]:
        """A read through a bare read-only handle: what the file holds now (a local edit's buffer,
        the content, the old content while a newer one is on its way); content dropped since the
        open (a newer revision) is fetched as for a first read."""
        node = self._node(inode)
        if isinstance(node, Item):
            if node.edit.buffer is not None:
                return bytes(node.edit.buffer[off : off + size])
            if node.cache.content is not None:
                return node.cache.content[off : off + size]
            return self._read_fetched(node, off, size)
        if isinstance(node, MemoryFile):  # a file renamed over the item while open takes its inode
            return bytes(node.data[off : off + size])
        if isinstance(node, OverlayNode) and not os.path.isdir(node.path):
            # Renamed to a local name while open: the overlay file took the item's inode.
            fd = os.open(node.path, os.O_RDONLY)
            try:
                return os.pread(fd, size, off)
            finally:
                os.close(fd)
        raise FsError(errno.EBADF, f"inode {inode} is no longer a file")

    async def _read_fetched(self, item: Item, off: int, size: int) -> bytes:
        data = await self.ws.read_content(item)
        return data[off : off + size]

    @guarded
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        h, node = self._handle(fh)
        if h.fd >= 0:
            return os.pwrite(h.fd, buf, off)
        if isinstance(node, Virtual) and node.live is not None:
            if not h.writable:
                raise FsError(errno.EBADF, "")
            self.writer.live.write(node.live, off, buf)
            h.trunc_pending = False
            return len(buf)
        if isinstance(node, Virtual):
            # Control files act at write(), so `echo bogus > F.state` fails where the shell sees it
            # (bash ignores errors from close).
            if node.writer is None:
                raise FsError(errno.EACCES, "")
            await node.writer(buf)
            return len(buf)
        if isinstance(node, Item):
            await self.writer.write_item(node, off, buf)
        elif isinstance(node, MemoryFile):
            self.writer.write_memory_file(node, off, buf)
        else:
            raise FsError(errno.EBADF, "")
        h.trunc_pending = False
        return len(buf)

    async def _commit(self, node: Node | Virtual) -> None:
        """flush/fsync: store what this file holds in-world (nothing when nothing changed)."""
        if isinstance(node, Item):
            await self.writer.commit_item(node)
        elif isinstance(node, MemoryFile):
            await self.writer.commit_new_file(node)
        elif isinstance(node, Virtual) and node.live is not None:
            await self.writer.live.commit(node.live)

    @guarded_sync
    def flush(self, fh: int) -> Awaitable[None] | None:
        if fh >= BARE_FH:
            return None
        h = self._handles.get(fh)
        if h is not None and not h.writable and h.fd < 0:
            return None  # a read-only open: nothing to store (the warm-grep path: no await, no lock)
        h, node = self._handle(fh)
        if h.trunc_pending:
            return None
        return self._commit(node)

    @guarded
    async def fsync(self, fh: int, datasync: bool) -> None:
        if fh >= BARE_FH:
            return  # read-only: nothing to store
        h, node = self._handle(fh)
        if h.fd >= 0:
            os.fsync(h.fd)
        await self._commit(node)

    @guarded_sync
    def release(self, fh: int) -> Awaitable[None] | None:
        if fh >= BARE_FH:
            return None
        h = self._handles.get(fh)
        if h is not None and h.fd < 0 and not h.trunc_pending:
            del self._handles[fh]  # nothing left to store or close (every read-only open)
            return None
        return self._release(fh, h)

    async def _release(self, fh: int, h: Handle | None) -> None:
        try:
            if h is not None and h.trunc_pending:
                # `: > F`: truncated, never written. release errors reach nobody: the content
                # (empty) is in the recovery folder and the status then.
                h.trunc_pending = False
                node = self.tree.node(h.inode) or self.control.nodes.get(h.inode)
                if node is not None:
                    await self._commit(node)
        finally:
            self._handles.pop(fh, None)
            if h is not None and h.fd >= 0:
                os.close(h.fd)

    @guarded
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int,
                     ctx: pyfuse3.RequestContext) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._node(parent_inode)
        sname = os.fsdecode(name)
        fh = next(self._fh)
        if isinstance(parent, OverlayNode) or (isinstance(parent, Folder) and is_overlay_name(sname)):
            path = os.path.join(self.overlay.ensure(parent), sname)
            fd = os.open(path, (flags | os.O_CREAT) & ~os.O_NOCTTY, mode & ~ctx.umask)
            node = self.overlay.node(parent, sname, path)
            self._handles[fh] = Handle(node.inode, fd=fd, writable=True)
            return pyfuse3.FileInfo(fh=fh, keep_cache=False), self._counted(node)
        if isinstance(parent, Virtual) and parent.kind == LIVE:
            # A tool's temp file (sed -i, perl -pi), saved by its rename over a live file.
            scratch = self.writer.live.new_file(sname)
            self._handles[fh] = Handle(scratch.inode, writable=True)
            return pyfuse3.FileInfo(fh=fh, keep_cache=False), self._counted(scratch)
        if not isinstance(parent, Folder) or parent.inode == ROOT_INODE:
            raise FsError(errno.EPERM, f"{sname}: objects cannot be created from the file system")
        new = self.writer.new_file(parent, sname)
        # A new file (MemoryFile) is created in-world when it is written, or at its release if it never
        # is: flushes before the first write wait (bash closes a duplicate first).
        self._handles[fh] = Handle(new.inode, writable=True, trunc_pending=isinstance(new, MemoryFile))
        return pyfuse3.FileInfo(fh=fh, keep_cache=False), self._counted(new)

    @guarded
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._node(parent_inode)
        sname = os.fsdecode(name)
        node = self._lookup(parent, sname)
        if node is None:
            raise FsError(errno.ENOENT, "")
        if isinstance(node, OverlayNode):
            self.overlay.unlink(node)
        elif isinstance(node, NewFile) and node.live:
            self.writer.live.remove(node)
        elif isinstance(parent, Folder) and isinstance(node, Node):
            await self.writer.remove(parent, node)
        else:
            raise FsError(errno.EPERM, "")

    # --- rename --------------------------------------------------------------------------------

    @guarded
    async def rename(self, parent_inode_old: int, name_old: bytes, parent_inode_new: int, name_new: bytes,
                     flags: int, ctx: pyfuse3.RequestContext) -> None:
        if flags & RENAME_EXCHANGE:
            raise FsError(errno.EINVAL, "rename: exchanging files is not supported")
        src_parent = self._node(parent_inode_old)
        dst_parent = self._node(parent_inode_new)
        old, new = os.fsdecode(name_old), os.fsdecode(name_new)
        src = self._lookup(src_parent, old)
        if src is None:
            raise FsError(errno.ENOENT, "")
        dst = self._lookup(dst_parent, new)
        if dst is not None and flags & RENAME_NOREPLACE:
            raise FsError(errno.EEXIST, "")
        if dst is src:
            return
        if isinstance(src, NewFile) and src.live:
            await self._rename_in_live(src, src_parent, dst_parent, new, dst, flags)
            return
        if isinstance(src, Virtual) or isinstance(dst, Virtual) or isinstance(dst_parent, Virtual):
            raise FsError(errno.EPERM, "")
        if isinstance(src, Folder):
            if dst_parent is not src.parent or dst is not None:
                raise FsError(errno.EXDEV if dst is None else errno.EEXIST, "")
            await self.writer.rename_folder(src, new)
            return
        local_target = isinstance(dst_parent, OverlayNode) or is_overlay_name(new)
        if local_target:
            await self._rename_to_local(src, src_parent, old, dst_parent, new, dst)
        else:
            assert isinstance(dst_parent, Folder)
            await self._rename_to_remote(src, src_parent, old, dst_parent, new, dst)

    async def _rename_in_live(self, src: NewFile, src_parent: Node | Virtual, dst_parent: Node | Virtual, new: str,
                              dst: Node | Virtual | None, flags: int) -> None:
        """A new file of .slfs/live renamed: over a live file it is saved into it (sed -i)."""
        if dst_parent is not src_parent:
            raise FsError(errno.EXDEV, "")  # mv copies it instead
        if isinstance(dst, Virtual) and dst.live is None:
            raise FsError(errno.EPERM, "")  # a sidecar (.diag, .log, .state)
        ls = await self.writer.live.rename(src, new, replace=not flags & RENAME_NOREPLACE)
        if ls is not None and isinstance(dst_parent, Virtual):
            # The kernel's entry for `new` now holds the renamed file's inode: the live file's node
            # is made on it now (its count stays with the inode).
            self.control.lookup(dst_parent, new)

    async def _rename_to_local(self, src: Node, src_parent: Node | Virtual, old: str, dst_parent: Node | Virtual,
                               new: str, dst: Node | Virtual | None) -> None:
        assert isinstance(dst_parent, (Folder, OverlayNode)) and isinstance(src_parent, (Folder, OverlayNode))
        if isinstance(dst, Virtual):
            raise FsError(errno.EPERM, "")
        if isinstance(src, OverlayNode):
            self.overlay.rename(src, dst_parent, new, dst)  # within the overlay
            return
        await self.writer.move_to_overlay(src, src_parent, old, dst_parent, new, dst)

    async def _rename_to_remote(self, src: Node, src_parent: Node | Virtual, old: str, dst_parent: Folder,
                                new: str, dst: Node | Virtual | None) -> None:
        if isinstance(dst, Virtual) or not isinstance(src_parent, (Folder, OverlayNode)):
            raise FsError(errno.EPERM, "")
        await self.writer.rename_to_remote(src, src_parent, old, dst_parent, new, dst)

    # --- extended attributes -----------------------------------------------------------------

    @guarded_sync
    def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        sname = os.fsdecode(name)
        if sname.startswith("system.posix_acl_"):
            raise FsError(errno.EOPNOTSUPP, "")  # otherwise ls shows a '+' on every file
        if not sname.startswith(XATTR_PREFIX):
            raise FsError(errno.ENODATA, "")  # security.capability is asked before every write
        value = self.attributes.xattrs(self._node(inode)).get(sname)
        if value is None:
            raise FsError(errno.ENODATA, "")
        return value

    @guarded_sync
    def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        node = self.tree.node(inode) or self.control.nodes.get(inode)
        if node is None:
            return []
        return [k.encode() for k in self.attributes.xattrs(node)]

    @guarded
    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext) -> None:
        if os.fsdecode(name).startswith("system.posix_acl_"):
            raise FsError(errno.EOPNOTSUPP, "")
        raise FsError(errno.ENOTSUP, "")

    @guarded
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        if os.fsdecode(name) in self.attributes.xattrs(self._node(inode)):
            raise FsError(errno.ENOTSUP, "")  # there, and read-only, as for setxattr
        raise FsError(errno.ENODATA, "")
