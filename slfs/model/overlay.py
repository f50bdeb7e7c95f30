"""The local overlay: dot and temp files, `.git/`, `.vscode/`... kept on disk beside the remote
items of a folder, and passed through as they are. Each folder's are in its object's home, kept by
the agent and the object's UUID, never by its name (local/overlay_homes.py).

The Overlay keeps the homes (which agent's, which object's, moved when an object is re-rezzed or
an old overlay is found) and composes the disk side (local/overlay_disk.py) and the overlay files'
inodes (model/overlay_inodes.py: the names of one disk file share one).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import event_types as ev
from ..local.overlay_disk import OverlayDisk
from ..local.overlay_homes import OWN, PRIMS, Home, Index, adoptable, id_name, prim_moves
from ..session.listener import SessionInfo
from ..world import names
from ..world.fs_errors import FsError
from ..world.tree import Folder, Item, NewFile, Node, OverlayNode, Tree
from .history import agent_key
from .overlay_inodes import OverlayInodes

log = logging.getLogger(__name__)

LEGACY = "objects"  # the layout before homes: overlay/objects/<folder name>/...


class Overlay:
    """The local overlay of one mount. Each folder's files live in its object's home
    (local/overlay_homes.py), known once the session names the agent; it is also a service of the
    fan-out (model/services.py): a connection selects the agent's homes."""

    def __init__(self, tree: Tree, *, shared: bool = False,
                 session: Callable[[], SessionInfo | None] = lambda: None,
                 note_error: Callable[[str], None] = lambda _m: None) -> None:
        self.tree = tree
        self._disk = OverlayDisk(shared=shared)
        self._inodes = OverlayInodes(tree)
        self._session = session
        self._note_error = note_error  # last_error in the status, and the log
        # The agent whose homes the mount shows (None until the session says) and their index;
        # `_live`: the tree is the viewer's current state (a load before a connection is not yet).
        self.agent: str | None = None
        self.index: Index | None = None
        self._live = False
        tree.on_object = self._object_changed

    def home_dir(self, object_id: str) -> Path:
        """An object's home (its files under `own/`, its child prims' under `prims/`)."""
        assert self.agent is not None
        return self._disk.agent_dir(self.agent) / "objects" / id_name(object_id)

    def folder_dir(self, folder: Folder) -> Path | None:
        """Where the local overlay of a folder lives: in its object's home, keyed by the agent and
        the object's UUID (a child prim's own UUID within it), whatever it is called; None while
        no agent is known."""
        if self.agent is None:
            return None
        if folder is self.tree.root:
            return self._disk.agent_dir(self.agent) / "root"
        home = self.home_dir(folder.object_id)
        return home / PRIMS / id_name(folder.uuid) if folder.is_child else home / OWN

    def dir_of(self, parent: Node) -> str | None:
        """The disk directory holding `parent`'s overlay entries (None where there is none)."""
        if isinstance(parent, OverlayNode):
            return parent.path
        if isinstance(parent, Folder):
            where = self.folder_dir(parent)
            return None if where is None else str(where)
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
        return self._inodes.node(parent, name, path, st)

    # The overlay files' inodes (model/overlay_inodes.py).

    def node(self, parent: Node, name: str, path: str, st: os.stat_result | None = None) -> OverlayNode:
        return self._inodes.node(parent, name, path, st)

    def moved(self, old_path: str, new_path: str) -> None:
        """After a rename on disk, the node (and for a directory everything below) follows."""
        self._inodes.moved(old_path, new_path)

    def adopt_inode(self, path: str, inode: int) -> None:
        """A file becoming overlay content at `path` keeps the kernel inode it had."""
        self._inodes.adopt_inode(path, inode)

    def removed(self, node: OverlayNode) -> None:
        """The name `node.path` is gone: a new file at that path must get a new inode."""
        self._inodes.removed(node)

    # Disk work the writer runs off the trio thread.

    @staticmethod
    def read(node: OverlayNode) -> bytes:
        with open(node.path, "rb") as f:
            return f.read()

    def write_new(self, parent: Node, name: str, data: bytes) -> str:
        """Write `data` as the overlay file `name` of `parent` (replacing one there atomically)."""
        path = os.path.join(self.ensure(parent), name)
        self._disk.write_file(path, data)
        return path

    def unlink(self, node: OverlayNode) -> None:
        os.unlink(node.path)
        self._inodes.removed(node)

    # Changes the fs layer asks for on overlay files and directories: made on disk as asked.

    @staticmethod
    def change(node: OverlayNode, *, size: int | None = None, mode: int | None = None, uid: int | None = None,
               gid: int | None = None, atime_ns: int | None = None, mtime_ns: int | None = None) -> None:
        """setattr: each change given (None: unchanged). A symlink's mode is not changed."""
        OverlayDisk.change(node.path, size=size, mode=mode, uid=uid, gid=gid, atime_ns=atime_ns, mtime_ns=mtime_ns)

    def mkdir(self, parent: Folder | OverlayNode, name: str, mode: int) -> OverlayNode:
        path = os.path.join(self.ensure(parent), name)
        os.mkdir(path, mode)
        return self._inodes.node(parent, name, path)

    def rmdir(self, node: OverlayNode) -> None:
        os.rmdir(node.path)
        self._inodes.removed(node)

    def create(self, parent: Folder | OverlayNode, name: str, flags: int, mode: int) -> tuple[OverlayNode, int]:
        """A new overlay file, opened: its node and the descriptor (the caller's to close)."""
        path = os.path.join(self.ensure(parent), name)
        fd = os.open(path, (flags | os.O_CREAT) & ~os.O_NOCTTY, mode)
        return self._inodes.node(parent, name, path), fd

    def symlink(self, parent: Folder | OverlayNode, name: str, target: bytes) -> OverlayNode:
        path = os.path.join(self.ensure(parent), name)
        os.symlink(target, path)
        return self._inodes.node(parent, name, path)

    def link(self, node: OverlayNode, parent: Folder | OverlayNode, name: str) -> OverlayNode:
        path = os.path.join(self.ensure(parent), name)
        os.link(node.path, path)
        return self._inodes.node(parent, name, path)

    def rename(self, src: OverlayNode, parent: Folder | OverlayNode, name: str, dst: Node | None) -> OverlayNode:
        """Within the overlay: a plain rename on disk, never over an item, a folder or a folder's
        new file (those are remote names)."""
        if isinstance(dst, (Item, Folder)) or (isinstance(dst, NewFile) and dst.folder is not None):
            raise FsError(errno.EEXIST, "")
        path = os.path.join(self.ensure(parent), name)
        if isinstance(dst, OverlayNode):
            self._inodes.removed(dst)
        os.rename(src.path, path)
        self._inodes.moved(src.path, path)
        return self._inodes.node(parent, name, path)

    def ensure(self, parent: Node) -> str:
        base = self.dir_of(parent)
        if base is None:
            if isinstance(parent, Folder):
                raise FsError(errno.EAGAIN, "local files wait until the viewer says which agent is logged in")
            raise FsError(errno.EPERM, "")
        if isinstance(parent, Folder) and parent is not self.tree.root:
            self._note_home(parent)
        self._disk.make_dirs(base)
        return base

    # Homes: which object's files a folder shows (local/overlay_homes.py).

    def on_event(self, event: ev.SlfsEvent) -> None:
        if isinstance(event, ev.Connected):
            info = self._session()
            if info is not None:
                self._connected(agent_key(info.agent_id, info.agent_name), info.lists_objects)
        elif isinstance(event, ev.Disconnected):
            self._live = False  # the next connection's load is not the viewer's state until it ends

    def status(self) -> dict[str, Any]:
        return {}

    def _connected(self, agent: str, complete: bool) -> None:
        """A session is ready: the agent's homes are shown, and the tree (the viewer's state
        now: `complete` when it came as a whole listing) is checked against them once."""
        try:
            if agent != self.agent:
                self._select(agent)
            self._sync(complete)
        except OSError as exc:
            self._disk_error("checking the objects' local files", exc)
        self._live = True

    def _select(self, agent: str) -> None:
        self.agent = agent
        self.index = Index(self._disk.agent_dir(agent), self._disk.file_mode)
        self.index.load()
        self._migrate()
        log.info("overlay: local files of agent %s in %s", agent, self._disk.agent_dir(agent))

    def _sync(self, complete: bool) -> None:
        """Homes whose objects went away while no session said so (a crash, a viewer that quit),
        when the tree is complete; homes of objects published again; objects that take a home."""
        index = self.index
        assert index is not None
        objects = self.tree.objects
        by_key = {id_name(oid): folder for oid, folder in objects.items()}
        counts = Counter(folder.link_name for folder in objects.values())
        changed = False
        for key, home in index.homes.items():
            folder = by_key.get(key)
            if folder is not None:
                changed |= index.came_back(key, folder.link_name)
            elif complete and not home.gone:
                # Gone unseen (the last mount crashed): when is unknown. One object of its name
                # published now may be it re-rezzed (adoptable sees whether it is the only one).
                index.gone_unseen(key, ambiguous=counts[home.name] > 1)
                changed = True
        if changed:
            index.save()
        waiting = {home.name for home in index.homes.values() if home.gone}
        for key, folder in by_key.items():
            if folder.link_name in waiting and key not in index.homes:
                self._adopt(folder, counts[folder.link_name] - 1)

    def _object_changed(self, kind: str, folder: Folder) -> None:
        """The tree's report (Tree.on_object): an object "added", "renamed" or "removed"."""
        index = self.index
        if index is None:
            return
        try:
            key = id_name(folder.object_id)
            if kind == "removed":
                others = (f.link_name for f in self.tree.objects.values())
                if index.went_away(key, folder.link_name, others):
                    if folder.built:  # link names its prims share: none of their homes is re-rezzed
                        links = Counter(p.link_name for p in folder.built_members() if isinstance(p, Folder))
                        index.share_links(key, sorted(n for n, c in links.items() if c > 1))
                    index.save()
            elif key in index.homes:
                if index.came_back(key, folder.link_name):
                    index.save()
            elif kind == "added" and self._live and any(h.gone and h.name == folder.link_name
                                                        for h in index.homes.values()):
                name = folder.link_name
                self._adopt(folder, sum(1 for f in self.tree.objects.values() if f.link_name == name) - 1)
        except OSError as exc:
            self._disk_error(f"the local files of {folder.link_name!r}", exc)

    def _adopt(self, folder: Folder, others_published: int) -> None:
        """A newly published object takes the home of one of its name that went away (re-rezzed:
        the same object with a new UUID), as overlay_homes.adoptable says."""
        index = self.index
        assert index is not None
        old = adoptable(index.homes, folder.link_name, others_published, names.tag_of(folder.uuid, 64))
        if old is None:
            return
        key = id_name(folder.object_id)
        objects = self._disk.agent_dir(self.agent or "") / "objects"
        src, dst = objects / old, objects / key
        if not src.is_dir():  # removed by hand: nothing to take, and it no longer waits
            index.forget(old)
            index.save()
            return
        if dst.exists():
            return
        os.rename(src, dst)
        self._inodes.moved(str(src), str(dst))
        home = index.adopt(old, key)
        if home.prims:
            self._prims_follow(dst, home, folder)
        index.prims_followed(home)
        index.save()
        log.info("overlay: %r (%s) takes the local files its name left (%s went away: re-rezzed)",
                 folder.link_name, folder.object_id, old)
        own = dst / OWN
        if own.is_dir():
            for name in os.listdir(own):
                self.tree.invalidate_entry(folder, name)  # a lookup before may be cached as missing

    def _prims_follow(self, home_dir: Path, home: Home, folder: Folder) -> None:
        """An adopted home's child prim homes go to the prims of the same link name (one each)."""
        new = {id_name(p.uuid): p.link_name for p in folder.prims.values()}
        prims = home_dir / PRIMS
        for old, key in prim_moves(home.prims, new, home.shared_links).items():
            if old == key or not (prims / old).is_dir() or (prims / key).exists():
                continue
            os.rename(prims / old, prims / key)
            self._inodes.moved(str(prims / old), str(prims / key))
            home.prims[key] = home.prims.pop(old)

    def _note_home(self, folder: Folder) -> None:
        """A folder's files are about to be made: its object's home is in the index first (so a
        crash leaves no home the index does not know)."""
        index = self.index
        if index is None:
            return
        obj = folder.object_folder
        key = id_name(obj.object_id)
        home = index.homes.get(key)
        changed = home is None
        if home is None:
            home = index.add(key, Home(name=obj.link_name))
        if folder.is_child and home.prims.get(id_name(folder.uuid)) != folder.link_name:
            home.prims[id_name(folder.uuid)] = folder.link_name
            changed = True
        if changed:
            self._disk.make_dirs(str(index.dir))
            index.save()

    def _migrate(self) -> None:
        """Overlays kept by folder name (overlay/objects/NAME, before homes) move to homes: one
        whose name is one published object's goes to that object's home; the others wait for an
        object of their name (as if gone while no other had it). The mount root's (overlay/root)
        goes to the first agent's."""
        old_root, new_root = self._disk.root_dir() / "root", self._disk.agent_dir(self.agent or "") / "root"
        if old_root.is_dir() and not new_root.exists():  # the mount root's, to the first agent's
            self._disk.make_dirs(str(new_root.parent))
            os.rename(old_root, new_root)
            log.info("overlay: %s moved to %s", old_root, new_root)
        legacy = self._disk.root_dir() / LEGACY
        if not legacy.is_dir():
            return
        index = self.index
        assert index is not None
        objects = self._disk.agent_dir(self.agent or "") / "objects"
        for entry in sorted(os.scandir(legacy), key=lambda e: e.name):
            if not entry.is_dir(follow_symlinks=False):
                continue
            folder = self._legacy_owner(entry.name)
            key = id_name(folder.object_id) if folder is not None else _legacy_key(entry.name)
            home_dir = objects / key
            if home_dir.exists():
                log.warning("overlay: %s not moved: %s exists", entry.path, home_dir)
                continue
            self._disk.make_dirs(str(home_dir))
            os.rename(entry.path, home_dir / OWN)
            stem, tag = names.strip_tag(entry.name)
            home = Home(name=folder.link_name if folder is not None else names.to_sl(stem),
                        gone=folder is None, tag=(tag or "") if folder is None else "")
            index.add(key, home)
            self._legacy_prims(home_dir, home, folder)
            index.save()
            if folder is not None:
                log.info("overlay: %s moved to the home of %s (%s)", entry.path, folder.link_name, folder.object_id)
            else:
                log.info("overlay: %s moved to %s; it waits for an object named %r%s", entry.path, home_dir,
                         home.name, f" whose UUID starts {home.tag}" if home.tag else "")
        try:
            legacy.rmdir()
        except OSError:
            pass

    def _legacy_owner(self, dir_name: str) -> Folder | None:
        """The one published object an old overlay directory's name means: its shown name's tag
        names its UUID; a plain name, the only object of that name."""
        stem, tag = names.strip_tag(dir_name)
        matches = [f for f in self.tree.objects.values()
                   if (names.tag_of(f.uuid, 64).startswith(tag) and names.to_fs(f.link_name) == stem
                       if tag is not None else names.to_fs(f.link_name) == dir_name)]
        return matches[0] if len(matches) == 1 else None

    def _legacy_prims(self, home_dir: Path, home: Home, folder: Folder | None) -> None:
        """An old overlay kept its child prims' as subdirectories named as the prims were shown
        (`Leaf@1a2b3c4d`): each goes to its prim's home (the prim whose tag it has, else one to
        be matched by link name when its object is adopted)."""
        own = home_dir / OWN
        prims = {names.tag_of(p.uuid, 64): p for p in folder.prims.values()} if folder is not None else {}
        for entry in sorted(os.scandir(own), key=lambda e: e.name):
            stem, tag = names.strip_tag(entry.name)
            if tag is None or entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            found = [p for t, p in prims.items() if t.startswith(tag) and names.to_fs(p.link_name) == stem]
            key = id_name(found[0].uuid) if len(found) == 1 else _legacy_key(entry.name)
            self._disk.make_dirs(str(home_dir / PRIMS))
            if (home_dir / PRIMS / key).exists():
                continue
            os.rename(entry.path, home_dir / PRIMS / key)
            home.prims[key] = names.to_sl(stem)

    def _disk_error(self, what: str, exc: OSError) -> None:
        self._note_error(f"local overlay: {what}: {exc}")


def _legacy_key(dir_name: str) -> str:
    """The home of an old overlay directory no object is known for yet (by its name's digest)."""
    return "legacy-" + hashlib.sha256(os.fsencode(dir_name)).hexdigest()[:32]
