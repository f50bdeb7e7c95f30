"""Name mapping: pure rules, no mount."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from slfs.world import names


@attrs.frozen
class E:
    uuid: str
    wanted_base: str
    wanted_ext: str = ""
    always_tagged: bool = False


def test_slash_round_trip() -> None:
    assert names.to_fs("Notes/Todo") == "Notes\u2215Todo"
    assert names.to_sl("Notes\u2215Todo") == "Notes/Todo"


def test_extensions() -> None:
    assert names.item_file_name("Main", "script", 0) == "Main.lsl"
    assert names.item_file_name("Main", "script", 1) == "Main.luau"
    assert names.item_file_name("x.lsl", "notecard", None) == "x.lsl"


def test_lowest_uuid_keeps_plain_name() -> None:
    a, b = E("bbbb0000-0000", "Box"), E("aaaa0000-0000", "Box")
    layout = names.resolve([a, b])
    assert layout["Box"] is b
    assert layout["Box@bbbb0000"] is a


def test_notecard_named_like_a_script_is_tagged() -> None:
    script = E("20000000-0000", "x", ".lsl")
    card = E("10000000-0000", "x.lsl")
    layout = names.resolve([script, card])
    assert set(layout) == {"x.lsl", "x.lsl@20000000"} or set(layout) == {"x.lsl", "x@20000000.lsl"}
    assert layout["x.lsl"] is card


def test_child_prims_always_tagged_and_stable() -> None:
    kids = [E(f"{i:08x}-0000", "Object", always_tagged=True) for i in range(5)]
    layout = names.resolve(kids)
    assert sorted(layout) == sorted(f"Object@{i:08x}" for i in range(5))
    # Unlinking one leaves every other name where it was.
    again = names.resolve(kids[1:])
    assert all(again[n] is layout[n] for n in again)


def test_prim_names_never_taken_by_items() -> None:
    prim = E("abcdef12-0000", "Door", always_tagged=True)
    item = E("00000000-0000", "Door@abcdef12")
    layout = names.resolve([prim, item])
    assert layout["Door@abcdef12"] is prim
    assert len(layout) == 2


def test_unusable_names_are_tagged() -> None:
    layout = names.resolve([E("11111111-0000", ""), E("22222222-0000", ".."), E("33333333-0000", ".slfs")])
    assert set(layout) == {"@11111111", "..@22222222", ".slfs@33333333"}


def test_strip_tag() -> None:
    assert names.strip_tag("Box@1a2b3c4d") == ("Box", "1a2b3c4d")
    assert names.strip_tag("me@home") == ("me@home", None)


_specs = st.tuples(st.uuids(), st.sampled_from(["A", "B", "a/b", "a\u2215b", "", "x.lsl"]),
                   st.sampled_from(["", ".lsl", ".luau"]), st.booleans())


@given(st.lists(_specs, max_size=12, unique_by=lambda x: x[0]))
def test_resolve_gives_distinct_valid_names_deterministically(spec: list[tuple[object, str, str, bool]]) -> None:
    entries = [E(str(u), names.to_fs(b), ext, tag) for u, b, ext, tag in spec]
    layout = names.resolve(entries)
    assert len(layout) == len(entries)
    assert all(names.fits_fs(n) and "/" not in n for n in layout)
    assert names.resolve(list(reversed(entries))) == layout


_plain_specs = st.tuples(st.uuids(), st.sampled_from(["A", "B", "a", "", "x.lsl", "..", ".slfs", "A@1", "n" * 300]),
                         st.sampled_from(["", ".lsl", ".luau"]), st.booleans())


@given(st.lists(_plain_specs, max_size=10, unique_by=lambda x: x[0]),
       st.sampled_from([(), ("A",), ("B.lsl", "x.lsl")]))
def test_resolve_plain_path_gives_what_the_whole_way_gives(spec: list[tuple[object, str, str, bool]],
                                                           reserved: tuple[str, ...]) -> None:
    """The shortcut for folders whose entries all keep their plain names: the same listing, in
    the same order, as the resolve that tags."""
    entries = [E(str(u), b, ext, tag) for u, b, ext, tag in spec]
    assert list(names.resolve(entries, reserved).items()) == list(names.resolve_tagging(entries, reserved).items())


def test_resolve_takes_reserved_names_from_an_iterator() -> None:
    """Read twice when the shortcut finds a reserved name: an iterator must not be used up."""
    layout = names.resolve([E("11111111-0000", "A", "", False)], iter(["A"]))
    assert list(layout) == ["A@11111111"]
