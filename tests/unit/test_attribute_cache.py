"""The fs layer's attribute cache: one EntryAttributes per item or prim while nothing it is
computed from changes, and a fresh one as soon as anything does, reported or not."""

from __future__ import annotations

import stat
from typing import Any

from slfs.fs.attributes import Attributes
from slfs.model.invalidations import PendingInvalidations
from slfs.model.options import Options
from slfs.model.services import Broadcast
from slfs.protocol import from_json
from slfs.protocol import types as t
from slfs.world.tree import Folder, Item, Tree

ALL = 0x7FFFFFFF
NO_MODIFY = ALL & ~0x4000


def note(iid: str = "n1", owner: int = ALL) -> dict[str, Any]:
    return {"item_id": iid, "name": "Note", "type": "notecard", "subtype": 0, "permissions": {"owner": owner}}


def obj(inventory: list[dict[str, Any]], owner: int = ALL) -> t.PublishedObject:
    return from_json(t.PublishedObject, {"object_id": "o1", "object_name": "Box", "inventory": inventory,
                                         "permissions": {"owner": owner}})


def update(**kw: Any) -> t.ObjectUpdate:
    return from_json(t.ObjectUpdate, {"object_id": "o1", **kw})


def setup() -> tuple[Tree, Attributes, Item]:
    fanout = Broadcast()
    pending = PendingInvalidations(fanout)
    tree = Tree(on_invalidate=pending.add)
    attributes = Attributes(tree, Options())
    fanout.connect([], [attributes.changed])
    tree.publish(obj([note()]))
    item = tree.by_uuid["n1"]
    assert isinstance(item, Item)
    item.cache.content, item.cache.content_valid = b"hello\n", True
    return tree, attributes, item


def mode(a: Any) -> int:
    return stat.S_IMODE(a.st_mode)


def test_unchanged_nodes_answer_the_same_attributes() -> None:
    tree, attributes, item = setup()
    first = attributes.entry(item)
    assert attributes.entry(item) is first and first.st_size == 6
    box = tree.objects["o1"]
    assert attributes.entry(box) is attributes.entry(box)


def test_mode_follows_an_item_permission_change() -> None:
    tree, attributes, item = setup()
    assert mode(attributes.entry(item)) == 0o644
    tree.update(update(inventory=[note(owner=NO_MODIFY)]))
    assert mode(attributes.entry(item)) == 0o444
    tree.update(update(inventory=[note()]))
    assert mode(attributes.entry(item)) == 0o644


def test_mode_follows_the_prims_permissions_even_unreported() -> None:
    # A republish changes the prim's permissions and touches only the prim, not its items: the
    # cache compares the prim's permissions itself.
    tree, attributes, item = setup()
    box = tree.objects["o1"]
    assert mode(attributes.entry(item)) == 0o644 and mode(attributes.entry(box)) == 0o755
    tree.publish(obj([note()], owner=NO_MODIFY))
    assert mode(attributes.entry(item)) == 0o444 and mode(attributes.entry(box)) == 0o555


def test_size_and_mtime_follow_a_local_edit_and_a_save() -> None:
    tree, attributes, item = setup()
    before = attributes.entry(item)
    assert before.st_size == 6
    item.edit.buffer = bytearray(b"hello")  # writes through the kernel report nothing
    item.edit.buffer += b", world\n"
    item.mtime_ns += 1
    assert attributes.entry(item).st_size == 13
    item.edit.buffer.extend(b"more\n")  # edited in place: still not a cached size
    assert attributes.entry(item).st_size == 18
    # The save: content replaced, the buffer gone, the change reported.
    item.cache.content, item.edit.buffer = b"hello, world\nmore\n", None
    tree.invalidate_item(item, data=True)
    after = attributes.entry(item)
    assert after.st_size == 18 and after.st_mtime_ns == before.st_mtime_ns + 1


def test_a_refetch_with_new_content_changes_the_size() -> None:
    _tree, attributes, item = setup()
    assert attributes.entry(item).st_size == 6
    item.cache.content_valid = False  # an inventory replacement: size unknown, answered uncached
    unknown = attributes.entry(item)
    assert unknown.st_size == 0 and unknown.attr_timeout == 0
    item.cache.content, item.cache.content_valid = b"new and longer\n", True  # a first fetch reports nothing
    assert attributes.entry(item).st_size == 15


def test_embedded_items_make_a_notecard_read_only() -> None:
    tree, attributes, item = setup()
    assert mode(attributes.entry(item)) == 0o644
    item.cache.embedded_items = 2
    tree.invalidate_item(item, data=False)
    assert mode(attributes.entry(item)) == 0o444


def test_detached_and_renumbered_nodes_are_not_answered_from_the_cache() -> None:
    tree, attributes, item = setup()
    assert attributes.entry(item).st_nlink == 1
    old = item.inode
    tree.move_to_fresh_inode(item)
    assert attributes.entry(item).st_ino == item.inode != old
    tree.update(update(inventory=[]))  # removed in-world while the kernel holds it
    assert attributes.entry(item).st_nlink == 0


def test_a_folder_that_gains_a_prim_counts_its_links() -> None:
    tree, attributes, _item = setup()
    box = tree.objects["o1"]
    assert attributes.entry(box).st_nlink == 2
    tree.update(update(linked_objects=[{"link_id": "c1", "link_number": 2, "link_name": "Door", "inventory": []}]))
    assert attributes.entry(box).st_nlink == 3
    assert isinstance(box.prims["c1"], Folder)
