"""The pyfuse3 Operations: thin handlers over the workspace's tree.

Every handler runs under `guarded` (guarded.py): counted and timed, FsError answered with its
errno, any other exception with EIO and a traceback. Each is lookup, check, delegate: file data to
the backend of the file's kind (files.py), everything else to the model (writer, overlay, control).
Kernel cache invalidations go out from their own task (invalidator.py).
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import sys
from collections.abc import Awaitable, Sequence
from typing import Any

import pyfuse3

from ..model import attribute_writes
from ..model.options import Debug
from ..model.overlay import Overlay
from ..model.tree import (
    ROOT_INODE,
    Folder,
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
from ..world import names
from ..world.errors import FsError
from ..world.naming_rules import is_overlay_name
from .attributes import XATTR_PREFIX, Attributes
from .control import FILE, LINK, LIVE, Control, Virtual
from .files import BARE_FH, FileBackend, Files, Handle
from .guarded import bind_handlers, guarded, guarded_sync
from .listings import Listing, Listings
from .lookups import Lookups
from .warm import WarmOpens

log = logging.getLogger(__name__)

_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


_ACCMODE = os.O_ACCMODE

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2


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
        self.files = Files(ws, writer)
        # What the workspace's fan-out tells of each invalidation report (build_services connects it).
        self.invalidation_listeners = (self.attributes.changed, self._listing_changed)

    def explain(self, handler: str, exc: FsError) -> None:
        """An error the errno alone does not explain (a name the viewer cannot hold): the status's
        last_error and the log say why, and so does an `error` event."""
        self.ws.note_error(f"{handler}: {exc.message}")
        self.ws.emit("error", operation=handler, errno=errno.errorcode.get(exc.errno, str(exc.errno)),
                     message=exc.message)

    # --- Service: what `.slfs/status` shows of the kernel side

    def on_event(self, event: dict[str, Any]) -> None:
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
        if isinstance(node, OverlayNode):
            self.overlay.change(node, size=attr.st_size if fields.update_size else None,
                                mode=attr.st_mode if fields.update_mode else None,
                                uid=attr.st_uid if fields.update_uid else None,
                                gid=attr.st_gid if fields.update_gid else None,
                                atime_ns=attr.st_atime_ns if fields.update_atime else None,
                                mtime_ns=attr.st_mtime_ns if fields.update_mtime else None)
            return self.attributes.entry(node)
        backend = self.files.of(node)
        if fields.update_size:
            h = self._handles.get(fh) if fh is not None else None
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
                self.ws.content.start_prefetch(node)
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
                h.trunc_pending = False
                node = self.tree.node(h.inode) or self.control.nodes.get(h.inode)
                backend = self.files.of(node) if node is not None else None
                if node is not None and backend is not None:
                    await backend.commit(node, h, durable=False)
        finally:
            self._handles.pop(fh, None)
            if h is not None:
                h.close()

    @guarded
    async def create(self, parent_inode: int, name: bytes, mode: int, flags: int,
                     ctx: pyfuse3.RequestContext) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        parent = self._node(parent_inode)
        sname = os.fsdecode(name)
        node: Node
        if isinstance(parent, OverlayNode) or (isinstance(parent, Folder) and is_overlay_name(sname)):
            node, fd = self.overlay.create(parent, sname, flags, mode & ~ctx.umask)
            h = Handle(node.inode, fd=fd, writable=True)
        elif isinstance(parent, Virtual) and parent.kind == LIVE:
            # A tool's temp file (sed -i, perl -pi), saved by its rename over a live file.
            node = self.writer.live.new_file(sname)
            h = Handle(node.inode, writable=True)
        elif not isinstance(parent, Folder) or parent.inode == ROOT_INODE:
            raise FsError(errno.EPERM, f"{sname}: objects cannot be created from the file system")
        else:
            await self.writer.check_can_create(parent, sname)
            node = self.writer.new_file(parent, sname)
            # A new file (MemoryFile) is created in-world when it is written, or at its release if it
            # never is; an item re-created after an rm starts empty and is saved likewise. Flushes
            # before the first write wait (bash closes a duplicate first): saved then, the empty
            # text would be refused by older viewers and the write land on the old text.
            h = Handle(node.inode, writable=True, trunc_pending=True)
        fh = next(self._fh)
        self._handles[fh] = h
        return pyfuse3.FileInfo(fh=fh, keep_cache=False), self._counted(node)

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
            if isinstance(dst, Item):  # rsync -aX: its temporary file's attributes must be the item's
                attribute_writes.check_rename(src, old, new, self.tree.path_of(dst), self.attributes.xattrs(dst))
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
        sname = os.fsdecode(name)
        if sname.startswith("system.posix_acl_"):
            raise FsError(errno.EOPNOTSUPP, "")
        if not sname.startswith(XATTR_PREFIX):
            raise FsError(errno.ENOTSUP, "")
        node = self._node(inode)
        shown = self.tree.path_of(node) if isinstance(node, Node) else ".slfs"
        attribute_writes.set_attribute(node, shown, self.attributes.xattrs(node), sname, bytes(value))

    @guarded
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        node = self._node(inode)
        shown = self.tree.path_of(node) if isinstance(node, Node) else ".slfs"
        attribute_writes.remove_attribute(node, shown, self.attributes.xattrs(node), os.fsdecode(name))
