"""The nodes slfs makes up (`.slfs/` and what lives in it), and their kinds.

fs/control_dir.py makes them for each folder's control directory, fs/history_view.py for the history view
under it; the directory backends (fs/dirs.py), the file backends (fs/files.py) and the attributes
(fs/attributes.py) read them. This module imports neither maker, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from ..model.live import LiveScript
from ..world.tree import Folder, Tree

# The kinds of Virtual: a file, a by-id link, and the directories (a folder's control directory,
# by-id/, syntax/, live/ and the history view's four, fs/history_view.py).
FILE, LINK = "file", "link"
DIR = "dir"  # a folder's `.slfs`
BYID = "byid"  # MOUNT/.slfs/by-id
SYNTAX = "syntax"  # MOUNT/.slfs/syntax
LIVE = "live"  # MOUNT/.slfs/live
HIST_ROOT, HIST_DIR, HIST_ITEM, HIST_BY_ID = "histroot", "histdir", "histitem", "histbyid"
HISTORY_KINDS = frozenset((HIST_ROOT, HIST_DIR, HIST_ITEM, HIST_BY_ID))


@attrs.define(eq=False)
class Virtual:
    """A node slfs makes up: a control directory, a status or sidecar file, a by-id link."""

    inode: int
    kind: str
    name: str
    parent_inode: int
    # The inode of the folder whose control directory this belongs to, resolved through the tree
    # at each use: an object removed and published again is a new Folder under the same inode,
    # and a Virtual holding the old one showed none of its files' sidecars (G1 after a reconnect).
    folder_inode: int | None = None
    render: Callable[[], bytes] | None = None
    writer: Callable[[bytes], Awaitable[None]] | None = None
    target: Callable[[], str | None] | None = None
    # Growing files (events, logs) bypass the page cache so tail -f sees new lines.
    direct_io: bool = False
    # Awaited by open() before render(): what the file shows may need a fetch first.
    prepare: Callable[[], Awaitable[None]] | None = None
    # A live file (MOUNT/.slfs/live/NAME): reads, writes and saves go to the model's live script.
    live: LiveScript | None = None
    # A history directory's item_id; a version file's size and mtime (fs/history_view.py); whether
    # the node's attributes never change (the kernel may then cache them for attr_timeout).
    ref: str = ""
    size: int | None = None
    mtime_ns: int | None = None
    steady: bool = False

    # A Virtual is kept per key (Control._get) while what it shows moves: its makers update it
    # through these, so `name` and `prepare` are written here only.

    def rename(self, name: str) -> None:
        """It follows a rename of what it shows (an item, a live script)."""
        self.name = name

    def prepare_with(self, prepare: Callable[[], Awaitable[None]]) -> None:
        """open() awaits `prepare` before render() (a fetch of what it shows)."""
        self.prepare = prepare


def folder_now(tree: Tree, vdir: Virtual) -> Folder | None:
    """The folder `vdir` belongs to as the tree holds it now; None once it is gone."""
    if vdir.folder_inode is None:
        return None
    node = tree.node(vdir.folder_inode)
    return node if isinstance(node, Folder) and node.attached else None
