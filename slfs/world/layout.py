"""Names on disk: each folder's listing worked out from its members' wanted names (names.resolve),
and every name whose meaning changed reported, so the kernel drops what it cached of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from . import names
from .nodes import EntryChanged, Folder, InodeChanged, Invalidation, Node, now_ns


def _groups_apart(plain: str) -> bool:
    """Whether a wanted name keeps its collision group apart from every other (see Layout._index_root):
    no "@", and short enough that a tag never shortens it."""
    return "@" not in plain and (len(plain) * 4 <= _UNSHORTENED
                                 or len(plain.encode("utf-8", "surrogateescape")) <= _UNSHORTENED)


_UNSHORTENED = names.MAX_NAME_BYTES - 34  # names._shorten keeps a base of this many bytes whole
_MAX_LEFT = 4096  # departed objects whose folder name is remembered (Layout.left)

# Relayout a folder (the root: with the objects added, removed or renamed since, or None): Tree.relayout.
Relayout = Callable[[Folder, Iterable[str] | None], None]


class Layout:
    """The listings of the tree's folders (Folder.entries) and the root's collision groups."""

    def __init__(self, root: Folder, objects: dict[str, Folder], on_invalidate: Callable[[Invalidation], None]) -> None:
        self.root = root
        self.objects = objects
        self._on_invalidate = on_invalidate
        # The root's collision groups (see _index_root): wanted name -> UUID -> object folder, the
        # names each group was given, and each object's wanted name as last laid out.
        self.root_groups: dict[str, dict[str, Folder]] | None = {}
        self._root_subs: dict[str, dict[str, Folder]] = {}
        self._root_plain: dict[str, str] = {}
        # The name each object folder was shown under, and the wanted name it was given for: it
        # keeps that name while it stays published under that wanted name (a close or a publish
        # of a namesake renames no folder under a running shell or editor). Names given during a
        # load (`loading`: the viewer's object.list applied in steps) are pinned once it ends: the
        # fresh rule (the lowest UUID takes the plain name) names what a whole load brings.
        self.pinned: dict[str, tuple[str, str]] = {}
        self.loading = False
        # The pins of objects gone (the most recent _MAX_LEFT): one published again (G1 republishes
        # every object after a reconnect, each an unpublish and a publish) takes its name back
        # when no folder holds it meanwhile.
        self.left: dict[str, tuple[str, str]] = {}

    def relayout(self, folder: Folder, changed: Iterable[str] | None = None) -> None:
        """Recompute the folder's file names and report every name whose meaning changed.

        `changed` (the root only): the UUIDs of the only objects added, removed or renamed since
        the last relayout; the others keep their names, and only the collision groups of the names
        those objects had and have are resolved again (see root_groups)."""
        if folder is self.root:
            if changed is not None and self.root_groups is not None:
                self._relayout_root(changed)
                return
            layout = self._sticky(self.objects.values())
            self._index_root(layout)
            if not self.loading:
                pinned = {node.uuid: (name, node.wanted_base)  # type: ignore[attr-defined]
                          for name, node in layout.items()}
                self._leave(uuid for uuid in self.pinned if uuid not in pinned)
                self.pinned = pinned
                if self.left:
                    self.left = {uuid: pin for uuid, pin in self.left.items() if uuid not in pinned}
        else:
            hidden = {id(i) for i in folder.tombstones.values()}
            members = [*(i for i in folder.items.values() if id(i) not in hidden), *folder.prims.values()]
            layout = names.resolve(members)  # type: ignore[arg-type, assignment]
        self._apply_layout(folder, folder.entries, layout, layout.keys() | folder.entries.keys())

    def _sticky(self, members: Iterable[Folder]) -> dict[str, Node]:
        """Object folders' names: each keeps the name it is pinned to (see `pinned`), the others
        are resolved around those (names.resolve: among them, the lowest UUID takes a free plain
        name)."""
        pinned, left = self.pinned, self.left
        kept: dict[str, Node] = {}
        back: list[Folder] = []
        rest: list[Folder] = []
        for folder in members:
            pin = pinned.get(folder.uuid)
            if pin is not None and pin[1] == folder.wanted_base:
                kept[pin[0]] = folder
            else:
                (back if folder.uuid in left else rest).append(folder)
        for folder in back:  # published again: its name back, if free
            pin = left[folder.uuid]
            if pin[1] == folder.wanted_base and pin[0] not in kept:
                kept[pin[0]] = folder
            else:
                rest.append(folder)
        if not kept:
            return names.resolve(rest)  # type: ignore[arg-type, return-value]
        placed: dict[str, Node] = names.resolve(rest, reserved=kept.keys())  # type: ignore[arg-type, assignment]
        return {**kept, **placed}

    def _leave(self, gone: Iterable[str]) -> None:
        """The pins of objects no longer shown move to `left` (the oldest beyond _MAX_LEFT go)."""
        for uuid in list(gone):
            self.left.pop(uuid, None)
            self.left[uuid] = self.pinned.pop(uuid)
        while len(self.left) > _MAX_LEFT:
            del self.left[next(iter(self.left))]

    def _apply_layout(self, folder: Folder, old: dict[str, Node], layout: dict[str, Node],
                      touched: Iterable[str], grown: bool | None = None) -> None:
        """`layout` becomes the folder's listing; `touched`: every name that may mean something else
        now (the names of old and layout that differ are among them)."""
        for name in touched:
            before = old.get(name)
            if before is layout.get(name):
                continue
            # A name that meant nothing before has no dentry to drop (ENOENT is not cached), unless a
            # local file of that name is now shadowed. Invalidating it anyway would race with a
            # program that just looked it up and chdir'd into it (getcwd() then fails).
            if before is None and name not in folder.new_files:
                continue
            self._on_invalidate(EntryChanged(folder.inode, name))
        for name, node in layout.items():
            node.rename(name)
        if old.keys() != layout.keys():
            folder.set_mtime(now_ns())
            self._on_invalidate(InodeChanged(folder.inode, data=False))
        folder.set_entries(layout)

    # The root's collision groups, kept so a publish resolves only the names it touches. Valid while
    # no object's wanted name holds "@" or is long enough to be shortened when tagged: then a tagged
    # name is `<its group's name>@<hex>`, never another group's name, plain or tagged, and each
    # group's names depend on its own members alone (what names.resolve gives the whole root).
    # None: not kept (a full resolve each time).

    def _index_root(self, layout: dict[str, Node]) -> None:
        groups: dict[str, dict[str, Folder]] = {}
        subs: dict[str, dict[str, Folder]] = {}
        plain_of: dict[str, str] = {}
        for name, node in layout.items():
            assert isinstance(node, Folder)
            plain = node.wanted_base
            if not _groups_apart(plain):
                self.root_groups = None
                return
            groups.setdefault(plain, {})[node.uuid] = node
            subs.setdefault(plain, {})[name] = node
            plain_of[node.uuid] = plain
        self.root_groups, self._root_subs, self._root_plain = groups, subs, plain_of

    def _relayout_root(self, changed: Iterable[str]) -> None:
        groups, subs, plain_of = self.root_groups, self._root_subs, self._root_plain
        assert groups is not None
        changed = tuple(changed)
        affected: set[str] = set()
        for uuid in changed:
            before = plain_of.pop(uuid, None)
            if before is not None:
                affected.add(before)
                members = groups[before]
                del members[uuid]
                if not members:
                    del groups[before]
            folder = self.objects.get(uuid)
            if folder is None:
                continue
            plain = folder.wanted_base
            if not _groups_apart(plain):
                self.relayout(self.root)  # a full resolve (which stops keeping the groups)
                return
            affected.add(plain)
            groups.setdefault(plain, {})[uuid] = folder
            plain_of[uuid] = plain
        old = self.root.entries
        layout = dict(old)
        touched: list[str] = []
        for plain in affected:
            before_sub = subs.pop(plain, None)
            if before_sub is not None:
                touched += before_sub
                for name in before_sub:
                    del layout[name]
            group = groups.get(plain)
            if group:
                sub: dict[str, Folder] = self._sticky(group.values())  # type: ignore[assignment]
                subs[plain] = sub
                touched += sub
                layout.update(sub)
                if not self.loading:
                    for name, f in sub.items():
                        self.pinned[f.uuid] = (name, plain)
                        self.left.pop(f.uuid, None)
        if not self.loading:
            self._leave(uuid for uuid in changed if uuid not in self.objects and uuid in self.pinned)
        self._apply_layout(self.root, old, layout, set(touched))
