"""The write path: saving, creating, renaming and deleting items, with nothing ever lost.

A remote item belongs to a (folder, name) slot, not to a kernel inode. Editors replace files by
renaming and recreating them (vim, emacs, sed -i, git...); the slot keeps the item so every such
save lands on the same item_id. `rm` leaves a tombstone that a create of the same name within the
grace period adopts; only after it does the delete reach the viewer (after a copy to the trash).
Every failed save leaves the content in the recovery folder and a line in the log and status.

The Writer is the one object the file system and control layers talk to: each of its operations
is one of the services below, each owning its state and locks, built here with its collaborators:

- edits.py     `Edits`: items' edit buffers (`Item.edit`), the size and UTF-8 checks, refusals;
- pending.py   `PendingSaves`: the writes in flight (`pending_saves`, the stop's wait_idle);
- save.py      `Saver`: saves, their per-item locks, conflicts, retries, compile verdicts, the
               recovery folder (unsent.py);
- item_writes.py `ItemWrites`: open/write/truncate/flush of an item's file, `slfs restore`;
- deletes.py   `Deleter`: tombstones (`Folder.tombstones`) and their grace-period deletes;
- create.py    `Creator`: new files not yet in-world (`Folder.new_files`), creates, per-prim locks;
- rename.py    `Renamer`: unlink and rename of items' names, renames in-world;
- shutdown.py  `Shutdown`: what a stop does with texts no flush stored;
- live_writes.py `LiveWriter`: the files of .slfs/live.

The file system layer translates each kernel request into one call here and the answer (or
FsError) into the reply; it never changes the write state itself.

Concurrency (trio): code between two awaits runs atomically. Methods that await say so by being
async; after every await they re-check what they act on, because another request may have run
meanwhile. A save's echo is confirmed by a background fetch (Item.content_current); the next
save's conflict check waits for it.
"""

from __future__ import annotations

from typing import Any

from .. import event_types as ev
from ..local.keep import TRASH, KeptCopies, folder_of
from .create import Creator
from .deletes import Deleter
from .edits import Edits
from .item_writes import ItemWrites
from .live_writes import LiveWriter
from .overlay import Overlay
from .pending import PendingSaves
from .rename import Renamer
from .save import Saver
from .shutdown import Shutdown
from .sources import Sources
from .workspace import Workspace


class Writer:
    """The write services behind one object: each public operation is one of theirs."""

    def __init__(self, ws: Workspace, overlay: Overlay, keeper: KeptCopies, sources: Sources) -> None:
        self.keeper = keeper
        self.sources = sources
        self.pending = PendingSaves()
        self.edits = Edits(ws.tree, ws.content, emit=ws.emit, note_error=ws.note_error)
        self.saver = Saver(keeper, sources, self.edits, self.pending, tree=ws.tree, calls=ws.calls,
                           content=ws.content, history=ws.history, compiles=ws.compiles, options=ws.options,
                           emit=ws.emit, note_error=ws.note_error, mountpoint=ws.mountpoint)
        self.unsent = self.saver.unsent  # the texts not in-world, and `slfs resend`
        self.live = LiveWriter(sources, self.saver.recover, tree=ws.tree, live=ws.live, compiles=ws.compiles,
                               history=ws.history, options=ws.options, emit=ws.emit, note_error=ws.note_error,
                               spawn=ws.spawn, invalidate_live_name=ws.invalidate_live_name)  # the live files' saves
        self.deleter = Deleter(keeper, self.edits, self.pending, tree=ws.tree, calls=ws.calls, content=ws.content,
                               history=ws.history, options=ws.options, emit=ws.emit, note_error=ws.note_error,
                               spawn=ws.spawn)
        self.creator = Creator(self.edits, self.pending, self.saver, self.deleter, self.live, tree=ws.tree,
                               calls=ws.calls, content=ws.content, history=ws.history, options=ws.options,
                               emit=ws.emit)
        self.items = ItemWrites(self.edits, self.saver, tree=ws.tree, content=ws.content)
        self.renamer = Renamer(overlay, self.edits, self.saver, self.creator, self.deleter, tree=ws.tree,
                               calls=ws.calls, content=ws.content)
        self.shutdown = Shutdown(self.saver, self.live, calls=ws.calls, live_scripts=ws.live)

        # An item's file (fs/files.py) and `slfs restore` (control/history_requests.py).
        self.open_item = self.items.open_item
        self.write_item = self.items.write_item
        self.resize_item = self.items.resize_item
        self.commit_item = self.items.commit_item
        self.restore = self.items.restore
        # New files and creates (fs/, control/history_requests.py, control/push.py).
        self.check_can_create = self.creator.check_can_create
        self.new_file = self.creator.new_file
        self.open_memory_file = self.creator.open_memory_file
        self.write_memory_file = self.creator.write_memory_file
        self.resize_memory_file = self.creator.resize_memory_file
        self.set_memory_file_mode = self.creator.set_memory_file_mode
        self.set_mtime = self.creator.set_mtime
        self.commit_new_file = self.creator.commit_new_file
        self.create = self.creator.create
        self.push_create = self.creator.push_create
        # Names (fs/operations.py).
        self.remove = self.renamer.remove
        self.move_to_overlay = self.renamer.move_to_overlay
        self.rename_to_remote = self.renamer.rename_to_remote
        self.rename_folder = self.renamer.rename_folder
        # Saves the control layer asks for (control/scripts.py, control/push.py).
        self.wait_saved = self.saver.wait_saved
        self.push_save = self.saver.push_save
        self.rebuild = self.saver.rebuild
        self.recompile = self.saver.recompile
        self.delete_now = self.deleter.delete_now
        # The daemon's stop (daemon.py).
        self.wait_idle = self.pending.wait_idle
        self.hurry_deletes = self.deleter.hurry_deletes
        self.keep_unsaved = self.shutdown.keep_unsaved
        self._set_buffer = self.edits.set_buffer  # tests end an edit as a program giving up would

    @property
    def pending_saves(self) -> int:
        return self.pending.count

    # Service (model/services.py): the writer's status lines.

    def on_event(self, event: ev.SlfsEvent) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {"pending_saves": self.pending.count,
                "last_recovery": self.keeper.last_recovery or "none",
                "trash": str(folder_of(TRASH)),  # where this daemon keeps deleted items' copies
                "disk_errors": self.keeper.failures}
