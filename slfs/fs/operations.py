"""The pyfuse3 Operations: thin handlers over the workspace's tree.

Every handler goes through `_guarded`: FsError becomes its errno with a log line; any other
exception becomes EIO with a traceback (pyfuse3 only catches FUSEError, anything else would end
pyfuse3.main() and leave a dead mount). Kernel cache invalidation is only ever issued from the
background `invalidator` task: a synchronous invalidate_entry from inside a handler deadlocks.
"""

from __future__ import annotations

import errno
import functools
import itertools
import logging
import os
import stat
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar, cast

import attrs
import pyfuse3
import trio

from ..model import names
from ..model.errors import FsError
from ..model.tree import ROOT_INODE, EntryChanged, Folder, InodeChanged, Item, Node
from ..model.workspace import Workspace
from .control import DIR, FILE, LINK, Control, Virtual

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

# Environment hook for the test that proves a failing handler leaves the mount alive.
FAULT_ENV = "SLFS_INJECT_FAULT"

XATTR_PREFIX = "user.sl."


def _guarded(fn: F) -> F:
    @functools.wraps(fn)
    async def wrapper(self: Operations, *args: Any) -> Any:
        try:
            return await fn(self, *args)
        except pyfuse3.FUSEError:
            raise
        except FsError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENODATA, errno.EOPNOTSUPP):
                log.warning("%s: %s", fn.__name__, exc.message)
            raise pyfuse3.FUSEError(exc.errno) from None
        except Exception:
            log.exception("unexpected error in %s%r; answering EIO", fn.__name__, args[:2])
            raise pyfuse3.FUSEError(errno.EIO) from None

    return cast(F, wrapper)


@attrs.define(eq=False)
class Handle:
    node: Item | Virtual
    data: bytes = b""


class Operations(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False
    enable_acl = False

    def __init__(self, ws: Workspace) -> None:
        super().__init__()
        self.ws = ws
        self.tree = ws.tree
        self.control = Control(ws)
        self.uid = os.getuid()
        self.gid = os.getgid()
        self._handles: dict[int, Handle] = {}
        self._dir_handles: dict[int, list[tuple[str, int]]] = {}
        self._fh = itertools.count(1)
        self._fault = os.environ.get(FAULT_ENV, "")
        self.mounted_at_ns = time.time_ns()
        ws.extra_status = lambda: {"kernel_refs": self.lookup_total()}  # type: ignore[method-assign]

    # --- kernel cache invalidation ------------------------------------------------------------

    async def invalidator(self) -> None:
        """Apply the tree's invalidations, outside any request handler."""
        async for inv in self.ws.invalidations:
            try:
                if isinstance(inv, EntryChanged):
                    pyfuse3.invalidate_entry_async(inv.parent, inv.name.encode(), ignore_enoent=True)
                elif isinstance(inv, InodeChanged):
                    await trio.to_thread.run_sync(self._invalidate_inode, inv.inode, not inv.data)
            except Exception:
                log.exception("cache invalidation failed for %r", inv)

    @staticmethod
    def _invalidate_inode(inode: int, attr_only: bool) -> None:
        try:
            pyfuse3.invalidate_inode(inode, attr_only)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # the kernel does not know this inode: nothing cached
                raise

    # --- attributes ----------------------------------------------------------------------------

    def _node(self, inode: int) -> Node | Virtual:
        node = self.tree.node(inode) or self.control.nodes.get(inode)
        if node is None:
            raise FsError(errno.ENOENT, f"inode {inode} is gone")
        return node

    def _attrs(self, node: Node | Virtual) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino = node.inode
        a.st_uid = self.uid
        a.st_gid = self.gid
        a.st_blksize = 4096
        a.entry_timeout = self.ws.options.attr_timeout
        a.attr_timeout = self.ws.options.attr_timeout
        mtime = self.mounted_at_ns
        if isinstance(node, Item):
            size = node.size
            if size is None:
                # Not fetched yet: answer the listing now; a stat asks again and waits (getattr).
                size = 0
                a.attr_timeout = 0
            mode = 0o644 if node.writable else 0o444
            if not node.readable:
                mode = 0
            a.st_mode = stat.S_IFREG | mode
            a.st_size = size
            a.st_nlink = 1
            mtime = node.mtime_ns
            a.st_ctime_ns = max(node.ctime_ns, mtime)
        elif isinstance(node, Folder):
            mode = 0o755 if node.writable else 0o555
            a.st_mode = stat.S_IFDIR | mode
            a.st_nlink = 2 + (len(node.prims) if node.inode != ROOT_INODE else len(self.tree.objects))
            mtime = node.mtime_ns
            a.st_ctime_ns = mtime
        elif isinstance(node, Virtual):
            a.attr_timeout = 0
            a.entry_timeout = 1
            if node.kind == FILE:
                a.st_mode = stat.S_IFREG | (0o644 if node.writer is not None else 0o444)
                a.st_size = len(node.render()) if node.render is not None else 0
                a.st_nlink = 1
                mtime = time.time_ns() if node.direct_io else self.mounted_at_ns
            elif node.kind == LINK:
                a.st_mode = stat.S_IFLNK | 0o777
                a.st_size = len((node.target and node.target()) or "")
                a.st_nlink = 1
            else:
                a.st_mode = stat.S_IFDIR | 0o555
                a.st_nlink = 2
            a.st_ctime_ns = self.mounted_at_ns
        a.st_mtime_ns = mtime
        a.st_atime_ns = mtime
        a.st_blocks = (a.st_size + 511) // 512
        return a

    def _counted(self, node: Node | Virtual) -> pyfuse3.EntryAttributes:
        """Attributes for a reply that hands the kernel a reference (lookup, create, readdirplus)."""
        node.lookups += 1
        return self._attrs(node)

    # --- lookup and attributes ---------------------------------------------------------------

    def _lookup(self, parent: Node | Virtual, name: str) -> Node | Virtual | None:
        if isinstance(parent, Folder):
            if name == names.CONTROL_DIR:
                return self.control.control_dir(parent)
            return parent.entries.get(name)
        if isinstance(parent, Virtual):
            return self.control.lookup(parent, name)
        return None

    @_guarded
    async def lookup(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        sname = os.fsdecode(name)
        if self._fault and sname == self._fault:
            raise RuntimeError(f"fault injected on lookup of {sname!r}")
        parent = self._node(parent_inode)
        if sname == ".":
            return self._counted(parent)
        if sname == "..":
            up = parent.parent if isinstance(parent, Node) else self._node(parent.parent_inode)
            return self._counted(up or self.tree.root)
        node = self._lookup(parent, sname)
        if node is None:
            raise FsError(errno.ENOENT, "")
        return self._counted(node)

    @_guarded
    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        for inode, count in inode_list:
            self.tree.forget(inode, count)
            self.control.forget(inode, count)

    def lookup_total(self) -> int:
        """Sum of the kernel's references (zero after a clean unmount)."""
        nodes: list[Node | Virtual] = [*self.tree.nodes.values(), *self.control.nodes.values()]
        return sum(n.lookups for n in nodes if n.inode != ROOT_INODE)

    @_guarded
    async def getattr(self, inode: int, ctx: pyfuse3.RequestContext) -> pyfuse3.EntryAttributes:
        node = self._node(inode)
        if isinstance(node, Item) and node.size is None:
            # st_size must be exact whenever a program can see it (git reads exactly st_size).
            await self.ws.read_content(node)
        return self._attrs(node)

    @_guarded
    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        node = self._node(inode)
        if not isinstance(node, Virtual) or node.kind != LINK or node.target is None:
            raise FsError(errno.EINVAL, "")
        target = node.target()
        if target is None:
            raise FsError(errno.ENOENT, "")
        return os.fsencode(target)

    @_guarded
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        # Answered locally: VS Code and editors call statfs constantly.
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = 4096
        s.f_blocks = s.f_bfree = s.f_bavail = 1 << 20
        s.f_files = s.f_ffree = s.f_favail = 1 << 20
        s.f_namemax = 255
        return s

    # --- directories -------------------------------------------------------------------------

    @_guarded
    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        node = self._node(inode)
        if isinstance(node, Folder):
            entries = [(name, n.inode) for name, n in node.entries.items()]
            if node.inode != ROOT_INODE:
                self.ws.start_prefetch(node)
        elif isinstance(node, Virtual) and node.kind not in (FILE, LINK):
            entries = [(v.name, v.inode) for v in self.control.children(node)]
        else:
            raise FsError(errno.ENOTDIR, "")
        fh = next(self._fh)
        self._dir_handles[fh] = sorted(entries)
        return fh

    @_guarded
    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        # Offsets are positions in the snapshot taken at opendir, so a listing stays consistent
        # while objects come and go.
        entries = self._dir_handles.get(fh, [])
        for i in range(start_id, len(entries)):
            name, inode = entries[i]
            node = self.tree.node(inode) or self.control.nodes.get(inode)
            if node is None:
                continue
            if not pyfuse3.readdir_reply(token, os.fsencode(name), self._attrs(node), i + 1):
                return
            node.lookups += 1

    @_guarded
    async def releasedir(self, fh: int) -> None:
        self._dir_handles.pop(fh, None)

    # --- files -------------------------------------------------------------------------------

    @_guarded
    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        node = self._node(inode)
        if isinstance(node, Folder):
            raise FsError(errno.EISDIR, "")
        accmode = flags & os.O_ACCMODE
        if isinstance(node, Virtual):
            if node.kind != FILE:
                raise FsError(errno.EINVAL, "")
            if accmode != os.O_RDONLY and node.writer is None:
                raise FsError(errno.EACCES, f"{node.name} is read-only")
            data = node.render() if node.render is not None and accmode != os.O_WRONLY else b""
            fh = next(self._fh)
            self._handles[fh] = Handle(node, data)
            return pyfuse3.FileInfo(fh=fh, direct_io=node.direct_io, keep_cache=False)
        assert isinstance(node, Item)
        if not node.readable:
            raise FsError(errno.EACCES, f"{self.tree.path_of(node)}: script is not readable")
        if accmode != os.O_RDONLY:
            raise FsError(errno.EROFS, f"{self.tree.path_of(node)}: writing is not supported yet")
        data = await self.ws.read_content(node)
        fh = next(self._fh)
        self._handles[fh] = Handle(node, data)
        return pyfuse3.FileInfo(fh=fh, keep_cache=True)

    def _handle(self, fh: int) -> Handle:
        handle = self._handles.get(fh)
        if handle is None:
            raise FsError(errno.EBADF, f"unknown file handle {fh}")
        return handle

    @_guarded
    async def read(self, fh: int, off: int, size: int) -> bytes:
        return self._handle(fh).data[off : off + size]

    @_guarded
    async def flush(self, fh: int) -> None:
        return None

    @_guarded
    async def release(self, fh: int) -> None:
        self._handles.pop(fh, None)

    # --- extended attributes -----------------------------------------------------------------

    def _xattrs(self, node: Node | Virtual) -> dict[str, bytes]:
        out: dict[str, str] = {}
        if isinstance(node, Item) and node.folder is not None:
            info = node.info
            out["item_id"] = node.uuid
            out["prim_id"] = node.folder.uuid
            out["object_id"] = node.folder.object_id
            out["type"] = info.type
            out["description"] = info.description or ""
            p = info.permissions
            out["perms"] = f"owner=0x{p.owner:08x} next_owner=0x{p.next_owner:08x}" if p else "unknown"
            if node.is_script:
                out["vm"] = info.vm or ""
                out["running"] = "1" if info.running else "0"
                out["faulted"] = "1" if info.faulted else "0"
        elif isinstance(node, Folder) and node.inode != ROOT_INODE:
            out["prim_id"] = node.uuid
            out["object_id"] = node.object_id
            out["link_number"] = str(node.link_number)
            out["description"] = node.description
        return {XATTR_PREFIX + k: v.encode() for k, v in out.items()}

    @_guarded
    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        sname = os.fsdecode(name)
        if sname.startswith("system.posix_acl_"):
            raise FsError(errno.EOPNOTSUPP, "")  # otherwise ls shows a '+' on every file
        if not sname.startswith(XATTR_PREFIX):
            raise FsError(errno.ENODATA, "")  # security.capability is asked before every write
        value = self._xattrs(self._node(inode)).get(sname)
        if value is None:
            raise FsError(errno.ENODATA, "")
        return value

    @_guarded
    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        node = self.tree.node(inode) or self.control.nodes.get(inode)
        if node is None:
            return []
        return [k.encode() for k in self._xattrs(node)]

    @_guarded
    async def setxattr(self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext) -> None:
        if os.fsdecode(name).startswith("system.posix_acl_"):
            raise FsError(errno.EOPNOTSUPP, "")
        raise FsError(errno.ENOTSUP, "")

    @_guarded
    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        raise FsError(errno.ENODATA, "")
