"""The viewer's object records applied to the tree's folders: a publish, an update, an object of
object.list (shown from its head, built when first read: `build`), an object gone."""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..gcpause import paused_gc
from ..protocol.constants import NULL_UUID
from ..protocol.rpc_errors import ProtocolError
from ..protocol.types import LinkedObject, ObjectUpdate, Permissions, PublishedObject
from .inventories import Inventories
from .layout import Relayout
from .listed import Listed, Listing
from .node_registry import NodeRegistry
from .nodes import Folder
from .tree_reports import TreeReports

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


class ObjectRecords:
    def __init__(self, objects: dict[str, Folder], registry: NodeRegistry, listed: Listed,
                 inventories: Inventories, relayout: Relayout, reports: TreeReports) -> None:
        self._objects = objects  # the root's object folders, by object id: this writes them
        self._registry = registry
        self._listed = listed
        self._inventories = inventories
        self._relayout = relayout  # Tree.relayout
        self._reports = reports
        # Told each object folder "added", "renamed" (its in-world name) or "removed", once the
        # tree shows it so: the local overlay's homes follow objects (Tree.on_object).
        self.on_object: Callable[[str, Folder], None] = lambda _kind, _folder: None

    # --- objects listed, built when first read ----------------------------------------------

    def build(self, folder: Folder) -> None:
        """Build an object folder's items and prims from its listing (Folder.expander: the first
        read of its items, prims or listing calls this)."""
        listed = self._listed.unlist(folder)
        try:
            obj = listed.full()
        except ProtocolError as exc:
            # The rest of the answer was fine: this object shows its own fields and nothing in it.
            log.error("object %r in the viewer's object.list: %s; its folder is shown empty", folder.object_id, exc)
            if listed.prims:
                self._reports.touch(folder)  # its link count
            return
        mtime = folder.mtime_ns
        # Frozen like a load's tree (slfs/gcpause.py): a find that builds every object would
        # otherwise have the collector walk them again and again (2.2-2.9 s against 0.8-1.0 s to
        # build a 100,000-item world object by object, in-process).
        with self._reports.building(folder), paused_gc(freeze=True, young_first=True):
            self.put_object(obj, relayout=False)
        # Its listing is new to the kernel, not a change of it: the folder keeps its time.
        folder.set_mtime(mtime)
        if len(folder.prims) != listed.prims:
            self._reports.touch(folder)

    def put_entry(self, entry: PublishedObject | Listing) -> int:
        """One object of a complete replacement; how many items that built (its cost, 1 at least)."""
        if isinstance(entry, PublishedObject):
            self.put_object(entry, relayout=False)
            return 1 + len(entry.inventory) + sum(len(link.inventory) for link in entry.linked_objects or ())
        folder = self._objects.get(entry.object_id)
        if folder is None or not folder.built:
            self.put_object(entry.head, relayout=False, listed=entry)
            return 1
        try:
            obj = entry.full()
        except ProtocolError as exc:
            log.error("object %r in the viewer's object.list: %s; its folder keeps what it showed",
                      entry.object_id, exc)
            self.put_object(entry.head, relayout=False, listed=None, head_only=True)
            return 1
        self.put_object(obj, relayout=False)
        return 1 + entry.items

    # --- applying the viewer's state ------------------------------------------------------

    def update(self, msg: ObjectUpdate) -> bool:
        """Apply one of the viewer's object.update shapes; False when the object is unknown."""
        folder = self._objects.get(msg.object_id)
        if folder is None:
            return False
        if not folder.built:  # what the update changes is seen against what the listing said
            self.build(folder)
        root_renamed = False
        if msg.object_name is not None and msg.object_name != folder.link_name:
            folder.link_name = msg.object_name
            root_renamed = True
        if msg.object_description is not None:
            folder.description = msg.object_description
            self._reports.touch(folder)
        # Newer viewers publish before the prim's properties are known and send them later: merge.
        if msg.owner_id is not None and msg.owner_id != NULL_UUID:
            folder.owner_id = msg.owner_id
            self._reports.touch(folder)
        if msg.can_save_back is not None:
            folder.can_save_back = msg.can_save_back
            self._reports.touch(folder)
        if msg.permissions is not None:
            self._set_permissions(folder, msg.permissions)
        if msg.inventory is not None:
            self._inventories.replace(folder, msg.inventory)
        if msg.linked_objects is not None:
            self.set_children(folder, msg.linked_objects)
        changes = msg.changes.linked_objects if msg.changes is not None else None
        if changes is not None:
            for mod in changes.modified or []:
                child = folder.prims.get(mod.link_id)
                if child is None:
                    log.warning("update for unknown child prim %s of %s ignored", mod.link_id, msg.object_id)
                    continue
                if mod.link_description is not None:
                    child.description = mod.link_description
                    self._reports.touch(child)
                if mod.permissions is not None:
                    self._set_permissions(child, mod.permissions)
                if mod.inventory is not None:
                    self._inventories.replace(child, mod.inventory)
                if mod.link_name is not None and mod.link_name != child.link_name:
                    child.link_name = mod.link_name
                    self._relayout(folder, None)
            # Deltas the document specifies but viewers do not emit.
            for added in changes.added or []:
                self._put_child(folder, added)
            for removed in changes.removed or []:
                if removed in folder.prims:
                    self._registry.detach(folder.pop_prim(removed))
            if changes.added or changes.removed:
                self._relayout(folder, None)
        if root_renamed:
            self.on_object("renamed", folder)
            self._relayout(self._registry.root, (folder.uuid,))
        return True

    @staticmethod
    def renamed(folder: Folder, sl_name: str) -> None:
        """The viewer accepted our rename of the prim (object.modify): its in-world name now."""
        folder.link_name = sl_name

    def _set_permissions(self, folder: Folder, later: Permissions) -> None:
        before = folder.permissions
        folder.permissions = before.merged(later) if before is not None else later
        self._reports.touch(folder)
        if before is None or before.can_modify != folder.permissions.can_modify:
            for item in folder.items.values():  # their modes follow the prim's
                self._reports.touch(item)

    def put_object(self, obj: PublishedObject, *, relayout: bool, listed: Listing | None = None,
                    head_only: bool = False) -> None:
        """An object's complete record; `listed`: `obj` is its head, and the rest is built when
        first read; `head_only`: `obj` is its head, and what is built stays."""
        folder = self._objects.get(obj.object_id)
        renamed = added = False
        # A field sent with a value of an unexpected type keeps what we knew of a known object
        # (its default, as if absent, for a new one): an inventory or prim list among them too,
        # which would otherwise read as the deletion of every item or child prim.
        dropped = obj.dropped
        if folder is None:
            folder = Folder(inode=self._registry.inode_for(obj.object_id), uuid=obj.object_id, object_id=obj.object_id,
                            parent=self._registry.root)
            self._objects[obj.object_id] = folder
            self._registry.register(folder)
            renamed = added = True
            dropped = frozenset()
        elif not folder.built and listed is None:
            if dropped & {"inventory", "linked_objects"}:
                self.build(folder)  # what it keeps of them is the listing's
            else:  # the record replaces the listing, never read
                self._listed.unlist(folder)
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
            self._listed.list(folder, listed, self.build)
        if _folder_stat(folder) != before or folder.prim_count != count:
            self._reports.touch(folder)  # a reconnect's unchanged object costs no invalidation
        if listed is None and not head_only:
            if "inventory" not in dropped:
                self._inventories.replace(folder, obj.inventory, relayout=False)
            if "linked_objects" not in dropped:
                self.set_children(folder, obj.linked_objects or [], relayout=False)
            self._relayout(folder, None)
        if renamed:
            self.on_object("added" if added else "renamed", folder)
            if relayout:
                self._relayout(self._registry.root, (folder.uuid,))

    def remove_object(self, object_id: str, *, relayout: bool) -> None:
        folder = self._objects.pop(object_id)
        self.on_object("removed", folder)  # before detach releases its members
        self._registry.detach(folder)
        if relayout:
            self._relayout(self._registry.root, (object_id,))

    def _items_follow(self, folder: Folder, was: Permissions | None) -> None:
        """Items' modes follow their prim's modify permission: a republish that changes it must
        reach the kernel's cached item attributes too."""
        now = folder.permissions
        if folder.built and was is not None and (now is None or now.can_modify != was.can_modify):
            for item in folder.items.values():
                self._reports.touch(item)

    def _put_child(self, obj_folder: Folder, link: LinkedObject) -> Folder:
        child = obj_folder.prims.get(link.link_id)
        dropped = link.dropped  # kept as we knew them, as in put_object
        if child is None:
            child = Folder(
                inode=self._registry.inode_for(link.link_id), uuid=link.link_id, object_id=obj_folder.object_id,
                is_child=True, parent=obj_folder,
            )
            obj_folder.add_prim(child)
            self._registry.register(child)
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
            self._reports.touch(child)
        if "inventory" not in dropped:
            self._inventories.replace(child, link.inventory)
        return child

    def set_children(self, folder: Folder, links: list[LinkedObject], *, relayout: bool = True) -> None:
        keep = {link.link_id for link in links}
        for link_id in [k for k in folder.prims if k not in keep]:
            self._registry.detach(folder.pop_prim(link_id))
        for link in links:
            self._put_child(folder, link)
        if relayout:
            self._relayout(folder, None)
