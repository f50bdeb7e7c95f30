"""The nodes of the tree: folders (objects and prims), items, files kept in memory and overlay
files, each with its inode; and the changes the tree reports about them.

An item's state is in parts with one owner each: `record` (the tree), `cache` (model/content.py,
and the viewer's word that the text changed through Cache.changed_in_world), `edit` (model/edits.py)
and `echo` (world/echo.py). Kernel lookup counts are the file system layer's.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar, Union, overload

import attrs

from ..protocol.types import InventoryItem, Permissions, PublishedObject
from . import names
from .echo import Echo
from .places import Place

if TYPE_CHECKING:  # a type only: the nodes are pure state, trio is the writer's
    import trio

ROOT_INODE = 1
T = TypeVar("T")


@attrs.frozen
class EntryChanged:
    """The name `name` in folder `parent` now means something else (or nothing)."""

    parent: int
    name: str


@attrs.frozen
class InodeChanged:
    """The attributes or content of `inode` changed; `data` says whether cached pages are stale."""

    inode: int
    data: bool = True


@attrs.frozen
class StatChanged:
    """What stat shows of `inode` may have changed where the kernel needs no telling (it never
    cached it: a first fetch makes a size known): for the file system layer's own caches only."""

    inode: int


Invalidation = Union[EntryChanged, InodeChanged, StatChanged]




def now_ns() -> int:
    return time.time_ns()


# A new node's mtime is its ctime: one clock read per node (100,000 items come in one object.list).
_AS_CTIME = attrs.Factory(lambda self: self.ctime_ns, takes_self=True)


def describe_perms(p: Permissions | None) -> str:
    """`owner=0x... next_owner=0x...`; a mask the viewer has not sent yet is `unknown`."""
    if p is None:
        return "unknown"
    next_owner = f"0x{p.next_owner:08x}" if p.next_owner is not None else "unknown"
    return f"owner=0x{p.owner:08x} next_owner={next_owner}"


@attrs.define(eq=False)
class Node:
    inode: int
    uuid: str
    name: str = ""
    parent: Folder | None = None
    ctime_ns: int = attrs.field(factory=now_ns)

    @property
    def attached(self) -> bool:
        return self.parent is not None or self.inode == ROOT_INODE

    # `name` and `parent` are written here only: the tree's layout names its nodes, the writer its
    # new files, the overlay its files; the tree's registry detaches.

    def rename(self, name: str) -> None:
        """Its name in its folder is `name` now."""
        self.name = name

    def move(self, parent: Folder | None) -> None:
        """It is in `parent` now; None: it left the tree."""
        self.parent = parent


@attrs.define(eq=False)
class Cache:
    """What is known of an item's content: model/content.py alone says it (hold, stale, and the
    fields it sets itself); the tree says only that the viewer changed it (changed_in_world)."""

    # Content as bytes once fetched. `content_valid` is False when the viewer may have changed it
    # since (an inventory replacement): the old bytes stay for comparison and offline reads.
    content: bytes | None = None
    content_valid: bool = False
    # Bumped each time an inventory replacement may have changed this item's content: a fetch that
    # started before it is not current.
    generation: int = 0
    # The item's `revision` (newer viewers) the cached content is of; None when unknown.
    content_revision: int | None = None
    # Notecards: how many inventory items the viewer says it embeds (None until fetched). Saving its
    # text would lose them, so such a notecard is read-only.
    embedded_items: int | None = None
    # Scripts kept in an envelope (the preprocessor's): the text as stored in-world, while
    # `content` holds the source inside it. None when the file shows the in-world text as it is.
    inworld: bytes | None = None
    # A build of ours: where each in-world row came from (source file and row; None for the
    # envelope's rows), while `inworld` is that build. Maps the viewer's own compiles of it too.
    inworld_places: tuple[Place | None, ...] | None = None

    def hold(self, content: bytes, inworld: bytes | None, *, valid: bool, revision: int | None) -> None:
        """The content is `content` (of `revision`; `valid`: as the viewer holds it), and `inworld`
        the text as stored in-world when that differs."""
        self.content = content
        self.inworld = inworld
        self.content_valid = valid
        self.content_revision = revision

    def stale(self) -> None:
        """What the viewer holds may differ from what is known: a fetch begun before is not current."""
        self.content_valid = False
        self.generation += 1

    def changed_in_world(self) -> bool:
        """The viewer's word that the text may have changed: a fetch begun before it is not current
        and a read fetches again. True when a text held as valid went stale."""
        self.generation += 1
        if self.content is not None and self.content_valid:
            self.content_valid = False
            return True
        return False


@attrs.define(eq=False)
class Edit:
    """An item's edit buffer (model/edits.py alone writes these): edits not yet stored in-world, shared
    by every open handle as on a local disk, and the content they started from (a save whose base
    differs from the viewer's is a conflict), with the revision that base was read at."""

    buffer: bytearray | None = None
    base: bytes | None = None
    base_revision: int | None = None
    dirty: bool = False
    # The item's mtime when the buffer was made: a save that finds nothing to send (the text is
    # in-world already) gives it back, so mtime moves only when the content does.
    mtime_before: int | None = None


@attrs.define(eq=False)
class Item(Node):
    # The inventory record (the tree writes it, and a rename the viewer answered).
    record: InventoryItem | None = None
    folder: Folder | None = None
    mtime_ns: int = attrs.field(default=_AS_CTIME)
    cache: Cache = attrs.field(factory=Cache)
    edit: Edit = attrs.field(factory=Edit)
    echo: Echo = attrs.field(factory=Echo)
    # (record, wanted_base) for the `record` it was worked out from.
    _wanted_names: tuple[InventoryItem | None, str] | None = attrs.field(default=None, init=False, repr=False)
    # (record, readable) for the `record` it was worked out from: every warm open asks.
    _readable: tuple[InventoryItem | None, bool] | None = attrs.field(default=None, init=False, repr=False)

    @property
    def info(self) -> InventoryItem:
        assert self.record is not None
        return self.record

    @property
    def is_script(self) -> bool:
        return self.info.type == "script"

    @property
    def run_state(self) -> str:
        """A script's run state as the viewer last confirmed it (object.update): faulted (stopped
        by a run-time error), running or stopped; never an optimistic guess."""
        info = self.info
        if info.faulted:
            return "faulted"
        return "running" if info.running else "stopped"

    @property
    def perms(self) -> Permissions | None:
        return self.info.permissions

    @property
    def readable(self) -> bool:
        """Scripts need COPY and MODIFY to be read; notecards are always readable."""
        cached = self._readable
        if cached is not None and cached[0] is self.record:
            return cached[1]
        p = self.perms
        readable = not self.is_script or p is None or (p.can_copy and p.can_modify)
        self._readable = (self.record, readable)
        return readable

    @property
    def writable(self) -> bool:
        """Modify permission on the item and its prim (rename and delete need no more)."""
        p = self.perms
        own = p is None or p.can_modify
        return own and (self.folder is None or self.folder.writable)

    @property
    def saveable(self) -> bool:
        """Its text can be saved: writable, and not a notecard holding embedded items."""
        return self.writable and not self.cache.embedded_items

    def save_refusal(self) -> str | None:
        """Why the text cannot be saved, for the errno's log and status line; None when it can."""
        if not self.writable:
            return "no modify permission"
        if self.cache.embedded_items:
            return f"holds {self.cache.embedded_items} embedded items; edit it in the viewer"
        return None

    def take_base(self, data: bytes | None) -> None:
        """Local edits start from `data`, the content known now."""
        self.edit.base = data
        self.edit.base_revision = self.cache.content_revision

    @property
    def content_current(self) -> bool:
        """The cached content is known to be what the viewer holds now. Valid but not current is
        our own save's content after its echo, until a fetch confirms it (newer viewers: at the
        revision the echo brought; Inventories._content_may_have_changed)."""
        if not self.cache.content_valid or self.cache.content is None or self.echo.unconfirmed:
            return False
        now, known = self.info.revision, self.cache.content_revision
        return now is None or known is None or known == now

    def fetched_at(self, shown: bytes, revision: int | None) -> None:
        """A fetch at `revision` returned `shown`: when that is the base, the base is known there
        too (a save over it loses nothing in-world), so our own save's echo is no conflict."""
        if revision is not None and self.edit.base is not None and self.edit.base == shown:
            self.edit.base_revision = max(self.edit.base_revision or revision, revision)

    @property
    def size(self) -> int | None:
        """Exact size when the content is known and current, else None."""
        if self.edit.buffer is not None:
            return len(self.edit.buffer)
        if self.cache.content is not None and self.cache.content_valid:
            return len(self.cache.content)
        if not self.readable:
            return 0
        return None

    # names.Named: worked out once per inventory record (a relayout asks every member again)
    @property
    def wanted_base(self) -> str:
        cached = self._wanted_names
        if cached is None or cached[0] is not self.record:
            info = self.info
            cached = self._wanted_names = (self.record, names.to_fs(info.name))
        return cached[1]

    @property
    def wanted_ext(self) -> str:
        info = self.info
        return names.extension_for(info.type, info.subtype)

    @property
    def always_tagged(self) -> bool:
        return False


class LiveState(enum.Enum):
    """A new file of MOUNT/.slfs/live (model/live_writes.py), never created in-world."""

    NAMED = "named"  # it has its name there
    EXPIRED = "expired"  # kept in the recovery folder; its name went


@attrs.define(eq=False)
class MemoryFile(Node):
    """A file that lives only in memory: a NewFile or an Orphan."""

    data: bytearray = attrs.field(factory=bytearray)
    mode: int = 0o644
    mtime_ns: int = attrs.field(default=_AS_CTIME)
    dirty: bool = False

    # `dirty` is written here only, by the writer's new files and those of .slfs/live alike.

    def changed(self) -> None:
        """Written or truncated: what it holds is to be saved."""
        self.dirty = True

    def settled(self) -> None:
        """Nothing it holds is left to save (sent, kept in the recovery folder, or refused)."""
        self.dirty = False


@attrs.define(eq=False)
class NewFile(MemoryFile):
    """A file created in the mount, not yet in-world (pending), or a temp file of .slfs/live."""

    # The folder it was created in, while it waits under its name there; None once it left it.
    folder: Folder | None = None
    # Set while its object.item.create is in flight; a second flush waits for it.
    creating: trio.Event | None = None
    # Its path, once its create failed and its name is gone: what is written later is not saved.
    failed: str = ""
    # A temp file of .slfs/live: whether it still has its name there; None for other new files.
    live: LiveState | None = None

    @property
    def attached(self) -> bool:
        return self.parent is not None or self.live is LiveState.NAMED

    def give_up(self, shown: str, *, dirty: bool) -> None:
        """Its create failed, or (a temp file of .slfs/live) it was not renamed in time: its name is
        gone and what is written later is not saved; `shown` is its path, `dirty` whether it holds
        something not saved yet."""
        self.failed = shown
        self.dirty = dirty


@attrs.define(eq=False)
class Orphan(MemoryFile):
    """The inode of an item file replaced or unlinked while open, keeping its last data: open
    handles on it keep working, but its data never reaches the viewer."""

    @property
    def attached(self) -> bool:
        return self.parent is not None


@attrs.define(eq=False)
class OverlayNode(Node):
    """A file, directory or symlink of the local overlay, kept on disk at `path`."""

    path: str = ""
    overlay_parent: Node | None = None  # the folder or overlay directory it lives in
    # user.sl.* attributes set on it (rsync -aX's temporary file), checked at its rename onto an
    # item (model/attribute_writes.py); in memory only.
    sl_attributes: dict[str, bytes] = attrs.field(factory=dict)


class _BuiltOnRead(Generic[T]):
    """A folder's member map (items, prims, listing): read, it builds the folder first when the
    tree has not built it yet (Folder.expander); set, it is replaced as it is."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = "_" + name

    @overload
    def __get__(self, folder: None, owner: type) -> _BuiltOnRead[T]: ...
    @overload
    def __get__(self, folder: Folder, owner: type) -> T: ...

    def __get__(self, folder: Folder | None, owner: type) -> T | _BuiltOnRead[T]:
        if folder is None:
            return self
        if folder.expander is not None:
            folder.expander(folder)
        return getattr(folder, self.field)  # type: ignore[no-any-return]

    def __set__(self, folder: Folder, value: T) -> None:
        setattr(folder, self.field, value)


@attrs.define(eq=False)
class Folder(Node):
    """The mount root, an object (its root prim) or a child prim."""

    object_id: str = ""
    link_name: str = ""
    description: str = ""
    link_number: int = 1
    permissions: Permissions | None = None
    owner_id: str = ""  # object folders; newer viewers send it later (see Tree.update)
    can_save_back: bool | None = None
    is_child: bool = False
    published: PublishedObject | None = None  # for object folders: the last full record
    _items: dict[str, Item] = attrs.field(factory=dict)
    _prims: dict[str, Folder] = attrs.field(factory=dict)  # child prims of an object folder
    _entries: dict[str, Node] = attrs.field(factory=dict)  # file name -> node, as listed
    # An object folder whose inventory and prims the tree has not built yet (ObjectRecords.build): the
    # first read of its items, prims or listing builds them. Its link count meanwhile is from the
    # listing (`listed_prims`).
    expander: Callable[[Folder], None] | None = attrs.field(default=None, repr=False)
    listed_prims: int = 0
    listed: bool = False
    mtime_ns: int = attrs.field(default=_AS_CTIME)
    # Write path: new files not yet in-world, under their names.
    new_files: dict[str, NewFile] = attrs.field(factory=dict)
    # name -> item: unlinked (the delete waits for the grace period) or renamed to a backup name.
    tombstones: dict[str, Item] = attrs.field(factory=dict)
    # (link_name, is_child, wanted_base) for the link name it was worked out from.
    _wanted_name: tuple[str, bool, str] | None = attrs.field(default=None, init=False, repr=False)

    # Each reads the field of its name with a leading "_", building the folder first if need be.
    items = _BuiltOnRead[dict[str, "Item"]]()
    prims = _BuiltOnRead[dict[str, "Folder"]]()
    entries = _BuiltOnRead[dict[str, Node]]()

    @property
    def built(self) -> bool:
        """Whether its items and prims are built (a folder of an object listed but not read yet is not)."""
        return self.expander is None

    # The tree's layout, its listings (world/listed.py) and the writer's utimens go through these:
    # `entries`, `expander` and `mtime_ns` are written here only.

    def expand_with(self, expander: Callable[[Folder], None] | None) -> None:
        """The first read of its members calls `expander` to build them; None: they are built."""
        self.expander = expander

    def set_entries(self, entries: dict[str, Node]) -> None:
        """Its listing is `entries` now (file name -> node)."""
        self.entries = entries

    def set_mtime(self, mtime_ns: int) -> None:
        self.mtime_ns = mtime_ns

    # Its maps of members change here only too (release() empties them).

    def add_item(self, item: Item) -> None:
        self.items[item.uuid] = item

    def add_prim(self, child: Folder) -> None:
        self.prims[child.uuid] = child

    def pop_prim(self, link_id: str) -> Folder:
        return self.prims.pop(link_id)

    def add_new_file(self, name: str, scratch: NewFile) -> None:
        self.new_files[name] = scratch

    def drop_new_file(self, name: str, scratch: NewFile) -> bool:
        """`scratch` leaves its new files if it is still the one named `name`; whether it was."""
        if self.new_files.get(name) is not scratch:
            return False
        del self.new_files[name]
        return True

    def bury(self, name: str, item: Item) -> None:
        """`item`'s name leaves the listing (an unlink or a rename away waiting for its grace)."""
        self.tombstones[name] = item

    def unbury(self, name: str, item: Item | None = None) -> Item | None:
        """The item tombstoned under `name` (only if it is `item`, when given), taken out."""
        found = self.tombstones.get(name)
        if found is None or (item is not None and found is not item):
            return None
        del self.tombstones[name]
        return found

    @property
    def prim_count(self) -> int:
        """How many child prims it has, without building them."""
        return len(self._prims) if self.expander is None else self.listed_prims

    def built_members(self) -> list[Node]:
        """Its items and prims as built so far, building none (an unbuilt folder has none)."""
        return [*self._items.values(), *self._prims.values()]

    @property
    def writable(self) -> bool:
        return self.permissions is None or self.permissions.can_modify

    @property
    def object_folder(self) -> Folder:
        return self.parent if self.is_child and self.parent is not None else self

    # names.Named
    @property
    def wanted_base(self) -> str:
        cached = self._wanted_name
        if cached is None or cached[0] != self.link_name or cached[1] != self.is_child:
            base = names.to_fs(self.link_name) or ("prim" if self.is_child else "object")
            cached = self._wanted_name = (self.link_name, self.is_child, base)
        return cached[2]

    @property
    def wanted_ext(self) -> str:
        return ""

    @property
    def always_tagged(self) -> bool:
        return self.is_child


def release(node: Node) -> None:
    """A detached node the kernel no longer knows lets go of its children: a folder and its items
    point at each other, and the tree after a large load is frozen out of the cycle collector's
    reach (slfs/gcpause.py), so such a cycle would never be freed. Reference counting frees it
    now. (The kernel forgets a folder only after everything in it, and the workspace's queues check
    `attached` before they use a node.)"""
    if isinstance(node, Folder):
        node.expander = None
        node.items = {}
        node.prims = {}
        node.entries = {}
        node.new_files = {}
        node.tombstones = {}
