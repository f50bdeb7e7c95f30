"""The published world as a tree of folders and items, with stable inode numbers.

The tree is pure state: no I/O and no awaits, so under trio every method runs atomically. It is
fed by the session's notifications (publish, unpublish, update, object.list) and read by the file
system. Whenever a name or an attribute the kernel may have cached changes, the tree reports it
through `on_invalidate` so the file system layer can drop the kernel's copy from a background task.

An object the viewer's object.list names is shown at once with its own fields; its items and prims
are decoded and built when its folder is first read, or an event names one of them
(ObjectRecords.build): a 100,000-item world is listed in a fraction of the time, and what is built
is what a whole decode builds.

The Tree composes the parts, each owning its state: the nodes and inode numbers
(world/node_registry.py), the objects listed and not built yet (world/listed.py), the viewer's
records applied (world/object_records.py, world/inventories.py), the names on disk
(world/layout.py) and what is reported to the kernel (world/tree_reports.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from ..gcpause import paused_gc
from ..protocol.types import ObjectUpdate, PublishedObject
from .inventories import Inventories
from .layout import Layout
from .listed import Listed, Listing
from .node_registry import NodeRegistry
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
)
from .object_records import ObjectRecords
from .tree_reports import TreeReports

# The node types are world/nodes.py's; the file system layer and the tests import them from here too.
__all__ = ["ROOT_INODE", "Cache", "Edit", "EntryChanged", "Folder", "InodeChanged", "Invalidation", "Item",
           "LiveState", "MemoryFile", "NewFile", "Node", "Orphan", "OverlayNode", "StatChanged", "Tree",
           "describe_perms"]


class Tree:
    def __init__(self, on_invalidate: Callable[[Invalidation], None] = lambda _i: None,
                 on_stale: Callable[[Item], None] = lambda _i: None,
                 kernel_knows: Callable[[int], bool] = lambda _i: False) -> None:
        self._reports = TreeReports(on_invalidate)
        self._listed = Listed()
        self._registry = NodeRegistry(self._reports, self._listed, kernel_knows)
        self.root = self._registry.root
        self.objects: dict[str, Folder] = {}  # the root's object folders by id (ObjectRecords writes it)
        self.layout = Layout(self.root, self.objects, self._reports)
        # Every relayout goes through self.relayout (a test's Tree overrides it).
        inventories = self._inventories = Inventories(self._registry, self._reports, self.relayout, on_stale)
        self._records = ObjectRecords(self.objects, self._registry, self._listed, inventories, self.relayout,
                                      self._reports)

    @property
    def on_object(self) -> Callable[[str, Folder], None]:
        """Told each object folder "added", "renamed" (its in-world name) or "removed", once the
        tree shows it so: the local overlay's homes follow objects (set by model/overlay.py)."""
        return self._records.on_object

    @on_object.setter
    def on_object(self, report: Callable[[str, Folder], None]) -> None:
        self._records.on_object = report

    # --- nodes and inode numbers (world/node_registry.py) ---------------------------------------

    @property
    def nodes(self) -> dict[int, Node]:
        return self._registry.nodes

    def inode_for(self, key: str) -> int:
        """The inode of a UUID (or any other stable key): the same for the life of the mount."""
        return self._registry.inode_for(key)

    def node(self, inode: int) -> Node | None:
        return self._registry.nodes.get(inode)

    def find(self, uuid: str) -> Node | None:
        """The attached node of a UUID (an item's, a prim's or an object's), building the object
        it is listed in if that is not built yet."""
        node = self._registry.by_uuid.get(uuid)
        if node is None:
            oid = self._listed.holder(uuid)
            if oid is not None:
                self._records.build(self.objects[oid])
                node = self._registry.by_uuid.get(uuid)
        return node

    @property
    def by_uuid(self) -> dict[str, Node]:
        """Every attached node by UUID (every listed object built first)."""
        self.build_all()
        return self._registry.by_uuid

    def forgotten(self, inode: int) -> None:
        """The kernel no longer knows `inode`: its node goes if it is detached."""
        self._registry.forgotten(inode)

    def bind_key(self, key: str, inode: int) -> None:
        """Make `key` (a UUID, or another stable name such as a local path) mean `inode`."""
        self._registry.bind_key(key, inode)

    def unbind_key(self, key: str, inode: int) -> None:
        self._registry.unbind_key(key, inode)

    def rekey_prefix(self, old: str, new: str) -> list[tuple[str, int]]:
        """Keys equal to `old` or below `old + "/"` move under `new`; returns the new (key, inode)s."""
        return self._registry.rekey_prefix(old, new)

    def move_to_fresh_inode(self, item: Item) -> None:
        """The item's inode went to another file (a rename over it): it takes a new one."""
        self._registry.move_to_fresh_inode(item)

    def fresh_inode(self) -> int:
        return self._registry.fresh_inode()

    def add_node(self, node: Node) -> None:
        self._registry.add_node(node)

    def drop_node(self, inode: int) -> None:
        """The inode now means a node kept elsewhere (an overlay file that took it over)."""
        self._registry.drop_node(inode)

    def rebind(self, item: Item, inode: int) -> Orphan:
        """Give `item` the kernel inode `inode`; its old inode becomes an Orphan (NodeRegistry.rebind)."""
        return self._registry.rebind(item, inode)

    def register(self, node: Node) -> None:
        self._registry.register(node)

    # --- items --------------------------------------------------------------------------------

    def end_own_updates(self) -> None:
        """The connection ended: no echo of a save made on it can come any more. The next session's
        object.list may hold another content (a viewer restarted with its own state), so it must
        not pass for that echo (Inventories._content_may_have_changed)."""
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
                + self._listed.item_count)

    def build_all(self) -> None:
        """Build every object listed but not built yet."""
        if self._listed:
            with paused_gc():
                for oid in self._listed.pending():
                    self._records.build(self.objects[oid])

    # --- applying the viewer's state (world/object_records.py) ------------------------------------

    def replace_all(self, objects: Sequence[PublishedObject | Listing]) -> None:
        """object.list after (re)connecting: the complete published state."""
        for _ in self.replace_all_steps(objects, step_items=None):
            pass

    def replace_all_steps(self, objects: Sequence[PublishedObject | Listing],
                          step_items: int | None = 1000) -> Iterator[None]:
        """replace_all in steps of about `step_items` inventory items (None: one step), yielding
        between them (the caller lets the file system run there).

        Between two steps the tree is consistent: each object is wholly as before or wholly as the
        list says, the root lists exactly the objects attached (objects gone from the list go in
        the first step), and every attached node's name is its name in its folder's listing.

        A Listing not shown yet is kept unbuilt (its own fields only, see ObjectRecords.build); one whose
        folder is built already is built now, as a publish of it would be."""
        self.layout.loading = True  # the names the load gives stick once it ends
        try:
            yield from self._replace_steps(objects, step_items)
        finally:
            self.layout.loading = False
        with paused_gc():
            self.relayout(self.root)

    def _replace_steps(self, objects: Sequence[PublishedObject | Listing],
                       step_items: int | None) -> Iterator[None]:
        named: list[str] = []  # objects removed, added or renamed since the root's last relayout
        with paused_gc():
            seen = {o.object_id for o in objects}
            for oid in list(self.objects):
                if oid not in seen:
                    self._records.remove_object(oid, relayout=False)
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
                    head = entry if isinstance(entry, PublishedObject) else entry.head
                    folder = self.objects.get(head.object_id)
                    if folder is None or folder.link_name != head.object_name:
                        named.append(head.object_id)
                    items += self._records.put_entry(entry)
                    i += 1
                if i < len(objects):
                    if named:
                        self.relayout(self.root, changed=named)
                        named = []
                    yield None

    def publish(self, obj: PublishedObject) -> None:
        with paused_gc():
            self._records.put_object(obj, relayout=True)

    def unpublish(self, object_id: str) -> bool:
        if object_id not in self.objects:
            return False
        self._records.remove_object(object_id, relayout=True)
        return True

    def update(self, msg: ObjectUpdate) -> bool:
        """Apply one of the viewer's object.update shapes; False when the object is unknown."""
        return self._records.update(msg)

    # --- reports to the kernel (world/tree_reports.py) ----------------------------------------

    def renamed(self, node: Item | Folder, sl_name: str) -> None:
        """The viewer accepted our rename of `node`: it shows under its new name at once, before
        any update of the viewer's says so."""
        if isinstance(node, Item):
            self._inventories.renamed(node, sl_name)
            assert node.folder is not None
            self.relayout(node.folder)
        else:
            self._records.renamed(node, sl_name)
            self.relayout(node.parent or self.root)

    def invalidate_entry(self, folder: Folder, name: str) -> None:
        """A name the kernel may have cached in `folder` means something else now (or nothing)."""
        self._reports.entry(folder, name)

    def invalidate_item(self, item: Item, *, data: bool) -> None:
        self._reports.item(item, data=data)

    def stat_changed(self, node: Node) -> None:
        """Report a change of what stat shows of `node` that the kernel has no copy of (StatChanged)."""
        self._reports.stat_changed(node)

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
