"""The pyfuse3 Operations: thin handlers over the workspace's tree.

Every handler runs under `guarded` (guarded.py): counted and timed, FsError answered with its
errno, any other exception with EIO and a traceback. Each looks the inode up and delegates: a
name in a directory to the backend of the directory's kind (dirs.py), file data to the backend of
the file's kind (files.py), readdir's answers to readdir.py, extended attributes to xattrs.py; the
backends ask the model (writer, overlay, control). The handlers keep the kernel's side: its open
handles, its lookup counts, the shown epoch. Kernel cache invalidations go out from their own task
(invalidator.py).
"""

from __future__ import annotations

import errno
import itertools
import os
import sys
from collections.abc import Awaitable, Sequence
from typing import Any

import pyfuse3

from .. import event_types as ev
from ..debug_hooks import Debug
from ..model.overlay import Overlay
from ..model.workspace import Workspace
from ..model.writes import Writer
from ..stats import Stats
from ..world.fs_errors import FsError
from ..world.tree import Folder, Invalidation, Item, Node
from .attributes import Attributes
from .control_dir import Control
from .dirs import RENAME_EXCHANGE, RENAME_NOREPLACE, Dirs
from .files import BARE_FH, FileBackend, Files, Handle
from .guarded import bind_handlers, guarded, guarded_sync
from .listings import Listing, Listings
from .lookups import Lookups
from .readdir import Replies
from .virtual import Virtual
from .warm import WarmOpens
from .xattrs import ExtendedAttributes

__all__ = ["BARE_FH", "RENAME_NOREPLACE", "Operations"]  # BARE_FH and RENAME_NOREPLACE: the tests' names

_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


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
        self._check_listings = debug.check_listings  # the test suite's check (slfs/debug_hooks.py Debug)
        # Moves on every change the model reports and after every handler that waited (whatever
        # may have changed meanwhile): a listing replays the attributes of the epoch it built them
        # at, never older ones.
        self.shown_epoch = 0
        self.warm = WarmOpens()
        self.attributes = Attributes(ws.tree, ws.options)
        self.files = Files(ws, writer)
        self.dirs = Dirs(ws, writer, overlay, control, self.listings, self.attributes)
        self.xattrs = ExtendedAttributes(ws.tree, self.attributes)
        self.replies = Replies(ws.tree, control.nodes, self.attributes, lookups, check=self._check_listings)
        # What the workspace's fan-out tells of each invalidation report (build_services connects it).
        self.invalidation_listeners = (self.attributes.changed, self._listing_changed)

    def explain(self, handler: str, exc: FsError) -> None:
        """An error the errno alone does not explain (a name the viewer cannot hold): the status's
        last_error and the log say why, and so does an `error` event."""
        self.ws.note_error(f"{handler}: {exc.message}")
        self.ws.emit(ev.Error(operation=handler, errno=errno.errorcode.get(exc.errno, str(exc.errno)),
                              message=exc.message))

    # --- Service: what `.slfs/status` shows of the kernel side

    def on_event(self, event: ev.SlfsEvent) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {"kernel_refs": self.lookups.total()}

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
        return self.dirs.of(parent).find(parent, name)

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
        await self.ws.content.read_content(item)
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
        await self.ws.content.read_content(item)
        return self.attributes.entry(item)

    @guarded
    async def setattr(self, inode: int, attr: pyfuse3.EntryAttributes, fields: pyfuse3.SetattrFields,
                      fh: int | None, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        node = self._node(inode)
        await self.files.setattr(node, attr, fields, self._handles.get(fh) if fh is not None else None)
        return self.attributes.entry(node)

    @guarded
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        return self.files.readlink(self._node(inode))

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
        if cached is None:  # else listed before (a warm `find`): the same listing while all holds
            node = self._node(inode)
            cached = self.dirs.of(node).listing(node, self.shown_epoch)
        fh = next(self._fh)
        self._dir_handles[fh] = cached
        return fh

    def waited(self) -> None:
        """A handler that awaited has ended (fs/guarded.py): whatever changed while it waited, no
        listing replays attributes from before it."""
        self.shown_epoch += 1

    def _listing_changed(self, inv: Invalidation) -> None:
        """PendingInvalidations listener: no listing replays attributes from before a change, and a
        folder whose names or attributes changed lists afresh."""
        self.shown_epoch += 1
        self.listings.changed(inv)

    @guarded_sync
    def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        listing = self._dir_handles.get(fh)
        if listing is None:
            return
        self.replies.answer(listing, start_id, token, self.shown_epoch)

    @guarded_sync
    def releasedir(self, fh: int) -> None:
        self._dir_handles.pop(fh, None)

    @guarded
    async def mkdir(self, parent_inode: int, name: bytes, mode: int,
                    ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._node(parent_inode)
        return self._counted(self.dirs.of(parent).mkdir(parent, os.fsdecode(name), mode & ~ctx.umask))

    @guarded
    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._node(parent_inode)
        node = self._lookup(parent, os.fsdecode(name))
        if node is None:
            raise FsError(errno.ENOENT, "")
        self.dirs.of(parent).rmdir(parent, node)

    @guarded
    async def symlink(self, parent_inode: int, name: bytes, target: bytes,
                      ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        parent = self._node(parent_inode)
        return self._counted(self.dirs.of(parent).symlink(parent, os.fsdecode(name), target))

    @guarded
    async def link(self, inode: int, new_parent_inode: int, new_name: bytes,
                   ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        node = self._node(inode)
        parent = self._node(new_parent_inode)
        return self._counted(self.dirs.of(parent).link(node, parent, os.fsdecode(new_name)))

    # --- files -------------------------------------------------------------------------------

    @guarded_sync
    def open(self, inode: int, flags: int,
             ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo | Awaitable[pyfuse3.FileInfo]:
        if not flags & os.O_ACCMODE:
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
        backend = self.files.of(node)
        if backend is None:
            raise FsError(errno.EISDIR if isinstance(node, Folder) else errno.EINVAL, "")
        opened = await backend.open(node, flags)
        fh = next(self._fh)
        if opened.handle is not None:
            self._handles[fh] = opened.handle
        return self.files.info(fh, opened, node.inode)

    def _handle(self, fh: int) -> tuple[Handle, Node | Virtual, FileBackend | None]:
        """The handle, the node its inode means now and that node's backend: data belongs to the
        open file, so a file renamed or replaced while open follows its inode, not its old name."""
        h = self._handles.get(fh)
        if h is None:
            raise FsError(errno.EBADF, f"unknown file handle {fh}")
        node = self._node(h.inode)
        return h, node, self.files.follow(h, node)

    @guarded_sync
    def read(self, fh: int, off: int, size: int) -> bytes | Awaitable[bytes]:
        if fh >= BARE_FH:
            return self.files.read_bare(self._node(fh - BARE_FH), off, size)
        h, node, backend = self._handle(fh)
        if backend is None:
            return h.data[off : off + size]
        return backend.read(node, h, off, size)

    @guarded
    async def write(self, fh: int, off: int, buf: bytes) -> int:
        h, node, backend = self._handle(fh)
        if backend is None:
            raise FsError(errno.EBADF, "")
        return await self.files.write(backend, node, h, off, buf)

    @guarded_sync
    def flush(self, fh: int) -> Awaitable[None] | None:
        if fh >= BARE_FH:
            return None
        h = self._handles.get(fh)
        if h is not None and not h.writable and h.fd < 0:
            return None  # a read-only open: nothing to store (the warm-grep path: no await, no lock)
        h, node, backend = self._handle(fh)
        if h.trunc_pending or backend is None:
            return None
        # flush: store what this file holds in-world (nothing when nothing changed)
        return backend.commit(node, h, durable=False)

    @guarded
    async def fsync(self, fh: int, datasync: bool) -> None:
        if fh >= BARE_FH:
            return  # read-only: nothing to store
        h, node, backend = self._handle(fh)
        if backend is not None:
            await backend.commit(node, h, durable=True)

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
                await self.files.commit_truncation(self.tree.node(h.inode) or self.control.nodes.get(h.inode), h)
        finally:
            self._handles.pop(fh, None)
            if h is not None:
                h.close()

    @guarded
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int,
                     ctx: pyfuse3.RequestContext) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._node(parent_inode)
        node, h = await self.dirs.of(parent).create(parent, os.fsdecode(name), flags, mode & ~ctx.umask)
        fh = next(self._fh)
        self._handles[fh] = h
        return pyfuse3.FileInfo(fh=fh, keep_cache=False), self._counted(node)

    @guarded
    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        parent = self._node(parent_inode)
        node = self._lookup(parent, os.fsdecode(name))
        if node is None:
            raise FsError(errno.ENOENT, "")
        await self.dirs.of(parent).unlink(parent, node)

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
        await self.dirs.of(src_parent).rename(src_parent, old, src, dst_parent, new, dst, flags)

    # --- extended attributes -----------------------------------------------------------------

    @guarded_sync
    def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        sname = self.xattrs.readable(os.fsdecode(name))
        return self.xattrs.get(self._node(inode), sname)

    @guarded_sync
    def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        return self.xattrs.names(self.tree.node(inode) or self.control.nodes.get(inode))

    @guarded
    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext) -> None:
        sname = self.xattrs.writable(os.fsdecode(name))
        self.xattrs.set(self._node(inode), sname, bytes(value))

    @guarded
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        self.xattrs.remove(self._node(inode), os.fsdecode(name))
