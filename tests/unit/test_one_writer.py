"""Each mutable field of slfs has one writing module (issue 37): every write to an attribute
(assignment, augmented assignment, annotated assignment, `del`, a `for`/`with` target, setattr and
object.__setattr__ with a constant name) is attributed to the class whose field it is, and no
(class, field) is written from two modules. The checker is field_types.py and field_writes.py.

The class of a write's target is resolved from what the source says, never from the field's name
alone: `self` inside a class, a parameter's or variable's annotation (`item: Item`, through type
aliases), a local bound to a constructor call, a function's or method's return annotation, a
field's own annotation (so `item.cache.content` is Cache.content), the element type of a `for` over
an annotated container, an except clause's class, isinstance narrowing (its else branch too), and
generic descriptors (Folder.items). A union writes each member that has the field. Writes into
values of modules and classes outside slfs (pyfuse3, textual, sys) are not counted. A write whose
target cannot be resolved (no annotation, `Any`, a Protocol whose implementers it cannot name) is
listed in UNRESOLVED with its reason; a new one fails the test, so none is skipped silently.

Initialisation is no write: `self.x = ...` in the class's own `__init__`/`__attrs_post_init__`
(the constructor's keyword arguments are no assignment at all). slfs/sim/ is a separate program
(the simulated viewer) and not walked. A container a field holds changed in place
(`folder.items[k] = v`, `folder.items.pop(k)`) is checked apart, the same way: from one module
each (direct changes only: not through a local alias or a function given the container)."""

from __future__ import annotations

import functools

from .field_writes import Write, multi_writers, slfs_sources, unresolved, writers, writes_of

# (module, target as written) -> why it cannot be attributed to a class. Kept small: each is a
# write through a name the checker cannot type, reviewed by hand.
UNRESOLVED: dict[tuple[str, str], str] = {
    ("slfs.world.nodes", "setattr(folder, self.field, ...)"):
        "_BuiltOnRead.__set__: the descriptor's own store (Folder._items/_prims/_entries); writing "
        "Folder.items/prims/entries, which is counted, is what calls it",
    ("slfs.fs.guarded", "setattr(obj, attr, ...)"):
        "guarded.install wraps every handler method of the fs operations object in place: a method "
        "rebound at start-up, no field",
    ("slfs.fs.guarded", "setattr(unbound, _MAKER, ...)"):
        "guarded marks a handler function with its wrapper maker: a function attribute, no field",
    ("slfs.fs.guarded", "wrapper.__defaults__"):
        "a handler wrapper made by exec'd source (guarded.make): a function attribute, no field",
    **{("slfs.sources.lsl", f"tok.{field}"): "pcpp's lexer tokens (typed Any): pcpp's objects, no slfs class"
       for field in ("type", "value", "source", "lineno")},
}

# (class, field) -> why it has more than one writing module. Aim: empty.
ALLOWED: dict[tuple[str, str], str] = {}


@functools.cache
def _slfs_writes() -> list[Write]:
    return writes_of(slfs_sources())  # walked once for the tests below (about a second)


def _multi(*, in_place: bool) -> dict[tuple[str, str], set[str]]:
    return {k: v for k, v in writers(_slfs_writes(), in_place=in_place).items() if len(v) > 1}


# --- the tests ------------------------------------------------------------------------------


def test_each_field_has_one_writing_module() -> None:
    multi = {k: v for k, v in _multi(in_place=False).items() if k not in ALLOWED}
    assert not multi, "fields written from more than one module:\n" + "\n".join(
        f"  {cls}.{field}: {', '.join(sorted(mods))}" for (cls, field), mods in sorted(multi.items()))


def test_each_container_field_is_changed_in_place_from_one_module() -> None:
    multi = _multi(in_place=True)
    assert not multi, "container fields changed in place from more than one module:\n" + "\n".join(
        f"  {cls}.{field}: {', '.join(sorted(mods))}" for (cls, field), mods in sorted(multi.items()))


def test_a_field_rebound_and_changed_in_place_is_so_in_one_module() -> None:
    """Replacing a container and changing it in place are both writes of the field."""
    both: dict[tuple[str, str], set[str]] = {}
    for in_place in (False, True):
        for key, mods in writers(_slfs_writes(), in_place=in_place).items():
            both.setdefault(key, set()).update(mods)
    multi = {k: v for k, v in both.items() if len(v) > 1 and k not in ALLOWED}
    assert not multi, "fields replaced and changed in place from more than one module:\n" + "\n".join(
        f"  {cls}.{field}: {', '.join(sorted(mods))}" for (cls, field), mods in sorted(multi.items()))


def test_every_write_is_resolved_or_listed() -> None:
    found = unresolved(_slfs_writes())
    assert found == set(UNRESOLVED), (
        f"writes the checker cannot attribute to a class (type the target, or list it in UNRESOLVED with "
        f"why): {sorted(found - set(UNRESOLVED))}; listed but gone: {sorted(set(UNRESOLVED) - found)}")


def test_allow_list_is_needed() -> None:
    multi = _multi(in_place=False)
    assert not set(ALLOWED) - set(multi), f"allowed but written from one module now: {set(ALLOWED) - set(multi)}"


# --- the checker checked, on small synthetic sources ------------------------------------------

NODES = '''
from __future__ import annotations
import attrs

@attrs.define
class Node:
    name: str = ""

@attrs.define
class Cache:
    content: bytes | None = None

@attrs.define
class Item(Node):
    cache: Cache = attrs.Factory(Cache)

@attrs.define
class Folder(Node):
    items: dict[str, Item] = attrs.Factory(dict)
    cache: Cache = attrs.Factory(Cache)

class Virtual:
    def __init__(self, name: str) -> None:
        self.name = name
'''


def _program(**modules: str) -> dict[str, tuple[str, bool]]:
    return {"pkg": ("", True), "pkg.nodes": (NODES, False)} | {f"pkg.{k}": (v, False) for k, v in modules.items()}


def test_checker_finds_a_double_writer() -> None:
    sources = _program(
        a="from .nodes import Item\ndef f(item: Item) -> None:\n    item.name = 'x'\n",
        b="from . import nodes\n"
          "def g(items: list[nodes.Item]) -> None:\n    for it in items:\n        it.name += 'y'\n",
    )
    assert multi_writers(sources) == {("pkg.nodes.Node", "name"): {"pkg.a", "pkg.b"}}


def test_checker_tells_classes_apart_by_type_not_name() -> None:
    sources = _program(
        a="from .nodes import Item\ndef f(item: Item) -> None:\n    item.name = 'x'\n",
        b="from .nodes import Virtual\ndef g() -> None:\n    v = Virtual('a')\n    v.name = 'b'\n",
    )
    assert multi_writers(sources) == {}
    found = writers(writes_of(sources))
    assert found[("pkg.nodes.Node", "name")] == {"pkg.a"}
    assert found[("pkg.nodes.Virtual", "name")] == {"pkg.b"}  # its __init__ is no write


def test_checker_follows_fields_narrowing_and_setattr() -> None:
    sources = _program(
        a="from .nodes import Item, Node\n"
          "def f(node: Node) -> None:\n"
          "    if isinstance(node, Item):\n"
          "        node.cache.content = b''\n",
        b="from .nodes import Item, Node\n"
          "def g(node: Node | None) -> None:\n"
          "    assert isinstance(node, Item)\n"
          "    setattr(node.cache, 'content', None)\n",
        c="def h(x):\n    x.content = 1\n",
    )
    assert multi_writers(sources) == {("pkg.nodes.Cache", "content"): {"pkg.a", "pkg.b"}}
    assert unresolved(writes_of(sources)) == {("pkg.c", "x.content")}


def test_checker_resolves_aliases_and_leaves_unknowns_and_protocols_unresolved() -> None:
    sources = _program(
        kinds="from .nodes import Item, Virtual\nShown = Item | Virtual\n",
        a="from .kinds import Shown\ndef f(node: Shown) -> None:\n    node.name = 'x'\n",
        b="from .kinds import Unknown\ndef g(node: Unknown) -> None:\n    node.name = 'y'\n",
        c="from typing import Protocol\nclass Named(Protocol):\n    name: str\n"
          "def h(node: Named) -> None:\n    node.name = 'z'\n",
    )
    found = writers(writes_of(sources))
    assert found[("pkg.nodes.Node", "name")] == found[("pkg.nodes.Virtual", "name")] == {"pkg.a"}
    assert unresolved(writes_of(sources)) == {("pkg.b", "node.name"), ("pkg.c", "node.name")}


def test_checker_tells_in_place_changes_from_rebinding() -> None:
    sources = _program(
        a="from .nodes import Folder\ndef f(folder: Folder) -> None:\n    folder.items['x'] = 1\n",
        b="from .nodes import Folder\ndef g(folder: Folder) -> None:\n    folder.items.pop('x')\n"
          "    del folder.items['y']\n",
        c="from .nodes import Folder\ndef h(folder: Folder) -> None:\n    folder.items = {}\n"
          "    folder.cache.update()\n",  # Cache's own method, no container's
    )
    assert multi_writers(sources, in_place=True) == {("pkg.nodes.Folder", "items"): {"pkg.a", "pkg.b"}}
    assert writers(writes_of(sources)) == {("pkg.nodes.Folder", "items"): {"pkg.c"}}


def test_checker_narrows_the_else_of_isinstance() -> None:
    sources = _program(
        a="from .nodes import Cache, Item, Virtual\n"
          "def f(node: Item | Virtual, c: Cache) -> None:\n"
          "    if isinstance(node, Item):\n"
          "        node.cache = c\n"
          "    else:\n"
          "        node.name = 'x'\n",
        b="from .nodes import Item\ndef g(item: Item) -> None:\n    item.name = 'y'\n",
    )
    found = writers(writes_of(sources))
    assert found[("pkg.nodes.Virtual", "name")] == {"pkg.a"}
    assert found[("pkg.nodes.Node", "name")] == {"pkg.b"}
    assert multi_writers(sources) == {}
