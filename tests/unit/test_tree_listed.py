"""Objects of the viewer's object.list built when first read: the root shows them at once, each
object's inventory and prims are decoded and built by the first read of its folder (or an event
about one of them), and what is then built is what a whole decode would have built."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from support.payloads import script

from slfs.protocol import ProtocolError, from_json
from slfs.protocol import types as t
from slfs.session.listener import ListedObject
from slfs.session.listing import decode_listing
from slfs.world.tree import EntryChanged, Folder, InodeChanged, Invalidation, Item, Tree

OID = "0000000a-0000-4000-8000-000000000000"
LINK = "0000000b-0000-4000-8000-000000000000"  # the prim and its script in the object OID (world())
KNOB = "0000000d-0000-4000-8000-000000000000"


class Decoder:
    """decode_listing's decode, counting the whole-object decodes (a `full()` call each)."""

    def __init__(self) -> None:
        self.full_decodes: list[str] = []
        self.ignored: list[tuple[str, str]] = []

    def __call__(self, cls: type[Any], data: Any, what: str, path: str) -> Any:
        if cls is t.PublishedObject:
            self.full_decodes.append(data.get("object_id"))
        return from_json(cls, data, path, on_ignored=lambda f, p: self.ignored.append((f, p)))


def world(oid: str = OID, name: str = "Box", n: int = 3, **extra: Any) -> dict[str, Any]:
    inventory = [script(f"{oid[:8]}-{i:04x}-4000-8000-00000000000c", f"S {i}") for i in range(n)]
    return {"object_id": oid, "object_name": name, "inventory": inventory,
            "linked_objects": [{"link_id": f"{LINK[:9]}{oid[9:13]}{LINK[13:]}", "link_number": 2, "link_name": "Door",
                                "inventory": [script(f"{KNOB[:9]}{oid[9:13]}{KNOB[13:]}", "Knob")]}],
            **extra}


def listing(*objects: dict[str, Any], decoder: Decoder | None = None) -> list[ListedObject]:
    return decode_listing(decoder or Decoder(), {"objects": list(objects)})


@pytest.fixture
def tree() -> tuple[Tree, list[Invalidation]]:
    seen: list[Invalidation] = []
    return Tree(on_invalidate=seen.append), seen


def test_the_root_shows_a_listed_object_before_anything_in_it_is_decoded(tree: tuple[Tree, Any]) -> None:
    tr, _ = tree
    dec = Decoder()
    tr.replace_all(listing(world(), decoder=dec))
    box = tr.root.entries["Box"]
    assert isinstance(box, Folder) and not box.built
    assert dec.full_decodes == []
    assert box.prim_count == 1 and tr.item_count == 4  # from the listing, not built
    assert set(box.entries) == {"S 0.lsl", "S 1.lsl", "S 2.lsl", "Door@0000000b"}  # the first read builds it
    assert box.built and dec.full_decodes == [OID]
    assert box.prim_count == 1 and tr.item_count == 4
    assert set(box.prims[LINK].entries) == {"Knob.lsl"}


def test_a_listed_object_builds_what_the_whole_decode_builds() -> None:
    objects = [world(f"0000000{k}-000{k}-4000-8000-000000000000", "Box" if k < 3 else f"Thing {k}", n=k)
               for k in range(1, 6)]
    whole, listed = Tree(), Tree()
    whole.replace_all(from_json(t.ObjectListResponse, {"objects": objects}).objects)
    listed.replace_all(listing(*objects))

    def shape(tr: Tree) -> Any:
        def of(folder: Folder) -> Any:
            return {name: of(n) if isinstance(n, Folder) else (n.uuid, n.info) for name, n in folder.entries.items()}
        return of(tr.root)

    assert shape(listed) == shape(whole)


def test_an_event_about_an_item_or_prim_builds_only_its_object(tree: tuple[Tree, Any]) -> None:
    tr, _ = tree
    dec = Decoder()
    other = "0000000e-0001-4000-8000-000000000000"
    tr.replace_all(listing(world(), world(other, "Lamp"), decoder=dec))
    assert tr.find("ffffffff-0000-4000-8000-000000000000") is None and tr.find("") is None
    assert dec.full_decodes == []  # an id listed nowhere builds nothing
    knob = tr.find(KNOB)
    assert isinstance(knob, Item) and knob.info.name == "Knob"
    assert dec.full_decodes == [OID]
    assert isinstance(tr.find("0000000b-0001-4000-8000-000000000000"), Folder)  # the other's prim
    assert dec.full_decodes == [OID, other]


def test_building_keeps_the_folder_time_and_tells_the_kernel_nothing_it_cached(tree: tuple[Tree, Any]) -> None:
    tr, seen = tree
    tr.replace_all(listing(world()))
    box = tr.root.entries["Box"]
    assert isinstance(box, Folder)
    mtime = box.mtime_ns
    seen.clear()
    assert box.items
    assert box.mtime_ns == mtime
    assert not [i for i in seen if isinstance(i, EntryChanged)]


def test_a_reconnect_replaces_an_unread_listing_and_rebuilds_a_read_one(tree: tuple[Tree, Any]) -> None:
    tr, seen = tree
    lamp = "0000000e-0001-4000-8000-000000000000"
    tr.replace_all(listing(world(), world(lamp, "Lamp")))
    box = tr.root.entries["Box"]
    assert isinstance(box, Folder) and box.items  # read: built
    inode = box.items[f"{OID[:8]}-0000-4000-8000-00000000000c"].inode
    dec = Decoder()
    seen.clear()
    tr.replace_all(listing(world(n=2), world(lamp, "Lamp", n=5), decoder=dec))
    assert dec.full_decodes == [OID]  # the object shown is rebuilt at once; the other stays unread
    assert set(box.entries) == {"S 0.lsl", "S 1.lsl", "Door@0000000b"}
    assert EntryChanged(box.inode, "S 2.lsl") in seen
    assert box.items[f"{OID[:8]}-0000-4000-8000-00000000000c"].inode == inode  # inodes stay
    lamp_folder = tr.root.entries["Lamp"]
    assert isinstance(lamp_folder, Folder) and not lamp_folder.built
    assert len(lamp_folder.items) == 5  # the newer listing's
    assert dec.full_decodes == [OID, lamp]


def test_publish_unpublish_and_update_of_an_unread_object(tree: tuple[Tree, Any]) -> None:
    tr, _ = tree
    dec = Decoder()
    lamp = "0000000e-0001-4000-8000-000000000000"
    tr.replace_all(listing(world(), world(lamp, "Lamp"), decoder=dec))
    tr.publish(from_json(t.PublishedObject, world(n=1)))  # replaces the listing, which is never read
    assert dec.full_decodes == []
    box = tr.root.entries["Box"]
    assert isinstance(box, Folder) and box.built and len(box.items) == 1
    tr.update(from_json(t.ObjectUpdate, {"object_id": lamp, "inventory": []}))
    assert dec.full_decodes == [lamp]  # the update is applied to what the listing said
    assert tr.find(LINK) is not None and not tr.root.entries["Lamp"].items  # type: ignore[attr-defined]
    tr.replace_all(listing(world(lamp, "Lamp")))
    assert tr.unpublish(lamp)
    assert "Lamp" not in tr.root.entries and tr.find(f"{lamp[:8]}-0000-4000-8000-00000000000c") is None


def test_a_republish_keeping_the_listed_inventory_reads_it_first(tree: tuple[Tree, Any]) -> None:
    tr, _ = tree
    dec = Decoder()
    tr.replace_all(listing(world(), decoder=dec))
    # An inventory of an unexpected type keeps what was known: the listing's.
    tr.publish(from_json(t.PublishedObject, {**world(), "object_name": "Crate", "inventory": "nope"}))
    assert dec.full_decodes == [OID]
    crate = tr.root.entries["Crate"]
    assert isinstance(crate, Folder) and len(crate.items) == 3


def test_an_object_whose_inventory_cannot_be_decoded_is_shown_empty(
        tree: tuple[Tree, Any], caplog: pytest.LogCaptureFixture) -> None:
    tr, seen = tree
    bad = world()
    bad["inventory"].append({"name": "no id", "type": "script"})  # item_id is required
    tr.replace_all(listing(bad, world("0000000e-0001-4000-8000-000000000000", "Lamp")))
    box = tr.root.entries["Box"]
    assert isinstance(box, Folder)
    seen.clear()
    with caplog.at_level(logging.ERROR):
        assert box.entries == {}
    assert "its folder is shown empty" in caplog.text and "item_id" in caplog.text
    assert box.built and box.prim_count == 0
    assert InodeChanged(box.inode, data=False) in seen  # its link count changed
    assert tr.root.entries["Lamp"].items  # type: ignore[attr-defined]  # the rest of the answer is fine


def test_a_malformed_object_fails_the_whole_answer_at_once() -> None:
    with pytest.raises(ProtocolError, match="object_id"):
        listing(world(), {"object_name": "no id"})
    with pytest.raises(ProtocolError):
        decode_listing(Decoder(), {"objects": "nope"})


def test_a_listed_field_of_an_unexpected_type_is_reported_under_its_whole_answer_key() -> None:
    dec = Decoder()
    obj = world()
    obj["inventory"][1]["running"] = "yes"
    obj["region"] = 7
    (listed,) = listing(obj, decoder=dec)
    assert ("objects[].region", "must be a string") in dec.ignored
    assert not any("inventory" in f for f, _p in dec.ignored)
    full = listed.full()
    assert ("objects[].inventory[].running", "must be a boolean") in dec.ignored
    assert full.inventory[1].running is None and "running" in full.inventory[1].dropped


def test_the_items_in_an_object_build_only_that_object(tree: tuple[Tree, Any]) -> None:
    tr, _ = tree
    dec = Decoder()
    lamp = "0000000e-0001-4000-8000-000000000000"
    tr.replace_all(listing(world(), world(lamp, "Lamp", n=2), decoder=dec))
    lamp_folder = tr.objects[lamp]
    assert sorted(i.info.name for i in tr.items_in(lamp_folder)) == ["Knob", "S 0", "S 1"]
    assert dec.full_decodes == [lamp]
    assert len(tr.items_in(tr.root)) == 7 and dec.full_decodes == [lamp, OID]
