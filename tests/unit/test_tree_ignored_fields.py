"""An optional field the viewer sends with a value of an unexpected type is ignored: on a record the
tree already knows (an item, a prim, an object) it keeps the value known before, where a field not
sent at all means what absence means in a full replacement (no mount, no I/O)."""

from __future__ import annotations

import time
from typing import Any

from support.payloads import obj, script, update

from slfs.protocol import from_json
from slfs.protocol import types as t
from slfs.world.tree import Folder, InodeChanged, Invalidation, Item, Tree, describe_perms

FULL = {"owner": 0x7FFFFFFF, "next_owner": 0x82000}


def _decode_update(**kw: Any) -> t.ObjectUpdate:
    return from_json(t.ObjectUpdate, {"object_id": "o1", **kw}, on_ignored=lambda _f, _why: None)


def _item(tr: Tree, iid: str) -> Item:
    node = tr.by_uuid[iid]
    assert isinstance(node, Item)
    return node


def _folder(tr: Tree, uuid: str) -> Folder:
    node = tr.by_uuid[uuid]
    assert isinstance(node, Folder)
    return node


def _known_script(**kw: Any) -> dict[str, Any]:
    return script("i1", "Main", description="greets", vm="mono", running=True, faulted=False,
                  permissions=FULL, creator_id="c1", **kw)


def test_an_ill_typed_item_field_keeps_the_known_value() -> None:
    tr = Tree()
    tr.publish(obj(inventory=[_known_script()]))
    item = _item(tr, "i1")
    tr.update(_decode_update(inventory=[script("i1", "Main", description=5, vm="jit", running="yes", faulted=1,
                                               permissions={"owner": 0x7FFFFFFF, "next_owner": "all"},
                                               creator_id=[], subtype="lsl")]))
    info = item.info
    assert (info.description, info.vm, info.running, info.faulted, info.creator_id, info.subtype) == \
        ("greets", "mono", True, False, "c1", 0)
    assert describe_perms(info.permissions) == "owner=0x7fffffff next_owner=0x00082000"
    # Permissions that are not permissions at all keep the known masks too.
    tr.update(_decode_update(inventory=[_known_script() | {"permissions": "all"}]))
    assert item.info.permissions == t.Permissions(owner=0x7FFFFFFF, next_owner=0x82000)


def test_an_absent_item_field_still_means_absent() -> None:
    # Full replacements: what is not sent is unknown (None), as before; null is absence too.
    tr = Tree()
    tr.publish(obj(inventory=[_known_script()]))
    item = _item(tr, "i1")
    tr.update(_decode_update(inventory=[script("i1", "Main", running=None)]))
    assert item.info.running is None and item.info.vm is None and item.info.permissions is None
    # The next update's ill-typed field keeps that: nothing better was known.
    tr.update(_decode_update(inventory=[script("i1", "Main", running="yes")]))
    assert item.info.running is None


def test_an_ill_typed_field_of_a_new_item_takes_its_default() -> None:
    tr = Tree()
    tr.publish(obj(inventory=[]))
    tr.update(_decode_update(inventory=[script("i2", "New", running="yes", revision="3")]))
    info = _item(tr, "i2").info
    assert info.running is None and info.revision is None


def test_only_the_merged_record_changes_reach_the_kernel() -> None:
    seen: list[Invalidation] = []
    tr = Tree(on_invalidate=seen.append)
    tr.publish(obj(inventory=[_known_script(revision=3)]))
    item = _item(tr, "i1")
    seen.clear()
    tr.update(_decode_update(inventory=[_known_script(revision=3) | {"running": "yes"}]))
    assert InodeChanged(item.inode, data=False) not in seen  # nothing it shows changed


def test_an_ill_typed_revision_neither_hides_nor_fakes_a_change() -> None:
    # No signal either way: that item, in that update, goes by the older viewers' rule (any
    # replacement may hide a change: fetch again), and the revision known stays for the next one.
    stale: list[Item] = []
    tr = Tree(on_stale=stale.append)
    tr.publish(obj(inventory=[script("i1", "Main", revision=3), script("i2", "Other", revision=8)]))
    item = _item(tr, "i1")
    item.cache.content, item.cache.content_valid, item.cache.content_revision = b"old", True, 3
    tr.update(_decode_update(inventory=[script("i1", "Main", revision="4"), script("i2", "Other", revision=8)]))
    assert item.info.revision == 3
    assert not item.cache.content_valid and stale == [item]  # not hidden: fetched again
    # The fetch at the revision known (3, as far as we can tell) shows the content; the next
    # well-typed revision is compared with 3.
    item.cache.content, item.cache.content_valid = b"new", True
    stale.clear()
    tr.update(_decode_update(inventory=[script("i1", "Main", revision=3), script("i2", "Other", revision=8)]))
    assert item.cache.content_valid and not stale
    tr.update(_decode_update(inventory=[script("i1", "Main", revision=4), script("i2", "Other", revision=8)]))
    assert not item.cache.content_valid and stale == [item]


def test_an_ill_typed_revision_on_our_own_saves_echo_is_that_echo() -> None:
    # The older viewers' rule: the echo of our save changes nothing of the others, and our own
    # item's content is kept until a fetch confirms it.
    stale: list[Item] = []
    tr = Tree(on_stale=stale.append)
    tr.publish(obj(inventory=[script("i1", "Main", revision=3), script("i2", "Other", revision=8)]))
    mine, other = _item(tr, "i1"), _item(tr, "i2")
    mine.cache.content, mine.cache.content_valid, mine.cache.content_revision = b"saved by us", True, 3
    other.cache.content, other.cache.content_valid, other.cache.content_revision = b"theirs", True, 8
    mine.echo.expected_until = time.monotonic() + 2
    tr.update(_decode_update(inventory=[script("i1", "Main", revision=4), script("i2", "Other", revision="9")]))
    assert mine.cache.content_valid and not mine.content_current and stale == [mine]
    assert other.cache.content_valid and other.content_current and other.info.revision == 8


def test_a_republished_object_keeps_what_its_ill_typed_fields_said() -> None:
    tr = Tree()
    tr.publish(from_json(t.PublishedObject, {
        "object_id": "o1", "object_name": "Box", "object_description": "a box", "permissions": FULL,
        "owner_id": "own", "can_save_back": True, "inventory": [script("i1", "Main", running=True)],
        "linked_objects": [{"link_id": "l1", "link_number": 2, "link_name": "Lid", "link_description": "top",
                            "permissions": FULL, "inventory": [script("i2", "Hinge", running=True)]}]}))
    box = tr.objects["o1"]
    tr.publish(from_json(t.PublishedObject, {
        "object_id": "o1", "object_name": 7, "object_description": [], "permissions": "all", "owner_id": 1,
        "can_save_back": "yes", "inventory": {"i1": "?"},
        "linked_objects": [{"link_id": "l1", "link_number": "2", "link_name": None, "link_description": 0,
                            "permissions": {"owner": "x"}, "inventory": "none"}]}, on_ignored=lambda _f, _w: None))
    assert (box.link_name, box.description, box.owner_id, box.can_save_back) == ("Box", "a box", "own", True)
    assert box.permissions == t.Permissions(owner=0x7FFFFFFF, next_owner=0x82000)
    assert _item(tr, "i1").info.running is True and box.name == "Box"
    lid = _folder(tr, "l1")
    # link_name null is absence: the default, as before; the others were ill-typed and are kept.
    assert (lid.link_name, lid.link_number, lid.description) == ("", 2, "top")
    assert lid.permissions == t.Permissions(owner=0x7FFFFFFF, next_owner=0x82000)
    assert _item(tr, "i2").info.running is True
    # A prim list sent as something else keeps the prims.
    tr.publish(from_json(t.PublishedObject, {"object_id": "o1", "object_name": "Box", "linked_objects": "x"},
                         on_ignored=lambda _f, _w: None))
    assert "l1" in box.prims and "i1" not in box.items  # its inventory, absent, is empty


def test_a_child_prims_ill_typed_item_field_keeps_the_known_value() -> None:
    tr = Tree()
    tr.publish(obj(inventory=[], links=[{"link_id": "l1", "link_number": 2, "link_name": "Lid",
                                         "inventory": [_known_script()]}]))
    tr.update(_decode_update(changes={"linked_objects": {"modified": [
        {"link_id": "l1", "inventory": [script("i1", "Main", running="yes", vm=2)]}]}}))
    info = _item(tr, "i1").info
    assert info.running is True and info.vm == "mono"
    # A linkset replacement with an ill-typed link name keeps the name (and the file names).
    tr.update(_decode_update(linked_objects=[{"link_id": "l1", "link_number": 2, "link_name": False,
                                              "inventory": [_known_script()]}]))
    assert _folder(tr, "l1").link_name == "Lid"


def test_well_typed_records_are_taken_as_they_are() -> None:
    tr = Tree()
    tr.publish(obj(inventory=[_known_script()]))
    record = update(inventory=[_known_script() | {"running": False}]).inventory
    assert record is not None
    tr.update(update(inventory=[_known_script() | {"running": False}]))
    assert _item(tr, "i1").info == record[0] and _item(tr, "i1").info.running is False
