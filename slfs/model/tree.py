"""The published world as a tree of folders and items, with stable inode numbers.

The tree is pure state: no I/O and no awaits, so under trio every method runs atomically. It is
fed by the session's notifications (publish, unpublish, update, object.list) and read by the file
system. Whenever a name or an attribute the kernel may have cached changes, the tree reports it
through `on_invalidate` so the file system layer can drop the kernel's copy from a background task.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Union

import attrs

from ..protocol.types import (
    InventoryItem,
    LinkedObject,
    ObjectUpdate,
    Permissions,
    PublishedObject,
)
from . import names

log = logging.getLogger(__name__)

ROOT_INODE = 1


@attrs.frozen
class EntryChanged:
    """The name `name` in folder `parent` now means something else (or nothing)."""

    parent: int
    name: str


@attrs.frozen
class InodeChanged:
    """The attributes or content of `inode` changed; `data` says whether cached pages are stale."""

    inode: int
    data: bool = True


Invalidation = Union[EntryChanged, InodeChanged]


def _now_ns() -> int:
    return time.time_ns()


@attrs.define(eq=False)
class Node:
    inode: int
    uuid: str
    name: str = ""
    parent: Folder | None = None
    # Lookup count the kernel holds on this inode (readdirplus and lookup add, forget removes).
    lookups: int = 0
    ctime_ns: int = attrs.field(factory=_now_ns)

    @property
    def attached(self) -> bool:
        return self.parent is not None or self.inode == ROOT_INODE


@attrs.define(eq=False)
class Item(Node):
    data: InventoryItem | None = None
    folder: Folder | None = None
    # Content as bytes once fetched. `content_valid` is False when the viewer may have changed it
    # since (an inventory replacement): the old bytes stay for comparison and offline reads.
    content: bytes | None = None
    content_valid: bool = False
    mtime_ns: int = attrs.field(factory=_now_ns)
    # Bumped each time the prim's inventory replaces this item's record (conflict detection).
    generation: int = 0
    # Until this time.monotonic(), the next inventory update is the echo of our own save.
    expect_own_update: float = 0.0
    # Local edits not yet stored in-world (shared by every open handle, as on a local disk) and
    # the content they started from (a save whose base differs from the viewer's is a conflict).
    local: bytearray | None = None
    base: bytes | None = None
    dirty: bool = False

    @property
    def info(self) -> InventoryItem:
        assert self.data is not None
        return self.data

    @property
    def is_script(self) -> bool:
        return self.info.type == "script"

    @property
    def perms(self) -> Permissions | None:
        return self.info.permissions

    @property
    def readable(self) -> bool:
        """Scripts need COPY and MODIFY to be read; notecards are always readable."""
        p = self.perms
        if not self.is_script or p is None:
            return True
        return p.can_copy and p.can_modify

    @property
    def writable(self) -> bool:
        p = self.perms
        own = p is None or p.can_modify
        return own and (self.folder is None or self.folder.writable)

    @property
    def size(self) -> int | None:
        """Exact size when the content is known and current, else None."""
        if self.local is not None:
            return len(self.local)
        if self.content is not None and self.content_valid:
            return len(self.content)
        if not self.readable:
            return 0
        return None

    # names.Named
    @property
    def wanted_base(self) -> str:
        return names.to_fs(self.info.name)

    @property
    def wanted_ext(self) -> str:
        return names.extension_for(self.info.type, self.info.subtype)

    @property
    def always_tagged(self) -> bool:
        return False


@attrs.define(eq=False)
class Scratch(Node):
    """A file that lives only in memory: a new file not yet created in-world (pending), or an
    orphan (an item file replaced or unlinked while open: its data never reaches the viewer)."""

    data: bytearray = attrs.field(factory=bytearray)
    mode: int = 0o644
    mtime_ns: int = attrs.field(factory=_now_ns)
    dirty: bool = False
    # The folder it was created in (pending only); None for orphans.
    folder: Folder | None = None


@attrs.define(eq=False)
class Local(Node):
    """A file, directory or symlink of the local overlay, kept on disk at `path`."""

    path: str = ""
    local_parent: Node | None = None  # the folder or overlay directory it lives in


@attrs.define(eq=False)
class Folder(Node):
    """The mount root, an object (its root prim) or a child prim."""

    object_id: str = ""
    link_name: str = ""
    description: str = ""
    link_number: int = 1
    permissions: Permissions | None = None
    is_child: bool = False
    published: PublishedObject | None = None  # for object folders: the last full record
    items: dict[str, Item] = attrs.field(factory=dict)
    prims: dict[str, Folder] = attrs.field(factory=dict)  # child prims of an object folder
    entries: dict[str, Node] = attrs.field(factory=dict)  # file name -> node, as listed
    listed: bool = False
    mtime_ns: int = attrs.field(factory=_now_ns)
    # Write path: new files not yet in-world, and item names hidden locally.
    scratch: dict[str, Scratch] = attrs.field(factory=dict)
    # name -> item: unlinked (the delete waits for the grace period) or renamed to a backup name.
    tombstones: dict[str, Item] = attrs.field(factory=dict)

    @property
    def writable(self) -> bool:
        return self.permissions is None or self.permissions.can_modify

    @property
    def object_folder(self) -> Folder:
        return self.parent if self.is_child and self.parent is not None else self

    # names.Named
    @property
    def wanted_base(self) -> str:
        return names.to_fs(self.link_name) or ("prim" if self.is_child else "object")

    @property
    def wanted_ext(self) -> str:
        return ""

    @property
    def always_tagged(self) -> bool:
        return self.is_child


class Tree:
    def __init__(self, on_invalidate: Callable[[Invalidation], None] = lambda _i: None) -> None:
        self._on_invalidate = on_invalidate
        self._inodes: dict[str, int] = {}
        self._next_inode = itertools.count(ROOT_INODE + 1)
        self.nodes: dict[int, Node] = {}
        self.root = Folder(inode=ROOT_INODE, uuid="", name="")
        self.nodes[ROOT_INODE] = self.root
        self.objects: dict[str, Folder] = {}
        self.by_uuid: dict[str, Node] = {}
        # Called with each item whose content may have changed in-world and was cached.
        self.on_stale: Callable[[Item], None] = lambda _i: None

    # --- inode numbers --------------------------------------------------------------------

    def inode_for(self, key: str) -> int:
        """The inode of a UUID (or any other stable key): the same for the life of the mount."""
        ino = self._inodes.get(key)
        if ino is None:
            ino = self._inodes[key] = next(self._next_inode)
        return ino

    def node(self, inode: int) -> Node | None:
        return self.nodes.get(inode)

    def forget(self, inode: int, count: int) -> None:
        node = self.nodes.get(inode)
        if node is None:
            return
        node.lookups = max(0, node.lookups - count)
        if node.lookups == 0 and not node.attached:
            # Detached and no longer known to the kernel: the inode number stays reserved.
            del self.nodes[inode]

    def bind_key(self, key: str, inode: int) -> None:
        """Make `key` (a UUID, or another stable name such as a local path) mean `inode`."""
        self._inodes[key] = inode

    def unbind_key(self, key: str, inode: int) -> None:
        if self._inodes.get(key) == inode:
            del self._inodes[key]

    def rekey_prefix(self, old: str, new: str) -> list[tuple[str, int]]:
        """Keys equal to `old` or below `old + "/"` move under `new`; returns the new (key, inode)s."""
        moved = []
        for key, ino in list(self._inodes.items()):
            if key == old or key.startswith(old + "/"):
                del self._inodes[key]
                moved.append((new + key[len(old):], ino))
        self._inodes.update(moved)
        return moved

    def move_to_fresh_inode(self, item: Item) -> None:
        """The item's inode went to another file (a rename over it): it takes a new one, unknown
        to the kernel."""
        fresh = self.fresh_inode()
        item.inode, item.lookups = fresh, 0
        self.nodes[fresh] = item
        self._inodes[item.uuid] = fresh

    def fresh_inode(self) -> int:
        return next(self._next_inode)

    def add_node(self, node: Node) -> None:
        self.nodes[node.inode] = node

    def rebind(self, item: Item, inode: int) -> Scratch:
        """Give `item` the kernel inode `inode` (a file renamed or created onto its name).

        The inode the item had becomes an orphan Scratch holding its last data, so open handles
        on it keep working but never reach the viewer."""
        old = item.inode
        orphan = Scratch(inode=old, uuid="", name=item.name, lookups=item.lookups,
                         data=bytearray(item.local if item.local is not None else item.content or b""))
        self.nodes[old] = orphan
        displaced = self.nodes.get(inode)
        item.lookups = displaced.lookups if displaced is not None else 0
        item.inode = inode
        self.nodes[inode] = item
        self._inodes[item.uuid] = inode
        return orphan

    def register(self, node: Node) -> None:
        self.nodes[node.inode] = node
        self.by_uuid[node.uuid] = node

    def _detach(self, node: Node) -> None:
        node.parent = None
        if self.by_uuid.get(node.uuid) is node:
            del self.by_uuid[node.uuid]
        if isinstance(node, Folder):
            for child in [*node.items.values(), *node.prims.values()]:
                self._detach(child)
        if node.lookups == 0:
            self.nodes.pop(node.inode, None)

    def iter_items(self) -> Iterator[Item]:
        for obj in self.objects.values():
            for folder in (obj, *obj.prims.values()):
                yield from folder.items.values()

    @property
    def item_count(self) -> int:
        return sum(len(f.items) for o in self.objects.values() for f in (o, *o.prims.values()))

    # --- applying the viewer's state ------------------------------------------------------

    def replace_all(self, objects: list[PublishedObject]) -> None:
        """object.list after (re)connecting: the complete published state."""
        seen = {o.object_id for o in objects}
        for oid in list(self.objects):
            if oid not in seen:
                self._remove_object(oid, relayout=False)
        for obj in objects:
            self._put_object(obj, relayout=False)
        self.relayout(self.root)

    def publish(self, obj: PublishedObject) -> None:
        self._put_object(obj, relayout=True)

    def unpublish(self, object_id: str) -> bool:
        if object_id not in self.objects:
            return False
        self._remove_object(object_id, relayout=True)
        return True

    def update(self, msg: ObjectUpdate) -> bool:
        """Apply one of the viewer's object.update shapes; False when the object is unknown."""
        folder = self.objects.get(msg.object_id)
        if folder is None:
            return False
        root_renamed = False
        if msg.object_name is not None and msg.object_name != folder.link_name:
            folder.link_name = msg.object_name
            root_renamed = True
        if msg.object_description is not None:
            folder.description = msg.object_description
            self._touch(folder)
        if msg.inventory is not None:
            self._set_inventory(folder, msg.inventory)
        if msg.linked_objects is not None:
            self._set_children(folder, msg.linked_objects)
        changes = msg.changes.linked_objects if msg.changes is not None else None
        if changes is not None:
            for mod in changes.modified or []:
                child = folder.prims.get(mod.link_id)
                if child is None:
                    log.warning("update for unknown child prim %s of %s ignored", mod.link_id, msg.object_id)
                    continue
                if mod.link_description is not None:
                    child.description = mod.link_description
                    self._touch(child)
                if mod.inventory is not None:
                    self._set_inventory(child, mod.inventory)
                if mod.link_name is not None and mod.link_name != child.link_name:
                    child.link_name = mod.link_name
                    self.relayout(folder)
            # Deltas the document specifies but viewers do not emit.
            for added in changes.added or []:
                self._put_child(folder, added)
            for removed in changes.removed or []:
                if removed in folder.prims:
                    self._detach(folder.prims.pop(removed))
            if changes.added or changes.removed:
                self.relayout(folder)
        if root_renamed:
            self.relayout(self.root)
        return True

    def invalidate_item(self, item: Item, *, data: bool) -> None:
        self._on_invalidate(InodeChanged(item.inode, data=data))

    def _touch(self, node: Node) -> None:
        self._on_invalidate(InodeChanged(node.inode, data=False))

    def _put_object(self, obj: PublishedObject, *, relayout: bool) -> None:
        folder = self.objects.get(obj.object_id)
        renamed = False
        if folder is None:
            folder = Folder(inode=self.inode_for(obj.object_id), uuid=obj.object_id, object_id=obj.object_id)
            folder.parent = self.root
            self.objects[obj.object_id] = folder
            self.register(folder)
            renamed = True
        renamed = renamed or folder.link_name != obj.object_name
        folder.link_name = obj.object_name
        folder.description = obj.object_description or ""
        folder.permissions = obj.permissions
        folder.published = obj
        self._touch(folder)
        self._set_inventory(folder, obj.inventory, relayout=False)
        self._set_children(folder, obj.linked_objects or [], relayout=False)
        self.relayout(folder)
        if renamed and relayout:
            self.relayout(self.root)

    def _remove_object(self, object_id: str, *, relayout: bool) -> None:
        folder = self.objects.pop(object_id)
        self._detach(folder)
        if relayout:
            self.relayout(self.root)

    def _put_child(self, obj_folder: Folder, link: LinkedObject) -> Folder:
        child = obj_folder.prims.get(link.link_id)
        if child is None:
            child = Folder(
                inode=self.inode_for(link.link_id), uuid=link.link_id, object_id=obj_folder.object_id,
                is_child=True,
            )
            child.parent = obj_folder
            obj_folder.prims[link.link_id] = child
            self.register(child)
        child.link_name = link.link_name
        child.link_number = link.link_number
        child.description = link.link_description or ""
        child.permissions = link.permissions
        self._touch(child)
        self._set_inventory(child, link.inventory)
        return child

    def _set_children(self, folder: Folder, links: list[LinkedObject], *, relayout: bool = True) -> None:
        keep = {link.link_id for link in links}
        for link_id in [k for k in folder.prims if k not in keep]:
            self._detach(folder.prims.pop(link_id))
        for link in links:
            self._put_child(folder, link)
        if relayout:
            self.relayout(folder)

    def _set_inventory(self, folder: Folder, inventory: list[InventoryItem], *, relayout: bool = True) -> None:
        """A complete replacement of a prim's inventory (the only inventory shape viewers send)."""
        keep = {i.item_id for i in inventory}
        for item_id in [k for k in folder.items if k not in keep]:
            self._detach(folder.items.pop(item_id))
        for data in inventory:
            item = folder.items.get(data.item_id)
            if item is None:
                item = Item(inode=self.inode_for(data.item_id), uuid=data.item_id, data=data, folder=folder)
                item.parent = folder
                folder.items[data.item_id] = item
                self.register(item)
                continue
            old = item.info
            item.data = data
            item.generation += 1
            unchanged = data.revision is not None and data.revision == old.revision
            own = item.expect_own_update > time.monotonic()
            if own:
                item.expect_own_update = 0.0
                unchanged = True
            if item.content is not None and item.content_valid and not unchanged:
                # The viewer sends no per-item content change: any replacement may hide one.
                item.content_valid = False
                self.on_stale(item)
            self._on_invalidate(InodeChanged(item.inode, data=False))
        if relayout:
            self.relayout(folder)

    def relayout(self, folder: Folder) -> None:
        """Recompute the folder's file names and report every name whose meaning changed."""
        if folder is self.root:
            members: list[Node] = list(self.objects.values())
        else:
            hidden = {id(i) for i in folder.tombstones.values()}
            members = [*(i for i in folder.items.values() if id(i) not in hidden), *folder.prims.values()]
        layout: dict[str, Node] = names.resolve(members)  # type: ignore[arg-type, assignment]
        old = folder.entries
        for name in set(old) | set(layout):
            before = old.get(name)
            if before is layout.get(name):
                continue
            # A name that meant nothing before has no dentry to drop (ENOENT is not cached), unless a
            # local file of that name is now shadowed. Invalidating it anyway would race with a
            # program that just looked it up and chdir'd into it (getcwd() then fails).
            if before is None and name not in folder.scratch:
                continue
            self._on_invalidate(EntryChanged(folder.inode, name))
        for name, node in layout.items():
            node.name = name
        if set(old) != set(layout):
            folder.mtime_ns = _now_ns()
            self._on_invalidate(InodeChanged(folder.inode, data=False))
        folder.entries = layout

    # --- paths ------------------------------------------------------------------------------

    def path_of(self, node: Node) -> str:
        """The node's path relative to the mount root ('' for the root)."""
        parts: list[str] = []
        cur: Node | None = node
        while cur is not None and cur.inode != ROOT_INODE:
            parts.append(cur.name)
            cur = cur.parent
        return "/".join(reversed(parts))
