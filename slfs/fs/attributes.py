"""What `stat` and `getfattr` show for every kind of node (no I/O but the overlay's lstat)."""

from __future__ import annotations

import os
import stat
import time

import pyfuse3

from ..model.options import Options
from ..world import names
from ..world.tree import (
    ROOT_INODE,
    Folder,
    InodeChanged,
    Invalidation,
    Item,
    LiveState,
    MemoryFile,
    NewFile,
    Node,
    OverlayNode,
    StatChanged,
    Tree,
    describe_perms,
)
from .virtual import FILE, LINK, Virtual

XATTR_PREFIX = "user.sl."

Guard = tuple[object, ...]

# What check_replay compares: every field a listing's answer carries.
_COMPARED = ("st_ino", "st_mode", "st_size", "st_nlink", "st_uid", "st_gid", "st_mtime_ns", "st_ctime_ns",
             "st_atime_ns", "st_blocks", "attr_timeout", "entry_timeout")


def _guard(node: Node) -> Guard | None:
    """Everything an item's or a prim folder's attributes are computed from, as they are now;
    None for what is not cached (a local edit's buffer, an unknown size, overlay, scratch and
    control files, the root).

    A cached entry is good while this compares equal: the model reports most changes
    (`changed`), but some reach the attributes without a report (a write through the kernel, a
    first fetch, a detach or rename, an object's republished permissions), so each use compares
    the inputs themselves, by identity where they are immutable records."""
    if isinstance(node, Item):
        if node.edit.buffer is not None:
            return None  # a bytearray edited in place: its length is read every time
        content = node.cache.content
        known = node.cache.content_valid and content is not None
        if not known and node.readable:
            return None  # size unknown: answered with attr_timeout 0 until fetched
        folder = node.folder
        # No inode: an entry is found by the node's inode and kept for that very node, and its
        # st_ino is the key it was found by.
        return (node.parent, node.mtime_ns, node.record, node.cache.embedded_items,
                len(content) if known and content is not None else -1,
                folder, folder.permissions if folder is not None else None)
    if isinstance(node, Folder) and node.inode != ROOT_INODE:
        return (node.parent, node.mtime_ns, node.permissions, node.prim_count)
    return None


class Attributes:
    def __init__(self, tree: Tree, options: Options) -> None:
        self.tree = tree
        self.options = options
        self.uid = os.getuid()
        self.gid = os.getgid()
        self.mounted_at_ns = time.time_ns()
        # inode -> (node, guard, attributes) of items and prim folders, so a warm listing does not
        # build 20,000 EntryAttributes anew (`find` over readdirplus). The kernel copies a reply's
        # attributes, so one object serves every reply until its guard differs.
        self._cache: dict[int, tuple[Node, Guard, pyfuse3.EntryAttributes]] = {}

    def changed(self, inv: Invalidation) -> None:
        """The model reported a change (PendingInvalidations listener): drop what it may affect."""
        if isinstance(inv, (InodeChanged, StatChanged)):
            self._cache.pop(inv.inode, None)

    def replayable(self, node: Node) -> pyfuse3.EntryAttributes | None:
        """The node's attributes if a listing may answer with them again while the model reports
        no change (what the cache keeps), else None (worked out on every answer)."""
        attr = self.entry(node)
        cached = self._cache.get(node.inode)
        return attr if cached is not None and cached[2] is attr else None

    def check_replay(self, node: Node, attr: pyfuse3.EntryAttributes) -> None:
        """The test suite's check (debug_hooks.CHECK_LISTINGS_ENV, read into Debug): replayed attributes are what
        the node shows now."""
        fresh = self._build(node)
        for field in _COMPARED:
            if getattr(attr, field) != getattr(fresh, field):
                raise AssertionError(f"inode {node.inode} ({node.name!r}): a listing replayed {field}="
                                     f"{getattr(attr, field)!r}, the node shows {getattr(fresh, field)!r} "
                                     "(a change the model did not report)")

    def entry(self, node: Node | Virtual) -> pyfuse3.EntryAttributes:
        cached = self._cache.get(node.inode)
        if cached is not None and cached[0] is node:  # never a control file's (not cached)
            guard = _guard(node)
            if cached[1] == guard:
                return cached[2]
        elif isinstance(node, Virtual):
            return self._build(node)
        else:
            guard = _guard(node)
        a = self._build(node)
        if guard is None:
            if cached is not None:
                del self._cache[node.inode]
            return a
        cache = self._cache
        if len(cache) > 2 * len(self.tree.nodes) + 1024:
            self._prune()
        cache[node.inode] = (node, guard, a)
        return a

    def _prune(self) -> None:
        """Drop the entries of nodes the tree no longer holds (bounded: at most twice the tree)."""
        nodes = self.tree.nodes
        self._cache = {ino: c for ino, c in self._cache.items() if nodes.get(ino) is c[0]}

    def _build(self, node: Node | Virtual) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino = node.inode
        a.st_uid = self.uid
        a.st_gid = self.gid
        a.st_blksize = 4096
        a.entry_timeout = self.options.attr_timeout
        a.attr_timeout = self.options.attr_timeout
        mtime = self.mounted_at_ns
        if isinstance(node, Item):
            size = node.size
            if size is None:
                # Not fetched yet: answer the listing now; a stat asks again and waits (getattr).
                size = 0
                a.attr_timeout = 0
            mode = 0o644 if node.saveable else 0o444
            if not node.readable:
                mode = 0
            a.st_mode = stat.S_IFREG | mode
            a.st_size = size
            a.st_nlink = 1 if node.attached else 0
            mtime = node.mtime_ns
            a.st_ctime_ns = max(node.ctime_ns, mtime)
        elif isinstance(node, MemoryFile):
            a.st_mode = stat.S_IFREG | node.mode
            a.st_size = len(node.data)
            named = isinstance(node, NewFile) and (node.folder is not None or node.live is LiveState.NAMED)
            a.st_nlink = 1 if named else 0
            a.attr_timeout = a.entry_timeout = 1
            mtime = node.mtime_ns
            a.st_ctime_ns = mtime
        elif isinstance(node, OverlayNode):
            st = os.lstat(node.path)
            a.st_mode = st.st_mode
            a.st_size = st.st_size
            a.st_nlink = st.st_nlink
            a.st_uid, a.st_gid = st.st_uid, st.st_gid
            a.attr_timeout = a.entry_timeout = 1
            a.st_ctime_ns = st.st_ctime_ns
            a.st_atime_ns = st.st_atime_ns
            a.st_mtime_ns = st.st_mtime_ns
            a.st_blocks = st.st_blocks
            return a
        elif isinstance(node, Folder):
            mode = 0o755 if node.writable else 0o555
            a.st_mode = stat.S_IFDIR | mode
            a.st_nlink = 2 + (node.prim_count if node.inode != ROOT_INODE else len(self.tree.objects))
            mtime = node.mtime_ns
            a.st_ctime_ns = mtime
        elif isinstance(node, Virtual):
            a.attr_timeout = 0
            a.entry_timeout = 1
            if node.kind == FILE and node.live is not None:
                ls = node.live  # a live file: the temp file's text as its script shows it
                a.st_mode = stat.S_IFREG | 0o644
                a.st_size = len(ls.local) if ls.local is not None else len(ls.shown)
                a.st_nlink = 1
                mtime = ls.seen_stamp[0] if ls.seen_stamp else self.mounted_at_ns
            elif node.kind == FILE:
                a.st_mode = stat.S_IFREG | (0o644 if node.writer is not None else 0o444)
                if node.size is not None:  # known without rendering (a history version)
                    a.st_size = node.size
                else:
                    a.st_size = len(node.render()) if node.render is not None else 0
                a.st_nlink = 1
                mtime = time.time_ns() if node.direct_io else self.mounted_at_ns
                if node.mtime_ns is not None:
                    mtime = node.mtime_ns
            elif node.kind == LINK:
                a.st_mode = stat.S_IFLNK | 0o777
                a.st_size = len((node.target and node.target()) or "")
                a.st_nlink = 1
            else:
                a.st_mode = stat.S_IFDIR | 0o555
                a.st_nlink = 2
            if node.steady:  # attributes that never change (the history's): the kernel may keep them
                a.attr_timeout = a.entry_timeout = self.options.attr_timeout
            a.st_ctime_ns = self.mounted_at_ns
        a.st_mtime_ns = mtime
        a.st_atime_ns = mtime
        a.st_blocks = (a.st_size + 511) // 512
        return a

    def xattrs(self, node: Node | Virtual) -> dict[str, bytes]:
        """The user.sl.* attributes: the in-world identity and state of items and prims."""
        out: dict[str, str] = {}
        if isinstance(node, Item) and node.folder is not None:
            info = node.info
            out["item_id"] = node.uuid
            out["prim_id"] = node.folder.uuid
            out["object_id"] = node.folder.object_id
            out["type"] = info.type
            out["description"] = info.description or ""
            out["perms"] = describe_perms(info.permissions)
            if info.type == "notecard" and node.cache.embedded_items is not None:
                out["embedded_items"] = str(node.cache.embedded_items)
            if info.revision is not None:
                out["revision"] = str(info.revision)
            if node.cache.inworld is not None:
                out["preprocessed"] = "1"  # shown through its envelope (.slfs/F.inworld has the text)
            if node.is_script:
                out["vm"] = info.vm or ""
                out["running"] = "1" if info.running else "0"
                out["faulted"] = "1" if info.faulted else "0"
        elif isinstance(node, Folder) and node.inode != ROOT_INODE:
            out["prim_id"] = node.uuid
            out["object_id"] = node.object_id
            out["link_number"] = str(node.link_number)
            out["description"] = node.description
            out["perms"] = describe_perms(node.permissions)
            if not node.is_child:
                if node.owner_id:
                    out["owner_id"] = node.owner_id
                if node.can_save_back is not None:
                    out["can_save_back"] = "1" if node.can_save_back else "0"
        return {XATTR_PREFIX + k: names.encodable(v).encode() for k, v in out.items()}
