"""What the control files and the control socket ask of a script: its confirmed run state, a run,
stop or reset request, and its diagnostics as paths in the mount (for vim -q and slfs diag)."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from .. import event_types as ev
from ..protocol.types import ScriptResetParams, SetRunningParams
from ..world.fs_errors import FsError
from ..world.tree import Item, Node, Tree
from .calls import Calls
from .compiles import CompileReports, diagnostic_rows

STATE_WORDS = ("run", "stop", "reset")


class Scripts:
    def __init__(self, calls: Calls, *, tree: Tree, compiles: CompileReports, emit: Callable[[ev.SlfsEvent], None],
                 note_error: Callable[[str], None], mountpoint: str) -> None:
        self.calls = calls
        self.tree = tree
        self.compiles = compiles
        self.emit = emit
        self.note_error = note_error
        self.mountpoint = mountpoint

    @staticmethod
    def state_word(item: Item) -> str:
        """The run state the viewer last confirmed (object.update), never an optimistic guess."""
        return item.run_state

    async def set_state(self, item: Item, text: str) -> None:
        word = text.strip()
        if word not in STATE_WORDS:
            raise FsError(errno.EINVAL, f"{self.tree.path_of(item)}.state: write run, stop or reset (not {word!r})")
        assert item.folder is not None
        what = f"{word} {self.tree.path_of(item)}"
        try:
            if word == "reset":
                reset = ScriptResetParams(prim_id=item.folder.uuid, item_id=item.uuid)
                await self.calls.call(what, "object.script.reset", reset)
            else:
                running = SetRunningParams(prim_id=item.folder.uuid, item_id=item.uuid, running=word == "run")
                await self.calls.call(what, "object.script.set_running", running)
        except FsError as exc:
            self.note_error(exc.message)  # the writer of F.state sees only an errno
            raise
        self.emit(ev.ScriptStateRequested(path=self.tree.path_of(item), item_id=item.uuid, action=word))

    def abspath(self, node: Node) -> str:
        return os.path.join(self.mountpoint or "/", self.tree.path_of(node))

    def diagnostics_of(self, item: Item) -> list[dict[str, object]]:
        report = self.compiles.get(item.uuid)
        if report is None:
            return []
        return diagnostic_rows(report, self.abspath(item))
