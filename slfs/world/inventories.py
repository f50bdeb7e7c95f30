"""A prim's inventory as the viewer sends it (always a complete replacement) applied to its items:
new items made, gone ones detached, and each item whose content may have changed in-world marked
so (its cached copy goes stale, or is fetched again to confirm)."""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from ..protocol.types import InventoryItem
from .layout import Relayout
from .node_registry import NodeRegistry
from .nodes import Folder, InodeChanged, Item, now_ns
from .tree_reports import TreeReports


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


class Inventories:
    def __init__(self, registry: NodeRegistry, reports: TreeReports, relayout: Relayout,
                 on_stale: Callable[[Item], None]) -> None:
        self._registry = registry
        self._reports = reports
        self._relayout = relayout  # Tree.relayout
        # Called with each item whose content may have changed in-world and was cached.
        self._on_stale = on_stale

    def replace(self, folder: Folder, inventory: list[InventoryItem], *, relayout: bool = True) -> None:
        """A complete replacement of a prim's inventory (the only inventory shape viewers send)."""
        items = folder.items
        echo = False
        if items:
            keep = {i.item_id for i in inventory}
            now = time.monotonic()
            echo = any(i.echo.expected(now) for i in items.values())
            for item_id in [k for k in items if k not in keep]:
                self._registry.detach(items.pop(item_id))
        created = now_ns()  # one clock read for the items this adds (100,000 come in one load)
        add_item = self._registry.add_item
        for data in inventory:
            item = items.get(data.item_id)
            if item is None:
                items[data.item_id] = add_item(folder, data, created)
                continue
            old = item.info
            data = _item_known(data, old)
            item.record = data
            if data != old:
                self._reports.touch(item)  # mode, run state, xattrs
            if not self._content_may_have_changed(item, old, data, echo):
                if item.cache.content is not None and item.cache.content_valid and not item.content_current:
                    self._on_stale(item)  # presumably our save's content: a fetch confirms it
                continue
            if item.cache.changed_in_world():
                self._on_stale(item)
                # Its size may change: the kernel's copy goes (one never fetched was never cached).
                self._reports(InodeChanged(item.inode, data=False))
        if relayout:
            self._relayout(folder, None)

    @staticmethod
    def renamed(item: Item, sl_name: str) -> None:
        """The viewer accepted our rename of `item` (object.item.modify): its record says so now."""
        item.record = attrs.evolve(item.info, name=sl_name)

    @staticmethod
    def _content_may_have_changed(item: Item, old: InventoryItem, new: InventoryItem, echo: bool) -> bool:
        """Whether an inventory replacement may hide a content change of `item`.

        Newer viewers send `revision`: when present it is the only signal, up means changed,
        unchanged means not, whatever else the record carries. The first change after our own save
        is presumably that save's echo: the file keeps showing what we saved, still known only at
        the old revision, and Inventories.replace has it fetched again to confirm (the save's answer
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
