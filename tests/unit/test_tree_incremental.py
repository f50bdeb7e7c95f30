"""Large-inventory paths of the tree: the root's incremental relayout gives exactly what a full
relayout gives, and replace_all in steps ends where replace_all does, consistent between steps.
Object folders keep the names they were shown under while published under the same wanted name
(layout.py `pinned`); a fresh listing is named as names.resolve names it."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from slfs.protocol import from_json
from slfs.protocol import types as t
from slfs.world import names
from slfs.world.tree import Folder, Invalidation, Tree

# Names that collide, hold "@" or a tag, need a tag (reserved, too long), or map "/".
_NAMES = st.sampled_from(["Box", "Box", "box", "Box@00000001", "Box@0000000100000000", "", ".", "..",
                          ".slfs", "a/b", "a\u2215b", "x" * 70, "\u00e9" * 63, "Lamp", "Lamp@zz"])
# UUIDs sharing their first 8 hex digits, so tags must grow.
_IDS = st.sampled_from([f"0000000{a}-{b:04x}-4000-8000-000000000000" for a in "12" for b in range(4)])


def obj(oid: str, name: str, items: int = 0) -> t.PublishedObject:
    inventory = [{"item_id": f"{oid[:8]}-{i:04x}-4000-8000-00000000000a", "name": f"N {i}", "type": "notecard"}
                 for i in range(items)]
    return from_json(t.PublishedObject, {"object_id": oid, "object_name": name, "inventory": inventory})


def full_layout(tr: Tree) -> dict[str, Any]:
    return names.resolve(list(tr.objects.values()))  # type: ignore[arg-type]


# ("publish", id, name) | ("unpublish", id) | ("rename", id, name) | ("list", [(id, name)...])
_OPS = st.one_of(
    st.tuples(st.just("publish"), _IDS, _NAMES),
    st.tuples(st.just("unpublish"), _IDS),
    st.tuples(st.just("rename"), _IDS, _NAMES),
    st.tuples(st.just("list"), st.lists(st.tuples(_IDS, _NAMES), max_size=6, unique_by=lambda x: x[0])),
)


def apply(tr: Tree, op: tuple[Any, ...], *, steps: bool) -> None:
    if op[0] == "publish":
        tr.publish(obj(op[1], op[2]))
    elif op[0] == "unpublish":
        tr.unpublish(op[1])
    elif op[0] == "rename":
        tr.update(from_json(t.ObjectUpdate, {"object_id": op[1], "object_name": op[2]}))
    elif steps:
        for _ in tr.replace_all_steps([obj(i, n, 2) for i, n in op[1]], step_items=1):
            pass
    else:
        tr.replace_all([obj(i, n, 2) for i, n in op[1]])


def assert_sticky(tr: Tree, before: dict[str, tuple[str, str]]) -> None:
    """Every object shown before under the wanted name it has now keeps its name; each name is one
    names.resolve could give its object (plain, or tagged with its UUID)."""
    for name, node in tr.root.entries.items():
        assert isinstance(node, Folder)
        was = before.get(node.uuid)
        if was is not None and was[1] == node.wanted_base:
            assert name == was[0], (name, was)
        stem, ext = node.wanted_base, node.wanted_ext
        assert name == stem + ext or names.strip_tag(name)[1] is not None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(_IDS, _NAMES), max_size=6, unique_by=lambda x: x[0]))
def test_a_fresh_listing_is_named_as_resolve_names_it(listed: list[tuple[str, str]]) -> None:
    tr = Tree()
    tr.replace_all([obj(i, n) for i, n in listed])
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {n: f.uuid for n, f in full_layout(tr).items()}


def test_a_namesake_leaving_renames_no_folder() -> None:
    """Two objects named Twin: the one shown as Twin@... keeps that name when the other goes, and
    a Twin published later takes the plain name that is free again."""
    a, b, c = (f"0000000{n}-0000-4000-8000-000000000000" for n in "123")
    tr = Tree()
    tr.replace_all([obj(a, "Twin"), obj(b, "Twin")])
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin": a, "Twin@00000002": b}
    tr.unpublish(a)
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin@00000002": b}
    tr.replace_all([obj(b, "Twin")])  # a reconnect's listing: still the name it was shown under
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin@00000002": b}
    tr.publish(obj(c, "Twin"))
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin": c, "Twin@00000002": b}
    tr.update(from_json(t.ObjectUpdate, {"object_id": b, "object_name": "Other"}))  # renamed: named afresh
    tr.update(from_json(t.ObjectUpdate, {"object_id": b, "object_name": "Twin"}))
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin": c, "Twin@00000002": b}
    tr.unpublish(c)
    tr.publish(obj(a, "Twin"))  # published again: its old name is free again
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin": a, "Twin@00000002": b}
    tr.unpublish(a)
    tr.unpublish(b)  # a republish (G1, after each reconnect): an unpublish, then a publish
    tr.publish(obj(b, "Twin"))
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin@00000002": b}
    tr.publish(obj(c, "Twin"))
    tr.publish(obj(a, "Twin"))  # its old name is c's now: named afresh
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {"Twin": c, "Twin@00000001": a, "Twin@00000002": b}


class FullRelayout(Tree):
    """The reference: every relayout of the root a full resolve."""

    def relayout(self, folder: Folder, changed: Any = None) -> None:
        super().relayout(folder)


@settings(max_examples=300, deadline=None)
@given(st.lists(_OPS, max_size=25))
def test_incremental_root_relayout_matches_a_full_resolve(ops: list[tuple[Any, ...]]) -> None:
    seen: list[Invalidation] = []
    ref_seen: list[Invalidation] = []
    tr, ref = Tree(on_invalidate=seen.append), FullRelayout(on_invalidate=ref_seen.append)
    for op in ops:
        before = {node.uuid: (name, node.wanted_base) for name, node in tr.root.entries.items()}  # type: ignore[attr-defined]
        apply(tr, op, steps=False)
        apply(ref, op, steps=False)
        layout = {name: node.uuid for name, node in tr.root.entries.items()}
        assert_sticky(tr, before)
        assert layout == {name: node.uuid for name, node in ref.root.entries.items()}
        assert all(node.name == name for name, node in tr.root.entries.items())
        # The same kernel invalidations, whichever way the names were worked out.
        assert sorted(map(repr, seen)) == sorted(map(repr, ref_seen))
        seen.clear()
        ref_seen.clear()


@settings(max_examples=200, deadline=None)
@given(st.lists(_OPS, max_size=12))
def test_replace_all_in_steps_ends_like_replace_all(ops: list[tuple[Any, ...]]) -> None:
    stepped, whole = Tree(), Tree()
    for op in ops:
        apply(stepped, op, steps=True)
        apply(whole, op, steps=False)
        assert {n: f.uuid for n, f in stepped.root.entries.items()} == \
            {n: f.uuid for n, f in whole.root.entries.items()}
        assert {f.uuid: sorted(f.entries) for f in stepped.objects.values()} == \
            {f.uuid: sorted(f.entries) for f in whole.objects.values()}


def test_between_steps_each_object_is_wholly_old_or_new() -> None:
    tr = Tree()
    old = [obj(f"{i:08x}-0000-4000-8000-000000000000", f"Object {i}", 3) for i in range(10)]
    tr.replace_all(old)
    # The new list renames every object, drops two and adds two; one object per step.
    new = [obj(f"{i:08x}-0000-4000-8000-000000000000", f"Renamed {i}", 4) for i in range(2, 12)]
    steps = 0
    for _ in tr.replace_all_steps(new, step_items=1):
        steps += 1
        before, after = {o.object_id: o for o in old}, {o.object_id: o for o in new}
        assert not {f"{i:08x}-0000-4000-8000-000000000000" for i in range(2)} & set(tr.objects)
        for name, folder in tr.root.entries.items():
            assert isinstance(folder, Folder) and folder.attached and folder.name == name
            assert folder.published in (before.get(folder.uuid), after.get(folder.uuid))
            assert folder.link_name == folder.published.object_name  # type: ignore[union-attr]
            assert len(folder.entries) == len(folder.published.inventory)  # type: ignore[union-attr]
        assert set(tr.root.entries.values()) == set(tr.objects.values())
    assert steps == len(new) - 1
    assert sorted(tr.root.entries) == sorted(f"Renamed {i}" for i in range(2, 12))


def test_a_publish_resolves_only_its_own_names() -> None:
    tr = Tree()
    tr.replace_all([obj(f"{i:08x}-0000-4000-8000-000000000000", "Box" if i < 3 else f"Object {i}") for i in range(6)])
    assert tr.layout.root_groups is not None  # kept: no name holds "@"
    tr.publish(obj("00000009-0000-4000-8000-000000000000", "Box"))
    assert sorted(tr.root.entries) == ["Box", "Box@00000001", "Box@00000002", "Box@00000009",
                                       "Object 3", "Object 4", "Object 5"]
    tr.publish(obj("0000000a-0000-4000-8000-000000000000", "Box@00000001"))  # could meet a tag: full resolves
    assert tr.layout.root_groups is None
    assert {n: f.uuid for n, f in tr.root.entries.items()} == {n: f.uuid for n, f in full_layout(tr).items()}
