"""The model tree against what newer viewers send: revisions, deferred properties, placeholder
names, and names that cannot be encoded (no mount, no I/O)."""

from __future__ import annotations

import os
import time

import pytest
from support.payloads import obj, script, update

from slfs.protocol import from_json
from slfs.protocol import types as t
from slfs.world.tree import EntryChanged, InodeChanged, Invalidation, Item, Tree, describe_perms


@pytest.fixture
def tree() -> tuple[Tree, list[Invalidation]]:
    seen: list[Invalidation] = []
    return Tree(on_invalidate=seen.append), seen


def _item(tr: Tree, iid: str) -> Item:
    node = tr.by_uuid[iid]
    assert isinstance(node, Item)
    return node


def _cached(item: Item, data: bytes = b"old") -> None:
    item.cache.content, item.cache.content_valid, item.cache.content_revision = data, True, item.info.revision


def test_revision_is_the_only_content_signal(tree: tuple[Tree, list[Invalidation]]) -> None:
    stale: list[Item] = []
    tr = Tree(on_stale=stale.append)
    tr.publish(obj(inventory=[script("i1", "Main", revision=3)]))
    item = _item(tr, "i1")
    _cached(item)
    # Unchanged revision: cached content kept, whatever else the record carries.
    tr.update(update(inventory=[script("i1", "Main", revision=3, running=True, description="new")]))
    assert item.cache.content_valid and not stale and item.info.running
    # Higher revision: dropped, and refetched for those who read it.
    tr.update(update(inventory=[script("i1", "Main", revision=4)]))
    assert not item.cache.content_valid and stale == [item]


def test_without_revision_any_replacement_may_hide_a_change(tree: tuple[Tree, list[Invalidation]]) -> None:
    tr, _ = tree
    tr.publish(obj(inventory=[script("i1", "Main")]))
    item = _item(tr, "i1")
    _cached(item)
    tr.update(update(inventory=[script("i1", "Main", running=True)]))
    assert not item.cache.content_valid


def test_own_save_echo_is_shown_until_a_fetch_confirms_it() -> None:
    """The save's answer carries no revision, and someone's edit before our echo moves it the same
    way: the file keeps what we saved (no kernel invalidation), known only at the old revision
    until a fetch at the new one confirms it, and that fetch is asked for."""
    stale: list[Item] = []
    seen: list[Invalidation] = []
    tr = Tree(on_invalidate=seen.append, on_stale=stale.append)
    tr.publish(obj(inventory=[script("i1", "Main", revision=3)]))
    item = _item(tr, "i1")
    _cached(item, b"saved by us")
    item.take_base(b"saved by us")
    item.echo.expected_until = time.monotonic() + 2
    seen.clear()
    tr.update(update(inventory=[script("i1", "Main", revision=4)]))
    assert item.cache.content_valid and not item.content_current and stale == [item]
    assert item.cache.content_revision == 3 and item.edit.base_revision == 3
    assert not [i for i in seen if isinstance(i, InodeChanged) and i.inode == item.inode and i.data]
    # The fetch at revision 4 returns what we saved: current, and the base is known there too.
    item.cache.content_revision = 4
    item.fetched_at(b"saved by us", 4)
    assert item.content_current and item.edit.base_revision == 4
    # The window is used up: the next change is someone else's.
    tr.update(update(inventory=[script("i1", "Main", revision=5)]))
    assert not item.cache.content_valid


def test_a_fetch_of_someone_elses_content_leaves_the_base_behind() -> None:
    tr = Tree()
    tr.publish(obj(inventory=[script("i1", "Main", revision=3)]))
    item = _item(tr, "i1")
    _cached(item, b"saved by us")
    item.take_base(b"saved by us")
    item.fetched_at(b"their edit", 4)
    assert item.edit.base_revision == 3
    item.fetched_at(b"saved by us", 4)
    assert item.edit.base_revision == 4


def test_older_viewers_echo_is_unconfirmed_until_fetched() -> None:
    stale: list[Item] = []
    tr = Tree(on_stale=stale.append)
    tr.publish(obj(inventory=[script("i1", "Main")]))
    item = _item(tr, "i1")
    _cached(item, b"saved by us")
    item.echo.expected_until = time.monotonic() + 2
    tr.update(update(inventory=[script("i1", "Main", running=True)]))
    assert item.cache.content_valid and item.echo.unconfirmed and not item.content_current and stale == [item]


def test_deferred_properties_are_merged(tree: tuple[Tree, list[Invalidation]]) -> None:
    tr, seen = tree
    publish = from_json(t.PublishedObject, {
        "object_id": "o1", "object_name": "Object", "owner_id": "00000000-0000-0000-0000-000000000000",
        "permissions": {"owner": 0x7FFFFFFF}, "can_save_back": False,
        "inventory": [{"item_id": "n1", "name": "Notes", "type": "notecard"}],
        "linked_objects": [{"link_id": "c1aaaaaa-0", "link_number": 2, "link_name": "Link #2",
                            "permissions": {"owner": 0x7FFFFFFF}, "inventory": []}]})
    tr.publish(publish)
    box = tr.objects["o1"]
    child = box.prims["c1aaaaaa-0"]
    ino, child_ino = box.inode, child.inode
    assert tr.root.entries["Object"] is box and "Link #2@c1aaaaaa" in box.entries
    assert describe_perms(box.permissions) == "owner=0x7fffffff next_owner=unknown"
    assert box.owner_id == "" and box.can_save_back is False
    seen.clear()
    # Root properties arrive: the directory is renamed in place, permissions merged.
    tr.update(update(object_name="Real Name", owner_id="a" * 8 + "-0000-0000-0000-000000000001",
                     permissions={"owner": 0x7FFFFFFF & ~0x4000, "next_owner": 0x82000}, can_save_back=True))
    assert tr.root.entries["Real Name"] is box and box.inode == ino and "Object" not in tr.root.entries
    assert EntryChanged(1, "Object") in seen
    assert describe_perms(box.permissions) == "owner=0x7fffbfff next_owner=0x00082000"
    assert not box.writable and box.can_save_back and box.owner_id.startswith("aaaaaaaa")
    # The items' modes follow the prim's at once.
    assert InodeChanged(_item(tr, "n1").inode, data=False) in seen
    # A later update without next_owner keeps it.
    tr.update(update(permissions={"owner": 0x7FFFFFFF}))
    assert describe_perms(box.permissions) == "owner=0x7fffffff next_owner=0x00082000"
    # Child prim properties.
    tr.update(update(changes={"linked_objects": {"modified": [
        {"link_id": "c1aaaaaa-0", "link_name": "Door", "permissions": {"owner": 0x7FFFFFFF, "next_owner": 0}}]}}))
    assert box.entries["Door@c1aaaaaa"] is child and child.inode == child_ino
    assert describe_perms(child.permissions) == "owner=0x7fffffff next_owner=0x00000000"
    # A republish whose permissions again lack next_owner keeps the known one.
    tr.publish(publish)
    assert describe_perms(box.permissions) == "owner=0x7fffffff next_owner=0x00082000"


def test_names_that_cannot_be_encoded(tree: tuple[Tree, list[Invalidation]]) -> None:
    tr, seen = tree
    tr.publish(obj("o1", "\ud800"))
    tr.publish(obj("o2", "\ufffd"))  # collides with the replacement: tagged like any other
    tr.publish(obj("o3", "Later", inventory=[script("i1", "a\udfffb"),
                                              {"item_id": "n1", "name": "x\ud83d", "type": "notecard"}],
                   links=[{"link_id": "c1aaaaaa-0", "link_number": 2, "link_name": "\udc80", "inventory": []}]))
    names = set(tr.root.entries)
    assert names == {"\ufffd", "\ufffd@o2", "Later"}
    later = tr.objects["o3"]
    assert set(later.entries) == {"a\ufffdb.lsl", "x\ufffd", "\ufffd@c1aaaaaa"}
    for name in [*names, *later.entries]:
        os.fsencode(name).decode("utf-8")  # every name is valid UTF-8 on disk
    # Renames and unpublishes of such names relayout too.
    tr.update(from_json(t.ObjectUpdate, {"object_id": "o1", "object_name": "ok\udabc"}))
    tr.unpublish("o2")
    assert set(tr.root.entries) == {"ok\ufffd", "Later"}
    for inv in seen:
        if isinstance(inv, EntryChanged):
            os.fsencode(inv.name)
