"""The hidden `.slfs/` control directory of every folder, and what lives in it.

`.slfs` is never listed (so ls -a, find, grep -r, cp -r and git never see it) but resolves by
explicit path. At the mount root it holds `status`, `stats`, `by-id/`, `diagnostics`, `events`, `log` (runtime
output naming no published object), `syntax/` and `live/` (scripts open in the viewer's editor,
model/live.py); in an object's, `log` (the object's runtime output); in every folder, sidecars per
item file (`F.diag`, `F.inworld`; scripts also `F.state` and `F.log`) and `history/` (fs/history_view.py).
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Awaitable, Callable, Iterator

from ..local.events import EventLog
from ..model.content import Content
from ..model.live import LIVE_DIR_KEY, LiveScript
from ..model.runtime import RuntimeLogs
from ..model.scripts import Scripts
from ..model.syntax import SyntaxFiles
from ..model.workspace import Workspace
from ..protocol.ids import is_uuid
from ..protocol.text import printable
from ..stats import Stats, render
from ..status_text import status_values
from ..world import names
from ..world.fs_errors import FsError
from ..world.tree import ROOT_INODE, Folder, Item, Node, Tree
from .history_view import HistoryView
from .virtual import BYID, DIR, FILE, HISTORY_KINDS, LINK, LIVE, SYNTAX, Virtual, folder_now

OBJECT_LOG = "log"  # MOUNT/.slfs/log and OBJECT/.slfs/log: runtime output no script's F.log holds


class Control:
    def __init__(self, ws: Workspace, content: Content, events: EventLog, runtime_logs: RuntimeLogs,
                 syntax: SyntaxFiles, scripts: Scripts, stats: Stats) -> None:
        self.ws = ws
        self.stats = stats  # the mount's, for `.slfs/stats`
        self.scripts = scripts
        self.tree: Tree = ws.tree
        self.content = content  # `.inworld` sidecars fetch through it
        self.events = events
        self.runtime_logs = runtime_logs  # F.log, OBJECT/.slfs/log, MOUNT/.slfs/log
        self.syntax = syntax
        self.nodes: dict[int, Virtual] = {}
        self.sidecars: dict[str, Callable[[Virtual, str, Item], Virtual | None]] = {
            "diag": self._diag_node,
            "state": self._state_node,
            "log": self._log_node,
            "inworld": self._inworld_node,
        }
        self.root_files: dict[str, Callable[[int], Virtual]] = {
            # Changing files: read past their size as last reported (a status that grew between the
            # kernel's getattr and the open was cut at the old size: a half last line).
            "status": lambda parent: self._file(parent, "status", self._render_status, direct_io=True),
            "stats": lambda parent: self._file(parent, "stats", self._render_stats, direct_io=True),
            "by-id": lambda parent: self._dir(parent, "by-id", BYID),
            "diagnostics": lambda parent: self._file(parent, "diagnostics", self.render_all_diagnostics,
                                                     direct_io=True),
            "events": lambda parent: self._file(parent, "events", self.events.render, direct_io=True),
            "log": lambda parent: self._file(parent, "log", self.runtime_logs.mount_log, direct_io=True),
            "syntax": lambda parent: self._dir(parent, "syntax", SYNTAX),
            "live": lambda parent: self._get(LIVE_DIR_KEY, lambda ino: Virtual(ino, LIVE, "live", parent)),
        }
        self.history = HistoryView(ws.history, self.tree, self._get)

    # --- node construction ---------------------------------------------------------------

    def _get(self, key: str, make: Callable[[int], Virtual]) -> Virtual:
        ino = self.tree.inode_for(key)
        node = self.nodes.get(ino)
        if node is None:
            node = self.nodes[ino] = make(ino)
        return node

    def _file(self, parent: int, name: str, render: Callable[[], bytes], *, direct_io: bool = False,
              writer: Callable[[bytes], Awaitable[None]] | None = None) -> Virtual:
        return self._get(f"ctl:{parent}:{name}", lambda ino: Virtual(
            ino, FILE, name, parent, render=render, writer=writer, direct_io=direct_io))

    def _dir(self, parent: int, name: str, role: str, folder: Folder | None = None) -> Virtual:
        return self._get(f"ctl:{parent}:{name}", lambda ino: Virtual(
            ino, role, name, parent, folder_inode=folder.inode if folder is not None else None))

    def control_dir(self, folder: Folder) -> Virtual:
        return self._dir(folder.inode, names.CONTROL_DIR, DIR, folder)

    def folder_of(self, vdir: Virtual) -> Folder | None:
        """The folder `vdir` belongs to as the tree holds it now; None once it is gone."""
        return folder_now(self.tree, vdir)

    # --- lookups ---------------------------------------------------------------------------

    def lookup(self, vdir: Virtual, name: str) -> Virtual | None:
        return next((v for v in self._children(vdir, only=name)), None)

    def children(self, vdir: Virtual) -> list[Virtual]:
        return list(self._children(vdir, only=None))

    def _children(self, vdir: Virtual, only: str | None) -> Iterator[Virtual]:
        folder = self.folder_of(vdir) if vdir.kind == DIR else None
        if folder is not None:
            if folder.inode == ROOT_INODE:
                for name, make in self.root_files.items():
                    if only is None or only == name:
                        yield make(vdir.inode)
            elif not folder.is_child and only in (None, OBJECT_LOG):
                yield self._object_log(vdir.inode, folder)
            if only in (None, "history"):
                yield self.history.dir_for(vdir)
            for file_name, node in list(folder.entries.items()):
                if not isinstance(node, Item):
                    continue
                for suffix, make_sidecar in self.sidecars.items():
                    full = f"{file_name}.{suffix}"
                    if only is not None and only != full:
                        continue
                    side = make_sidecar(vdir, file_name, node)
                    if side is not None:
                        yield side
        elif vdir.kind == BYID:
            # Only a UUID names a link: an id the viewer sent as `a/b` or `..` never becomes one.
            if only is not None:
                found = self.tree.find(only) if is_uuid(only) else None
                if found is not None:
                    yield self._link(vdir.inode, found)
                return
            for node in list(self.tree.by_uuid.values()):
                if is_uuid(node.uuid):
                    yield self._link(vdir.inode, node)
        elif vdir.kind in HISTORY_KINDS:
            yield from self.history.children(vdir, only)
        elif vdir.kind == SYNTAX:
            yield from self._children_syntax(vdir, only)
        elif vdir.kind == LIVE:
            yield from self._children_live(vdir, only)

    def _children_syntax(self, vdir: Virtual, only: str | None) -> Iterator[Virtual]:
        for name in list(self.syntax.files):
            if only is None or only == name:
                yield self._file(vdir.inode, name, self._syntax_render(name))

    def _children_live(self, vdir: Virtual, only: str | None) -> Iterator[Virtual]:
        """Each live script's file, and its .diag, .state (once the viewer said) and .log."""
        live = self.ws.live
        for name, ls in list(live.entries.items()):
            if only is not None and not only.startswith(name):
                continue
            if not live.exists(ls):
                continue
            if only is None or only == name:
                node = self.nodes.get(ls.inode)
                if node is None or node.live is not ls:
                    node = self.nodes[ls.inode] = Virtual(ls.inode, FILE, name, vdir.inode, live=ls)
                node.rename(name)
                yield node
            sidecars: dict[str, Callable[[], bytes]] = {
                "diag": functools.partial(self.render_live_diagnostics, ls),
                "log": functools.partial(self._live_log, ls),
            }
            if ls.running is not None:
                sidecars["state"] = functools.partial(_live_state, ls)
            for suffix, shows in sidecars.items():
                full = f"{name}.{suffix}"
                if only is None or only == full:
                    side = self._get(f"ctl:live:{ls.script_id}:{suffix}",
                                     functools.partial(_live_sidecar, full, vdir.inode, shows))
                    side.rename(full)  # follows a rename, or a new subscription
                    side.render = shows
                    yield side

    def _live_log(self, ls: LiveScript) -> bytes:
        """Runtime output of its item when the viewer says which (newer viewers), else the log the
        viewer writes beside its temp file (the compile result)."""
        if ls.item_id:
            out = self.runtime_logs.script_log(ls.item_id)
            if out:
                return out
        return self.ws.live.read_log(ls)  # under the temp file's checks (local/live_files.py)

    def render_live_diagnostics(self, ls: LiveScript) -> bytes:
        lines = [f"{d['path']}:{d['row']}:{d['column']}: {d['level']}: {d['message']}"
                 for d in self.ws.live.diagnostics_of(ls)]
        return ("\n".join(lines) + "\n").encode("utf-8", "replace") if lines else b""

    def _syntax_render(self, name: str) -> Callable[[], bytes]:
        return lambda: self.syntax.files.get(name, b"")

    def _link(self, parent: int, node: Node) -> Virtual:
        uuid = node.uuid
        return self._get(f"byid:{uuid}", lambda ino: Virtual(
            ino, LINK, uuid, parent, target=lambda: self._by_id_target(uuid)))

    def _by_id_target(self, uuid: str) -> str | None:
        node = self.tree.find(uuid)
        if node is None or not node.attached:
            return None
        # Relative to MOUNT/.slfs/by-id/.
        return os.path.join("..", "..", self.tree.path_of(node))

    # --- sidecars ---------------------------------------------------------------------------
    # Each sidecar resolves its item by file name when read, so it follows what the name means now.

    def _item_named(self, vdir: Virtual, file_name: str) -> Item:
        folder = self.folder_of(vdir)
        node = folder.entries.get(file_name) if folder is not None else None
        if not isinstance(node, Item):
            raise FsError(errno.ENOENT, f"{file_name} is gone")
        return node

    def _diag_node(self, vdir: Virtual, file_name: str, item: Item) -> Virtual:
        return self._file(vdir.inode, f"{file_name}.diag",
                          lambda: self.render_diagnostics(self._item_named(vdir, file_name)), direct_io=True)

    def _state_node(self, vdir: Virtual, file_name: str, item: Item) -> Virtual | None:
        if not item.is_script:
            return None

        async def write_state(data: bytes) -> None:
            await self.set_state(self._item_named(vdir, file_name), data.decode(errors="replace"))

        return self._file(vdir.inode, f"{file_name}.state",
                          lambda: (self.state_word(self._item_named(vdir, file_name)) + "\n").encode(),
                          direct_io=True, writer=write_state)

    def _inworld_node(self, vdir: Virtual, file_name: str, item: Item) -> Virtual:
        """The text as stored in-world, envelope included (read-only, every item)."""
        def render() -> bytes:
            node = self._item_named(vdir, file_name)
            return node.cache.inworld if node.cache.inworld is not None else node.cache.content or b""

        async def fetch() -> None:
            await self.content.read_content(self._item_named(vdir, file_name))

        node = self._file(vdir.inode, f"{file_name}.inworld", render, direct_io=True)
        node.prepare_with(fetch)
        return node

    def _object_log(self, parent: int, folder: Folder) -> Virtual:
        """`OBJECT/.slfs/log`: the runtime output of every script of the object, and what the viewer
        said the object (or one of its prims) spoke without naming a script of it."""
        return self._file(parent, OBJECT_LOG, lambda: self.runtime_logs.object_log(folder.uuid), direct_io=True)

    def _log_node(self, vdir: Virtual, file_name: str, item: Item) -> Virtual | None:
        if not item.is_script:
            return None
        return self._file(vdir.inode, f"{file_name}.log",
                          lambda: self.runtime_logs.script_log(self._item_named(vdir, file_name).uuid), direct_io=True)

    # The script questions are the model's (model/scripts.py); these name them for the files here.

    def state_word(self, item: Item) -> str:
        return self.scripts.state_word(item)

    async def set_state(self, item: Item, text: str) -> None:
        await self.scripts.set_state(item, text)

    def abspath(self, node: Node) -> str:
        return self.scripts.abspath(node)

    def diagnostics_of(self, item: Item) -> list[dict[str, object]]:
        return self.scripts.diagnostics_of(item)

    def render_diagnostics(self, item: Item) -> bytes:
        lines = [f"{d['path']}:{d['row']}:{d['column']}: {d['level']}: {d['message']}"
                 for d in self.diagnostics_of(item)]
        return ("\n".join(lines) + "\n").encode("utf-8", "replace") if lines else b""

    def render_all_diagnostics(self) -> bytes:
        # Only items compiled this session can have lines: no walk over every item of the mount.
        compiled = list(self.ws.compiles)
        items = [self.tree.find(uuid) for uuid in compiled]
        live = b"".join(self.render_live_diagnostics(ls) for ls in list(self.ws.live.by_id.values()))
        return b"".join(self.render_diagnostics(i) for i in items if isinstance(i, Item) and i.attached) + live

    # --- content ----------------------------------------------------------------------------

    def _render_status(self) -> bytes:
        lines = []
        for key, value in self.ws.status().items():
            for shown in status_values(key, value):
                text = printable(" ".join(shown.split()))  # one line per value, always; names are network text
                lines.append(f"{key}: {text}")
        return ("\n".join(lines) + "\n").encode("utf-8", "replace")  # names are network data

    def _render_stats(self) -> bytes:
        return render(self.stats.snapshot()).encode()


def _live_state(ls: LiveScript) -> bytes:
    return b"running\n" if ls.running else b"stopped\n"


def _live_sidecar(name: str, parent: int, render: Callable[[], bytes], ino: int) -> Virtual:
    return Virtual(ino, FILE, name, parent, render=render, direct_io=True)
