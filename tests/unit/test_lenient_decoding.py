"""Decoding bends where it may and holds where it must (protocol.codec).

The property: for every payload type, replacing any optional field, at any depth, by a value of
another JSON type decodes without error, keeps every required field, and reports the field once.
Required fields stay strict."""

from __future__ import annotations

import types
import typing
from typing import Any, Union

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slfs.protocol import ProtocolError, from_json, to_json
from slfs.protocol import command_types as ct
from slfs.protocol import types as t
from slfs.protocol.codec import UNKNOWN_FIELD, field_key

# Every payload class of the protocol's type modules.
TYPE_NAMES = {**vars(t), **vars(ct)}
PAYLOAD_TYPES = sorted((c for c in TYPE_NAMES.values() if isinstance(c, type) and attrs.has(c)),
                       key=lambda c: c.__name__)


def _fields(cls: type) -> tuple[attrs.Attribute, ...]:  # type: ignore[type-arg]
    attrs.resolve_types(cls, globalns=TYPE_NAMES)
    return tuple(f for f in attrs.fields(cls) if f.name not in ("extra", "dropped"))


def _strip_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def sample(tp: Any) -> Any:
    """A valid JSON value of `tp`, with every optional field present (so each can be replaced)."""
    tp = _strip_optional(tp)
    origin = typing.get_origin(tp)
    if attrs.has(tp):
        return {f.name: sample(f.type) for f in _fields(tp)}
    if origin is typing.Literal:
        return typing.get_args(tp)[0]
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return [sample(item), sample(item)]
    if origin is dict:
        return {"k": sample(typing.get_args(tp)[1])} if typing.get_args(tp) else {}
    return {str: "x", int: 7, float: 1.5, bool: True, dict: {}, list: []}.get(tp, "any")


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object"}[type(value)]


def optional_paths(cls: type, data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths (keys and list indices) of every optional field in `data`, at any depth."""
    out: list[tuple[Any, ...]] = []
    for f in _fields(cls):
        if f.name not in data:
            continue
        here = (*prefix, f.name)
        if f.default is not attrs.NOTHING and _strip_optional(f.type) is not Any:
            out.append(here)
        inner = _strip_optional(f.type)
        if attrs.has(inner):
            out += optional_paths(inner, data[f.name], here)
        elif typing.get_origin(inner) is list and typing.get_args(inner) and attrs.has(typing.get_args(inner)[0]):
            for i, element in enumerate(data[f.name]):
                out += optional_paths(typing.get_args(inner)[0], element, (*here, i))
    return out


def required_values(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Every required field's decoded value, by path, through nested payloads."""
    out: dict[str, Any] = {}
    for f in _fields(type(obj)):
        value = getattr(obj, f.name)
        here = f"{prefix}.{f.name}" if prefix else f.name
        if f.default is attrs.NOTHING:
            out[here] = value if not attrs.has(type(value)) and not isinstance(value, list) else None
        if attrs.has(type(value)):
            out.update(required_values(value, here))
        elif isinstance(value, list):
            for i, element in enumerate(value):
                if attrs.has(type(element)):
                    out.update(required_values(element, f"{here}[{i}]"))
    return out


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    import copy

    data = copy.deepcopy(data)
    cur = data
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return data


def _dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
    return out


OTHER_VALUES = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) \
    | st.text(max_size=10) | st.lists(st.integers() | st.text(max_size=3), max_size=3) \
    | st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=3), max_size=3)

CASES = [(cls, path) for cls in PAYLOAD_TYPES for path in optional_paths(cls, sample(cls))]


def test_every_payload_has_a_valid_sample() -> None:
    for cls in PAYLOAD_TYPES:
        from_json(cls, sample(cls))
    assert len(CASES) > 100


@settings(max_examples=600)
@given(st.sampled_from(CASES), OTHER_VALUES)
def test_optional_field_of_another_type_never_fails(case: tuple[type, tuple[Any, ...]], value: Any) -> None:
    cls, path = case
    original = sample(cls)
    old = original
    for key in path:
        old = old[key]
    if json_kind(value) == json_kind(old):
        value = None if json_kind(old) != "null" else "other"
    ignored: list[tuple[str, str]] = []
    before = from_json(cls, original)
    after = from_json(cls, _set(original, path, value), on_ignored=lambda f, why: ignored.append((f, why)))
    gone = _dotted(path)

    def kept(values: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if not (k == gone or k.startswith((gone + ".", gone + "[")))}

    assert kept(required_values(after)) == kept(required_values(before))
    if value is not None:
        # Reported under the field's index-free key (the session logs each key once), and kept raw.
        assert field_key(_dotted(path)) in {f for f, _ in ignored}
        # The record that declares `dropped` names it, so the model keeps what it knew.
        holder = after
        for key in path[:-1]:
            holder = holder[key] if isinstance(key, int) else getattr(holder, key)
        if "dropped" in attrs.fields_dict(type(holder)):
            assert path[-1] in holder.dropped


@pytest.mark.parametrize("cls", PAYLOAD_TYPES, ids=lambda c: c.__name__)
def test_required_fields_stay_strict(cls: type) -> None:
    for f in _fields(cls):
        if f.default is attrs.NOTHING:
            if f.type is not Any:
                good = sample(cls)[f.name]
                wrong = 5 if isinstance(good, str) else "wrong"
                with pytest.raises(ProtocolError, match=f.name):
                    from_json(cls, {**sample(cls), f.name: wrong})
            bad = {k: v for k, v in sample(cls).items() if k != f.name}
            with pytest.raises(ProtocolError, match="is required"):
                from_json(cls, bad)


def test_embedded_items_as_a_count_and_as_the_old_guess() -> None:
    ignored: list[tuple[str, str]] = []
    got = from_json(t.ContentGetResponse, {"content": "hi", "embedded_items": 3})
    assert got.embedded_items == 3
    old = from_json(t.ContentGetResponse, {"content": "hi", "embedded_items": []},
                    on_ignored=lambda f, why: ignored.append((f, why)))
    assert old.content == "hi" and old.embedded_items is None
    assert old.extra["embedded_items"] == []  # kept raw
    assert ignored == [("embedded_items", "must be an integer")]


def test_one_bad_item_field_is_reported_once_per_key() -> None:
    inventory = [{"item_id": f"i{n}", "name": "n", "type": "script", "vm": 5} for n in range(50)]
    ignored: list[str] = []
    msg = from_json(t.ObjectPublish, {"object": {"object_id": "o", "inventory": inventory}},
                    on_ignored=lambda f, why: ignored.append(f))
    assert len(msg.object.inventory) == 50 and all(i.vm is None for i in msg.object.inventory)
    assert set(ignored) == {"object.inventory[].vm"}


def test_unknown_fields_are_kept_and_reported_once_per_key() -> None:
    seen: list[tuple[str, str]] = []
    msg = from_json(t.ObjectPublish, {"object": {"object_id": "o", "future": 1, "inventory": [
        {"item_id": "a", "name": "n", "type": "notecard", "asset_hint": "x"},
        {"item_id": "b", "name": "m", "type": "notecard", "asset_hint": "y"}]}},
        on_ignored=lambda f, why: seen.append((f, why)))
    assert msg.object.extra == {"future": 1} and msg.object.inventory[1].extra == {"asset_hint": "y"}
    assert set(seen) == {("object.future", UNKNOWN_FIELD), ("object.inventory[].asset_hint", UNKNOWN_FIELD)}


def test_an_inventory_element_without_its_id_fails_the_payload() -> None:
    # Dropping it would read as a deletion of that item.
    with pytest.raises(ProtocolError, match=r"inventory\[1\]\.item_id"):
        from_json(t.ObjectUpdate, {"object_id": "o", "inventory": [
            {"item_id": "a", "name": "n", "type": "notecard"}, {"name": "n", "type": "notecard"}]})


def test_records_the_model_merges_name_their_dropped_fields() -> None:
    # Present but of an unexpected type: named in `dropped` (the value, as ever, is the default and
    # the raw value is in `extra`). Absent, null and unknown fields are not dropped ones.
    item = from_json(t.InventoryItem, {"item_id": "i", "name": "n", "type": "script", "running": "yes",
                                       "revision": "7", "description": None,
                                       "permissions": {"owner": 1, "next_owner": "x"}},
                     on_ignored=lambda f, why: None)
    assert item.running is None and item.revision is None and item.extra == {"running": "yes", "revision": "7"}
    assert item.dropped == {"running", "revision"}
    assert item.permissions is not None and item.permissions.dropped == {"next_owner"}
    whole = from_json(t.InventoryItem, {"item_id": "i", "name": "n", "type": "script", "permissions": "all",
                                        "dropped": ["vm"], "faulted": 0})
    assert whole.permissions is None and whole.dropped == {"permissions", "faulted"}
    assert whole.extra == {"permissions": "all", "dropped": ["vm"], "faulted": 0}
    # A field named `dropped` on the wire is an unknown field, and one without ignored fields names none.
    plain = from_json(t.InventoryItem, {"item_id": "i", "name": "n", "type": "script", "dropped": ["running"]})
    assert plain.dropped == frozenset() and plain.extra == {"dropped": ["running"]}
    assert from_json(t.InventoryItem, {"item_id": "i", "name": "n", "type": "script"}).dropped == frozenset()
    # Nested records name their own: a list sent as something else is dropped, not emptied.
    msg = from_json(t.ObjectPublish, {"object": {"object_id": "o", "object_name": 3, "inventory": {"a": 1},
                                                 "linked_objects": [{"link_id": "l", "link_number": "2"}]}})
    assert msg.object.dropped == {"object_name", "inventory"} and msg.object.inventory == []
    assert msg.object.linked_objects is not None and msg.object.linked_objects[0].dropped == {"link_number"}
    # Encoding leaves `dropped` out (the raw values in `extra` go back as they came).
    assert to_json(item) == {"item_id": "i", "name": "n", "type": "script",
                             "permissions": {"owner": 1, "next_owner": "x"}, "running": "yes", "revision": "7"}
    # Equality ignores it, as it ignores `extra`.
    assert item == attrs.evolve(item, dropped=frozenset())


def test_deferred_permissions_merge() -> None:
    first = t.Permissions(owner=0x7FFFFFFF)
    later = from_json(t.Permissions, {"owner": 0x8E000, "next_owner": 0x82000})
    assert first.merged(later) == t.Permissions(owner=0x8E000, next_owner=0x82000)
    assert later.merged(t.Permissions(owner=1)) == t.Permissions(owner=1, next_owner=0x82000)
    assert first.merged(None) is first


def test_each_key_is_told_once_per_call() -> None:
    inventory = [{"item_id": f"i{n}", "name": "n", "type": "script", "vm": 5, "hint": n} for n in range(50)]
    calls: list[tuple[str, str]] = []
    from_json(t.PublishedObject, {"object_id": "o", "inventory": inventory},
              on_ignored=lambda f, why: calls.append((f, why)))
    assert calls == [("inventory[].vm", "must be one of 'lsl2', 'mono', 'luau'"), ("inventory[].hint", UNKNOWN_FIELD)]


def test_a_failing_payload_reports_only_what_comes_before_its_failure() -> None:
    # As a field-by-field decode that stops at the first failure: nothing past it is reported.
    seen: list[str] = []
    with pytest.raises(ProtocolError, match=r"^inventory\[1\]\.name: must be a string$"):
        from_json(t.LinkedObject, {"link_id": "l", "link_description": 3, "inventory": [
            {"item_id": "a", "name": "n", "type": "notecard", "hint": 1},
            {"item_id": "b", "name": 5, "type": "notecard", "vm": 5},
            {"item_id": "c", "name": "n", "type": "notecard", "later": 1}]}, on_ignored=lambda f, why: seen.append(f))
    assert seen == ["link_description", "inventory[].hint"]
    seen.clear()
    with pytest.raises(ProtocolError, match=r"^content: must be a string$"):
        from_json(t.ContentGetResponse, {"content": None, "encoding": 5, "zz": 1},
                  on_ignored=lambda f, why: seen.append(f))
    assert seen == []


def test_an_odd_nested_payload_is_ignored_with_its_inner_path() -> None:
    seen: list[tuple[str, str]] = []
    item = from_json(t.InventoryItem, {"item_id": "i", "name": "n", "type": "script",
                                       "permissions": {"next_owner": 1}, "running": 1.0},
                     on_ignored=lambda f, why: seen.append((f, why)))
    assert item.permissions is None and item.running is None
    assert item.extra == {"permissions": {"next_owner": 1}, "running": 1.0}
    assert seen == [("running", "must be a boolean"), ("permissions.owner", "is required")]


def test_payloads_in_a_mapping_are_reported_under_their_key() -> None:
    seen: list[tuple[str, str]] = []
    got = from_json(ct.CommandListResponse, {"commands": [{"command": "viewer.teleport", "params": {
        "object_id": {"type": "uuid", "hint": "x"}, "target": {"type": "string", "required": "yes"}}}]},
        on_ignored=lambda f, why: seen.append((f, why)))
    assert got.commands[0].params is not None and got.commands[0].params["target"].required is None
    assert seen == [("commands[].params.object_id.hint", UNKNOWN_FIELD),
                    ("commands[].params.target.required", "must be a boolean")]
    bad = from_json(ct.CommandInfo, {"command": "c", "params": {"a": {"type": "t"}, "b": {"required": True}}},
                    on_ignored=lambda f, why: seen.append((f, why)))
    assert bad.params is None and seen[-1] == ("params.b.type", "is required")


def test_numbers_are_checked_not_coerced() -> None:
    assert from_json(t.Diagnostic, {"row": 3.0, "column": 1, "level": "error", "message": "m"}).row == 3
    assert type(from_json(t.Diagnostic, {"row": 3.0, "column": 1, "level": "error", "message": "m"}).row) is int
    for wrong in (True, 3.5, "3", float("inf")):
        with pytest.raises(ProtocolError, match=r"^row: must be an integer$"):
            from_json(t.Diagnostic, {"row": wrong, "column": 1, "level": "error", "message": "m"})
    assert from_json(t.SystemPing, {"timestamp": 5}).timestamp == 5
    assert from_json(t.SystemPing, {"timestamp": False}).timestamp is None
    with pytest.raises(ProtocolError, match=r"^name: must be a string$"):
        from_json(t.InventoryItem, {"item_id": "i", "name": 5, "type": "script"})


def test_null_takes_the_default_and_a_field_named_extra_is_kept() -> None:
    obj = from_json(t.PublishedObject, {"object_id": "o", "object_name": None, "inventory": None, "extra": [1]})
    assert obj.object_name == "" and obj.inventory == [] and obj.extra == {"extra": [1]}
    with pytest.raises(ProtocolError, match=r"^ObjectPublish: must be an object$"):
        from_json(t.ObjectPublish, None)
    with pytest.raises(ProtocolError, match=r"^objects\[0\]: must be an object$"):
        from_json(t.ObjectListResponse, {"objects": [None]})
    with pytest.raises(ProtocolError, match=r"^result\.objects\[0\]\.object_id: is required$"):
        from_json(t.ObjectListResponse, {"objects": [{}]}, "result")


def test_decoding_leaves_nothing_for_the_cycle_collector() -> None:
    # The collector is paused during a decode: the failures it handles must not leave cycles behind.
    import gc

    items = [{"item_id": f"i{n}", "name": "n", "type": "script", "permissions": {"next_owner": 1},
              "running": "yes", "zz": n} for n in range(200)]
    gc.collect()
    got = from_json(t.ObjectListResponse, {"objects": [{"object_id": "o", "inventory": items,
                                                        "linked_objects": [{"link_id": "l", "inventory": items}]}]},
                    on_ignored=lambda f, why: None)
    assert all(i.permissions is None for i in got.objects[0].inventory)
    with pytest.raises(ProtocolError):
        from_json(t.ObjectListResponse, {"objects": [{"object_id": "o", "inventory": [*items, {"name": 1}]}]})
    assert gc.collect() == 0
    assert gc.isenabled()
    gc.disable()
    try:
        from_json(t.SessionOk, None)
        assert not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()


def _item(i: int, permissions: Any) -> dict[str, Any]:
    return {"item_id": f"{i:08x}-0000-4000-8000-000000000001", "name": f"n{i}", "type": "notecard",
            "permissions": permissions}


def test_equal_permissions_in_one_payload_are_one_object() -> None:
    """Permissions share their values (codec._shared): the items of one payload holding equal
    masks hold one object, and one with anything odd about it is decoded alone, as before."""
    perms = {"owner": 0x7FFFFFFF, "next_owner": 0x82000}
    heard: list[tuple[str, str]] = []
    obj = from_json(t.PublishedObject, {"object_id": "o", "inventory": [
        _item(0, perms), _item(1, dict(perms)), _item(2, {"owner": 0x7FFFFFFF, "next_owner": 1}),
        _item(3, {**perms, "next_owner": "x"}), _item(4, {**perms, "new": 1}),
        _item(5, {"owner": 0x7FFFFFFF, "next_owner": 0x82000 * 1.0})]}, "object",
        on_ignored=lambda k, p: heard.append((k, p)))
    got = [i.permissions for i in obj.inventory]
    assert got[0] is got[1]
    assert got[2] is not got[0] and got[2].next_owner == 1
    assert got[3].next_owner is None and got[3].dropped == {"next_owner"} and got[3] is not got[0]
    assert got[4].extra == {"new": 1} and got[4] is not got[0]
    # 0x82000 * 1.0 == 0x82000 (an integral float is taken): an equal value, but not the same key
    assert got[5] == got[0] and got[5] is not got[0] and type(got[5].next_owner) is int
    assert ("object.inventory[].permissions.next_owner", "must be an integer") in heard
    assert ("object.inventory[].permissions.new", UNKNOWN_FIELD) in heard
    # a bool is no integer, though True == 1 as a key: that item's permissions are ignored
    odd = from_json(t.PublishedObject, {"object_id": "o", "inventory": [
        _item(0, {"owner": 1}), _item(1, {"owner": True})]}, "object")
    assert odd.inventory[0].permissions == t.Permissions(owner=1)
    assert odd.inventory[1].permissions is None and odd.inventory[1].dropped == {"permissions"}
    # a second payload shares nothing with the first
    again = from_json(t.PublishedObject, {"object_id": "o", "inventory": [_item(0, perms)]}, "object")
    assert again.inventory[0].permissions == got[0] and again.inventory[0].permissions is not got[0]
