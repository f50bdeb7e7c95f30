"""Runtime output attributed to an item, its object or the mount, whatever references each viewer
generation sends (viewer-source.md §4), and the logs each lands in."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from slfs import event_types as ev
from slfs.model.runtime import ITEM, MOUNT, OBJECT, RuntimeLogs, attribute
from slfs.protocol import from_json
from slfs.protocol import types as t
from slfs.protocol.constants import NULL_UUID
from slfs.world.tree import Tree

ROOT, CHILD, MAIN, DOOR = "a" * 8 + "-0000-0000-0000-000000000001", "c" * 8 + "-0000-0000-0000-000000000002", \
    "1" * 8 + "-0000-0000-0000-000000000003", "2" * 8 + "-0000-0000-0000-000000000004"


class NoLive:
    by_id: dict[str, Any] = {}

    def item_of(self, ls: Any) -> None:
        return None


def make_tree() -> Tree:
    tree = Tree(on_invalidate=lambda _inv: None)
    tree.publish(from_json(t.PublishedObject, {
        "object_id": ROOT, "object_name": "House",
        "inventory": [{"item_id": MAIN, "name": "Main", "type": "script", "subtype": 0}],
        "linked_objects": [{"link_id": CHILD, "link_number": 2, "link_name": "Door",
                            "inventory": [{"item_id": DOOR, "name": "Hinge", "type": "script", "subtype": 0}]}]}))
    return tree


def who(tree: Tree, **kw: Any) -> tuple[str, str | None, str | None]:
    ref = from_json(t.ItemRef, kw.pop("item")) if "item" in kw else None
    fields = {"object_id": "", "prim_id": "", "item_id": "", "script_id": None, **kw}
    got = attribute(tree, NoLive(), ref=ref, **fields)  # type: ignore[arg-type]
    return got.scope, got.item.uuid if got.item else None, got.obj.uuid if got.obj else None


def test_g2_g4_item_references() -> None:
    tree = make_tree()
    assert who(tree, object_id=ROOT, prim_id=CHILD, item_id=DOOR) == (ITEM, DOOR, ROOT)
    assert who(tree, object_id=ROOT, item={"item_id": MAIN.upper(), "prim_id": ROOT}) == (ITEM, MAIN, ROOT)


def test_g1_script_id_and_the_speaking_prim() -> None:
    tree = make_tree()
    sid = hashlib.md5(f"{CHILD}_{DOOR}".encode()).hexdigest()
    # G1: object_id is the child prim that spoke, script_id the md5 of "<prim>_<item>".
    assert who(tree, object_id=CHILD, script_id=sid) == (ITEM, DOOR, ROOT)
    # An empty script_id: the object, by its speaking prim.
    assert who(tree, object_id=CHILD, script_id="") == (OBJECT, None, ROOT)


def test_g3_null_uuids_mean_unknown() -> None:
    tree = make_tree()
    assert who(tree, object_id=ROOT, prim_id=ROOT, item_id=NULL_UUID,
               item={"root_id": ROOT, "prim_id": ROOT, "item_id": NULL_UUID, "name": "", "language": "lsl"}) \
        == (OBJECT, None, ROOT)
    # A script name in the item reference names the script of that prim.
    assert who(tree, object_id=ROOT, item={"prim_id": CHILD, "item_id": NULL_UUID, "name": "Hinge"}) \
        == (ITEM, DOOR, ROOT)


def test_nothing_known_is_the_mount() -> None:
    tree = make_tree()
    assert who(tree, object_id="ffffffff-0000-0000-0000-000000000000") == (MOUNT, None, None)
    assert who(tree) == (MOUNT, None, None)


def test_each_scope_has_its_log() -> None:
    log = RuntimeLogs()
    now = time.time()
    log.add(ev.RuntimeDebug(time=now, scope="item", item_id=MAIN, object_id=ROOT, prim_id=ROOT, item_name="Main",
                            object_name="House", channel="owner_say", message="hello"))
    log.add(ev.RuntimeError_(time=now, scope="object", item_id="", object_id=ROOT, prim_id="", object_name="House",
                             channel="debug", message="Script run-time error", error="Math Error", line=3,
                             column=0, stack=["at x"]))
    log.add(ev.RuntimeDebug(time=now, scope="mount", object_id="", prim_id="", item_id="", object_name="Far",
                            channel="debug", message="lost"))
    assert log.script_log(MAIN).decode().endswith("owner_say: hello\n")
    obj = log.object_log(ROOT).decode().splitlines()
    assert obj[0].endswith("owner_say: hello") and obj[0].startswith("Main: ")
    assert obj[1].startswith("House: ") and obj[1].endswith("error (line 3): Math Error")
    assert obj[2] == "House:     at x"
    assert log.mount_log().decode().startswith("Far: ") and b"lost" in log.mount_log()
    assert log.script_log("") == b"" and log.script_log(NULL_UUID) == b""
