"""The published world as a tree of folders and items, with stable inode numbers.

The tree is pure state: no I/O and no awaits, so under trio every method runs atomically. It is
fed by the session's notifications (publish, unpublish, update, object.list) and read by the file
system. Whenever a name or an attribute the kernel may have cached changes, the tree reports it
through `on_invalidate` so the file system layer can drop the kernel's copy from a background task.

An object the viewer's object.list names is shown at once with its own fields; its items and prims
are decoded and built when its folder is first read, or an event names one of them (`_build`): a
100,000-item world is listed in a fraction of the time, and what is built is what a whole decode
builds.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs

from ..gcpause import paused_gc
from ..protocol.constants import NULL_UUID
from ..protocol.errors import ProtocolError
from ..protocol.types import (
    InventoryItem,
    LinkedObject,
    ObjectUpdate,
    Permissions,
    PublishedObject,
)
from ..session.listener import ListedObject
from .layout import Layout
from .nodes import (
    ROOT_INODE,
    Cache,
    Edit,
    EntryChanged,
    Folder,
    InodeChanged,
    Invalidation,
    Item,
    LiveState,
    MemoryFile,
    NewFile,
    Node,
    Orphan,
    OverlayNode,
    StatChanged,
    describe_perms,
    now_ns,
    release,
)

# The node types are model/nodes.py's; the file system layer and the tests import them from here too.
__all__ = ["ROOT_INODE", "Cache", "Edit", "EntryChanged", "Folder", "InodeChanged", "Invalidation", "Item",
           "LiveState", "MemoryFile", "NewFile", "Node", "Orphan", "OverlayNode", "StatChanged", "Tree",
           "describe_perms"]

log = logging.getLogger(__name__)


def _folder_stat(folder: Folder) -> tuple[object, ...]:
    """What stat and getfattr show of a folder (a change must reach the kernel's cache)."""
    return (folder.link_name, folder.link_number, folder.description, folder.permissions, folder.owner_id,
            folder.can_save_back)


def _merged(before: Permissions | None, now: Permissions | None) -> Permissions | None:
    """A (re)published prim's permissions: a `next_owner` not sent yet keeps what we knew."""
    if now is None or before is None:
        return now
    return before.merged(now)


def _item_known(now: InventoryItem, before: InventoryItem) -> InventoryItem:
    """An item's new record with each optional field the viewer sent with a value of an unexpected
    type (the codec ignored it: `dropped`) holding the value known before, its permissions' masks
    likewise. A field not sent at all means what absence means in a full replacement.

    The record keeps `dropped`: which of its values are carried over rather than sent
    (_content_may_have_changed reads it for `revision`)."""
    perms = now.permissions
    if not now.dropped and (perms is None or not perms.dropped):
        return now
    kept = {name: getattr(before, name) for name in now.dropped}
    if perms is not None and perms.dropped and before.permissions is not None:
        kept["permissions"] = attrs.evolve(perms, **{n: getattr(before.permissions, n) for n in perms.dropped})
    return attrs.evolve(now, **kept)


class Tree:
    def __init__(self, on_invalidate: Callable[[Invalidation], None] = lambda _i: None,
                 on_stale: Callable[[Item], None] = lambda _i: None,
                 kernel_knows: Callable[[int], bool] = lambda _i: False) -> None:
        self._report = on_invalidate
        self._building: int | None = None  # the inode of the object folder _build is building
        # Whether the kernel holds a reference on an inode (the fs layer counts them): a detached
        # node it still knows stays reachable until forgotten() says otherwise.
        self._kernel_knows = kernel_knows
        # Called with each item whose content may have changed in-world and was cached.
        self._on_stale = on_stale
        self._inodes: dict[str, int] = {}
        self._next_inode = itertools.count(ROOT_INODE + 1)
        self.nodes: dict[int, Node] = {}
        self.root = Folder(inode=ROOT_INODE, uuid="", name="")
        self.nodes[ROOT_INODE] = self.root
        self.objects: dict[str, Folder] = {}
        self._by_uuid: dict[str, Node] = {}
        # Object folders not built yet (Folder.built): what the viewer's object.list said of them,
        # and the object each of their prims' and items' UUIDs is listed in.
        self._listed: dict[str, ListedObject] = {}
        self._listed_in: dict[str, str] = {}
        self.layout = Layout(self.root, self.objects, self._on_invalidate)
        # Told each object folder "added", "renamed" (its in-world name) or "removed", once the
        # tree shows it so: the local overlay's homes follow objects (set by model/overlay.py).
        self.on_object: Callable[[str, Folder], None] = lambda _kind, _folder: None

    def _on_invalidate(self, change: Invalidation) -> None:
        # A folder being built shows the kernel nothing new: it never saw what was not built (a
        # read of it builds it first), and its own attributes are the listing's.
        if self._building is None or isinstance(change, EntryChanged) or change.inode != self._building:
            self._report(change)

    # --- inode numbers --------------------------------------------------------------------

    def inode_for(self, key: str) -> int:
        """The inode of a UUID (or any other stable key): the same for the life of the mount."""
        ino = self._inodes.get(key)
        if ino is None:
            ino = self._inodes[key] = next(self._next_inode)
        return ino

    def node(self, inode: int) -> Node | None:
        return self.nodes.get(inode)

    def find(self, uuid: str) -> Node | None:
        """The attached node of a UUID (an item's, a prim's or an object's), building the object
        it is listed in if that is not built yet."""
        node = self._by_uuid.get(uuid)
        if node is None:
            oid = self._listed_in.get(uuid)
            if oid is not None and oid in self._listed:
                self._build(self.objects[oid])
                node = self._by_uuid.get(uuid)
        return node

    @property
    def by_uuid(self) -> dict[str, Node]:
        """Every attached node by UUID (every listed object built first)."""
        self.build_all()
        return self._by_uuid

    def forgotten(self, inode: int) -> None:
        """The kernel no longer knows `inode`: its node goes if it is detached."""
        node = self.nodes.get(inode)
        if node is not None and not node.attached:
            # Detached and no longer known to the kernel: the inode number stays reserved.
            del self.nodes[inode]
            release(node)

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
        old = item.inode
        item.inode = fresh
        self.nodes[fresh] = item
        self._inodes[item.uuid] = fresh
        self._on_invalidate(StatChanged(old))

    def fresh_inode(self) -> int:
        return next(self._next_inode)

    def add_node(self, node: Node) -> None:
        self.nodes[node.inode] = node
        self.stat_changed(node)  # the inode may have meant another node

    def drop_node(self, inode: int) -> None:
        """The inode now means a node kept elsewhere (an overlay file that took it over)."""
        self.nodes.pop(inode, None)
        self._on_invalidate(StatChanged(inode))

    def rebind(self, item: Item, inode: int) -> Orphan:
        """Give `item` the kernel inode `inode` (a file renamed or created onto its name).

        The inode the item had becomes an Orphan holding its last data, so open handles
        on it keep working but never reach the viewer."""
        old = item.inode
        orphan = Orphan(inode=old, uuid="", name=item.name,
                        data=bytearray(item.edit.buffer if item.edit.buffer is not None else item.cache.content or b""))
        self.nodes[old] = orphan
        item.inode = inode
        self.nodes[inode] = item
        self._inodes[item.uuid] = inode
        self._on_invalidate(StatChanged(old))
        self.stat_changed(item)
        return orphan

    def register(self, node: Node) -> None:
        self.nodes[node.inode] = node
        self._by_uuid[node.uuid] = node

    def _detach(self, node: Node) -> None:
        node.parent = None
        if self._by_uuid.get(node.uuid) is node:
            del self._by_uuid[node.uuid]
        if isinstance(node, Folder):
            if not node.built:  # its listing goes with it, unread
                self._unlist(node)
            for child in node.built_members():
                self._detach(child)
        if not self._kernel_knows(node.inode):
            self.nodes.pop(node.inode, None)
            release(node)

    def end_own_updates(self) -> None:
        """The connection ended: no echo of a save made on it can come any more. The next session's
        object.list may hold another content (a viewer restarted with its own state), so it must
        not pass for that echo (_content_may_have_changed)."""
        for item in self._built_items():  # an item not built yet has no save of ours
            item.echo.cancel()

    def iter_items(self) -> Iterator[Item]:
        """Every item (every listed object built first)."""
        self.build_all()
        return self._built_items()

    def items_in(self, folder: Folder) -> list[Item]:
        """The items of a folder and of its prims (every item, for the root): only its object built."""
        if folder is self.root:
            return list(self.iter_items())
        return [item for f in (folder, *folder.prims.values()) for item in f.items.values()]

    def _built_items(self) -> Iterator[Item]:
        for obj in self.objects.values():
            if obj.built:
                for folder in (obj, *obj.prims.values()):
                    yield from folder.items.values()

    @property
    def item_count(self) -> int:
        """How many items there are, the listed objects' as their listing says (none is built)."""
        return (sum(len(f.items) for o in self.objects.values() if o.built for f in (o, *o.prims.values()))
                + sum(listed.items for listed in self._listed.values()))

    # --- objects listed, built when first read ----------------------------------------------

    def build_all(self) -> None:
        """Build every object listed but not built yet."""
        if self._listed:
            with paused_gc():
                for oid in list(self._listed):
                    self._build(self.objects[oid])

    def _list(self, folder: Folder, listed: ListedObject) -> None:
        """`folder` is shown unbuilt, as `listed` says (a listing it had before is replaced)."""
        if not folder.built:
            self._unlist(folder)
        self._listed[folder.object_id] = listed
        for uuid in listed.ids:
            self._listed_in[uuid] = folder.object_id
        folder.expander = self._build
        folder.listed_prims = listed.prims

    def _unlist(self, folder: Folder) -> ListedObject:
        listed = self._listed.pop(folder.object_id)
        for uuid in listed.ids:
            if self._listed_in.get(uuid) == folder.object_id:
                del self._listed_in[uuid]
        folder.expander = None
        return listed

    def _build(self, folder: Folder) -> None:
        """Build an object folder's items and prims from its listing (Folder.expander: the first
        read of its items, prims or listing calls this)."""
        listed = self._unlist(folder)
        try:
            obj = listed.full()
        except ProtocolError as exc:
            # The rest of the answer was fine: this object shows its own fields and nothing in it.
            log.error("object %r in the viewer's object.list: %s; its folder is shown empty", folder.object_id, exc)
            if listed.prims:
                self._touch(folder)  # its link count
            return
        mtime = folder.mtime_ns
        outer, self._building = self._building, folder.inode
        try:
            # Frozen like a load's tree (protocol/gcpause.py): a find that builds every object
            # would otherwise have the collector walk them again and again (2.2-2.9 s against
            # 0.8-1.0 s to build a 100,000-item world object by object, in-process).
            with paused_gc(freeze=True, young_first=True):
                self._put_object(obj, relayout=False)
        finally:
            self._building = outer
        # Its listing is new to the kernel, not a change of it: the folder keeps its time.
        folder.mtime_ns = mtime
        if len(folder.prims) != listed.prims:
            self._touch(folder)

    # --- applying the viewer's state ------------------------------------------------------

    def replace_all(self, objects: Sequence[PublishedObject | ListedObject]) -> None:
        """object.list after (re)connecting: the complete published state."""
        for _ in self.replace_all_steps(objects, step_items=None):
            pass

    def replace_all_steps(self, objects: Sequence[PublishedObject | ListedObject],
                          step_items: int | None = 1000) -> Iterator[None]:
        """replace_all in steps of about `step_items` inventory items (None: one step), yielding
        between them (the caller lets the file system run there).

        Between two steps the tree is consistent: each object is wholly as before or wholly as the
        list says, the root lists exactly the objects attached (objects gone from the list go in
        the first step), and every attached node's name is its name in its folder's listing.

        A ListedObject not shown yet is kept unbuilt (its own fields only, see `_build`); one whose
        folder is built already is built now, as a publish of it would be."""
        self.layout.loading = True  # the names the load gives stick once it ends
        try:
            yield from self._replace_steps(objects, step_items)
        finally:
            self.layout.loading = False
        with paused_gc():
            self.relayout(self.root)

    def _replace_steps(self, objects: Sequence[PublishedObject | ListedObject],
                       step_items: int | None) -> Iterator[None]:
        named: list[str] = []  # objects removed, added or renamed since the root's last relayout
        with paused_gc():
            seen = {o.object_id for o in objects}
            for oid in list(self.objects):
                if oid not in seen:
                    self._remove_object(oid, relayout=False)
                    named.append(oid)
            if named and step_items is not None:
                self.relayout(self.root, changed=named)
                named = []
        i = 0
        while i < len(objects):
            with paused_gc():
                items = 0
                while i < len(objects) and (step_items is None or items < step_items):
                    entry = objects[i]
                    head = entry.head if isinstance(entry, ListedObject) else entry
                    folder = self.objects.get(head.object_id)
                    if folder is None or folder.link_name != head.object_name:
                        named.append(head.object_id)
                    items += self._put_entry(entry)
                    i += 1
                if i < len(objects):
                    if named:
                        self.relayout(self.root, changed=named)
                        named = []
                    yield None

    def _put_entry(self, entry: PublishedObject | ListedObject) -> int:
        """One object of a complete replacement; how many items that built (its cost, 1 at least)."""
        if isinstance(entry, PublishedObject):
            self._put_object(entry, relayout=False)
            return 1 + len(entry.inventory) + sum(len(link.inventory) for link in entry.linked_objects or ())
        folder = self.objects.get(entry.object_id)
        if folder is None or not folder.built:
            self._put_object(entry.head, relayout=False, listed=entry)
            return 1
        try:
            obj = entry.full()
        except ProtocolError as exc:
            log.error("object %r in the viewer's object.list: %s; its folder keeps what it showed",
                      entry.object_id, exc)
            self._put_object(entry.head, relayout=False, listed=None, head_only=True)
            return 1
        self._put_object(obj, relayout=False)
        return 1 + entry.items

    def publish(self, obj: PublishedObject) -> None:
        with paused_gc():
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
        if not folder.built:  # what the update changes is seen against what the listing said
            self._build(folder)
        root_renamed = False
        if msg.object_name is not None and msg.object_name != folder.link_name:
            folder.link_name = msg.object_name
            root_renamed = True
        if msg.object_description is not None:
            folder.description = msg.object_description
            self._touch(folder)
        # Newer viewers publish before the prim's properties are known and send them later: merge.
        if msg.owner_id is not None and msg.owner_id != NULL_UUID:
            folder.owner_id = msg.owner_id
            self._touch(folder)
        if msg.can_save_back is not None:
            folder.can_save_back = msg.can_save_back
            self._touch(folder)
        if msg.permissions is not None:
            self._set_permissions(folder, msg.permissions)
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
                if mod.permissions is not None:
                    self._set_permissions(child, mod.permissions)
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
            self.on_object("renamed", folder)
            self.relayout(self.root, changed=(folder.uuid,))
        return True

    def _set_permissions(self, folder: Folder, later: Permissions) -> None:
        before = folder.permissions
        folder.permissions = before.merged(later) if before is not None else later
        self._touch(folder)
        if before is None or before.can_modify != folder.permissions.can_modify:
            for item in folder.items.values():  # their modes follow the prim's
                self._touch(item)

    def invalidate_entry(self, folder: Folder, name: str) -> None:
        """A name the kernel may have cached in `folder` means something else now (or nothing)."""
        self._on_invalidate(EntryChanged(folder.inode, name))

    def invalidate_item(self, item: Item, *, data: bool) -> None:
        self._on_invalidate(InodeChanged(item.inode, data=data))

    def stat_changed(self, node: Node) -> None:
        """Report a change of what stat shows of `node` that the kernel has no copy of (StatChanged)."""
        self._on_invalidate(StatChanged(node.inode))

    def _touch(self, node: Node) -> None:
        self._on_invalidate(InodeChanged(node.inode, data=False))

    def _put_object(self, obj: PublishedObject, *, relayout: bool, listed: ListedObject | None = None,
                    head_only: bool = False) -> None:
        """An object's complete record; `listed`: `obj` is its head, and the rest is built when
        first read; `head_only`: `obj` is its head, and what is built stays."""
        folder = self.objects.get(obj.object_id)
        renamed = added = False
        # A field sent with a value of an unexpected type keeps what we knew of a known object
        # (its default, as if absent, for a new one): an inventory or prim list among them too,
        # which would otherwise read as the deletion of every item or child prim.
        dropped = obj.dropped
        if folder is None:
            folder = Folder(inode=self.inode_for(obj.object_id), uuid=obj.object_id, object_id=obj.object_id)
            folder.parent = self.root
            self.objects[obj.object_id] = folder
            self.register(folder)
            renamed = added = True
            dropped = frozenset()
        elif not folder.built and listed is None:
            if dropped & {"inventory", "linked_objects"}:
                self._build(folder)  # what it keeps of them is the listing's
            else:  # the record replaces the listing, never read
                self._unlist(folder)
        count = folder.prim_count
        before = _folder_stat(folder)
        was = folder.permissions
        if "object_name" not in dropped:
            renamed = renamed or folder.link_name != obj.object_name
            folder.link_name = obj.object_name
        if "object_description" not in dropped:
            folder.description = obj.object_description or ""
        if "permissions" not in dropped:
            folder.permissions = _merged(folder.permissions, obj.permissions)
        self._items_follow(folder, was)
        if obj.owner_id and obj.owner_id != NULL_UUID:
            folder.owner_id = obj.owner_id
        if "can_save_back" not in dropped:
            folder.can_save_back = obj.can_save_back
        folder.published = obj
        if listed is not None:
            self._list(folder, listed)
        if _folder_stat(folder) != before or folder.prim_count != count:
            self._touch(folder)  # a reconnect's unchanged object costs no invalidation
        if listed is None and not head_only:
            if "inventory" not in dropped:
                self._set_inventory(folder, obj.inventory, relayout=False)
            if "linked_objects" not in dropped:
                self._set_children(folder, obj.linked_objects or [], relayout=False)
            self.relayout(folder)
        if renamed:
            self.on_object("added" if added else "renamed", folder)
            if relayout:
                self.relayout(self.root, changed=(folder.uuid,))

    def _remove_object(self, object_id: str, *, relayout: bool) -> None:
        folder = self.objects.pop(object_id)
        self.on_object("removed", folder)  # before _detach releases its members
        self._detach(folder)
        if relayout:
            self.relayout(self.root, changed=(object_id,))

    def _items_follow(self, folder: Folder, was: Permissions | None) -> None:
        """Items' modes follow their prim's modify permission: a republish that changes it must
        reach the kernel's cached item attributes too."""
        now = folder.permissions
        if folder.built and was is not None and (now is None or now.can_modify != was.can_modify):
            for item in folder.items.values():
                self._touch(item)

    def _put_child(self, obj_folder: Folder, link: LinkedObject) -> Folder:
        child = obj_folder.prims.get(link.link_id)
        dropped = link.dropped  # kept as we knew them, as in _put_object
        if child is None:
            child = Folder(
                inode=self.inode_for(link.link_id), uuid=link.link_id, object_id=obj_folder.object_id,
                is_child=True,
            )
            child.parent = obj_folder
            obj_folder.prims[link.link_id] = child
            self.register(child)
            dropped = frozenset()
        before = _folder_stat(child)
        was = child.permissions
        if "link_name" not in dropped:
            child.link_name = link.link_name
        if "link_number" not in dropped:
            child.link_number = link.link_number
        if "link_description" not in dropped:
            child.description = link.link_description or ""
        if "permissions" not in dropped:
            child.permissions = _merged(child.permissions, link.permissions)
        self._items_follow(child, was)
        if _folder_stat(child) != before:
            self._touch(child)
        if "inventory" not in dropped:
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
        items = folder.items
        echo = False
        if items:
            keep = {i.item_id for i in inventory}
            now = time.monotonic()
            echo = any(i.echo.expected(now) for i in items.values())
            for item_id in [k for k in items if k not in keep]:
                self._detach(items.pop(item_id))
        created = now_ns()  # one clock read for the items this adds (100,000 come in one load)
        # inode_for and register, inlined: this loop runs once per item of a 100,000-item load.
        inodes, nodes, by_uuid, next_inode = self._inodes, self.nodes, self._by_uuid, self._next_inode
        for data in inventory:
            item_id = data.item_id
            item = items.get(item_id)
            if item is None:
                ino = inodes.get(item_id)
                if ino is None:
                    ino = inodes[item_id] = next(next_inode)
                item = Item(inode=ino, uuid=item_id, parent=folder, ctime_ns=created, mtime_ns=created,
                            record=data, folder=folder)
                items[item_id] = nodes[ino] = by_uuid[item_id] = item
                continue
            old = item.info
            data = _item_known(data, old)
            item.record = data
            if data != old:
                self._touch(item)  # mode, run state, xattrs
            if not self._content_may_have_changed(item, old, data, echo):
                if item.cache.content is not None and item.cache.content_valid and not item.content_current:
                    self._on_stale(item)  # presumably our save's content: a fetch confirms it
                continue
            item.cache.generation += 1
            if item.cache.content is not None and item.cache.content_valid:
                item.cache.content_valid = False
                self._on_stale(item)
                # Its size may change: the kernel's copy goes (one never fetched was never cached).
                self._on_invalidate(InodeChanged(item.inode, data=False))
        if relayout:
            self.relayout(folder)

    @staticmethod
    def _content_may_have_changed(item: Item, old: InventoryItem, new: InventoryItem, echo: bool) -> bool:
        """Whether an inventory replacement may hide a content change of `item`.

        Newer viewers send `revision`: when present it is the only signal, up means changed,
        unchanged means not, whatever else the record carries. The first change after our own save
        is presumably that save's echo: the file keeps showing what we saved, still known only at
        the old revision, and _set_inventory has it fetched again to confirm (the save's answer
        carries no revision, and someone's edit arriving before our echo moves it the same way;
        the newer protocol revision, ObjectInventoryItem.revision: "fetch again when it does"). Older viewers
        send no per-item signal: any replacement may hide a change, except our own save's echo -
        `echo`: this replacement is the first since our save of an item of the prim, which leaves
        the others whose record it does not change as they were (slfs(5): the update answering a
        save of your own changes nothing; another's edit meanwhile comes with an update of its own:
        the protocol document's newer revision, mirrored in Alchemy's doc/external-editor-json-rpc.md,
        sends an inventory replacement per change and coalesces only linkset membership changes)."""
        own = item.echo.expected()
        # A revision of an unexpected type (`dropped`; _item_known carried the last one over) is
        # no signal either way: taken as sent, it would hide the change it may have announced, and
        # taken as a change, every sibling's update would drop the cache. So that item, in that
        # update, goes by the older viewers' rule below, whose every doubt costs a fetch that
        # shows a change only when the bytes differ (Workspace.set_content); the revision carried
        # over stays what the next well-typed one is compared with.
        if new.revision is not None and "revision" not in new.dropped:
            if new.revision == old.revision:
                return False
            if own and old.revision is not None and item.cache.content_revision == old.revision:
                item.echo.cancel()
                return False
            return True
        if own:
            item.echo.came_unconfirmed()
            return False
        return not (echo and new == old)
    def relayout(self, folder: Folder, changed: Iterable[str] | None = None) -> None:
        """Recompute the folder's file names and report every name whose meaning changed
        (layout.py; `changed`: the root's objects added, removed or renamed since the last one)."""
        self.layout.relayout(folder, changed)

    # --- paths ------------------------------------------------------------------------------

    def path_of(self, node: Node) -> str:
        """The node's path relative to the mount root ('' for the root)."""
        parts: list[str] = []
        cur: Node | None = node
        while cur is not None and cur.inode != ROOT_INODE:
            parts.append(cur.name)
            cur = cur.parent
        return "/".join(reversed(parts))
