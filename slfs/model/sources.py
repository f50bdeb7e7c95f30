"""Scripts as sources: what the mount shows of a script kept in an envelope, and the build that
goes in-world when a source uses the preprocessor.

A script whose in-world text is an envelope (Firestorm's, Alchemy's) is shown as the source inside
it; `Item.inworld` keeps the text as stored. A source is built (expanded, then wrapped in a new
envelope) when the item was already shown through its envelope or when the source uses the
preprocessor: an LSL directive line, or a Luau `require` that resolves. `//fspreprocessor off`
turns that off for a script (Firestorm's switch).

Includes are found through the model, never through the mount (that would deadlock): the including
file's folder as the mount shows it (the prim's items under their file names, then its local
overlay files), then the `include` directories. The expansion runs in a worker thread; it asks
for each include through `trio.from_thread.run`, so an item not fetched yet is fetched as for a read.
The thread cannot be stopped from outside: the expansions stop themselves at their limits
(`slfs.sources.LimitExceeded`, EFBIG here), so no save leaves a thread spinning.

The in-world text names files (`__FILE__`, Luau's `-- @line` markers) by their path relative to
the mount or to their include directory: other residents read it, and a local absolute path would
tell them the user's home and login name.
"""

from __future__ import annotations

import datetime
import errno
import logging
import os
import posixpath
import time
from collections.abc import Callable
from typing import Any

import attrs
import trio

from .. import __version__, paths
from ..protocol.types import Diagnostic
from ..session.listener import SessionInfo
from ..sources import (
    INCLUDE_LIMIT,
    INWORLD_LIMIT,
    AgentMacros,
    Expansion,
    LimitExceeded,
    PreprocessError,
    Source,
    detect,
    envelope,
)
from ..world.fs_errors import FsError
from ..world.places import Place
from ..world.tree import Folder, Item, Tree
from .compiles import CompileReport, CompileReports
from .content import Content
from .options import Options
from .overlay import Overlay

log = logging.getLogger(__name__)

SCRIPT_LIMIT = INWORLD_LIMIT  # bytes of a script asset, envelope included
PROGRAM = f"slfs {__version__}"


@attrs.frozen
class Build:
    """A source made ready for in-world: the text to store, its expansion, and the in-world row
    where the expansion starts (diagnostics count rows of the in-world text)."""

    inworld: str
    expansion: Expansion
    expansion_row: int

    def place_of(self, row: int) -> Place | None:
        origin = self.expansion.origin_of(row - self.expansion_row + 1)
        return Place(origin.path, origin.row) if origin is not None else None

    def places(self) -> tuple[Place | None, ...]:
        """The place of every in-world row."""
        return tuple(self.place_of(row) for row in range(1, self.inworld.count("\n") + 2))


class Sources:
    def __init__(self, overlay: Overlay, content: Content, *, tree: Tree, options: Options, compiles: CompileReports,
                 session_info: Callable[[], SessionInfo | None], mountpoint: str) -> None:
        self.tree = tree
        self.overlay = overlay
        self.content = content  # includes are read through it
        self.options = options
        self.compiles = compiles
        self.session_info = session_info  # the agent's id and name, for the preprocessor's macros
        self.mountpoint = mountpoint

    # --- where includes come from --------------------------------------------------------

    def include_dirs(self) -> list[str]:
        if self.options.include is not None:
            return list(self.options.include)
        default = paths.data_dir() / "include"
        return [str(default)] if default.is_dir() else []

    def abspath(self, tree_path: str) -> str:
        return posixpath.join(self.mountpoint or "/", tree_path)

    def _tree_path(self, abspath: str) -> str | None:
        """The tree path of a mount path, None for a local path."""
        mnt = (self.mountpoint or "/").rstrip("/") + "/"
        return abspath[len(mnt):] if abspath.startswith(mnt) else None

    def _folder_of(self, tree_path: str) -> Folder | None:
        """The folder shown at `tree_path`'s parent directory."""
        node: Any = self.tree.root
        for part in filter(None, posixpath.dirname(tree_path).split("/")):
            node = node.entries.get(part) if isinstance(node, Folder) else None
            if not isinstance(node, Folder):
                return None
        return node if isinstance(node, Folder) else None

    def inworld_name(self, path: str) -> str:
        """How the in-world text names the file at `path` (a mount path or an include directory's
        file): relative to the mount or to the include directory, else its last component."""
        tree_path = self._tree_path(path)
        if tree_path is not None:
            return tree_path or posixpath.basename(path)
        for directory in self.include_dirs():
            if _within(path, directory):
                relative = os.path.relpath(os.path.abspath(path), os.path.abspath(directory))
                if not relative.startswith(".."):
                    return relative
        return posixpath.basename(path)

    def searched(self, name: str, including: str, angle: bool) -> list[str]:
        places = [] if angle else [posixpath.dirname(including)]
        return places + self.include_dirs()

    async def find(self, name: str, including: str, angle: bool, local_root: str | None = None) -> Source | None:
        found = await self._find(name, including, angle, local_root)
        if found is None:
            return None
        if local_root is not None and _within(found.path, local_root):
            # A pushed tree's file (slfs push): named relative to the tree, never by its local path.
            relative = os.path.relpath(os.path.realpath(found.path), os.path.realpath(local_root))
            return attrs.evolve(found, shown=relative)
        return attrs.evolve(found, shown=self.inworld_name(found.path))

    async def _find(self, name: str, including: str, angle: bool, local_root: str | None = None) -> Source | None:
        # The source may be a peer's (an enveloped script the viewer sent): an include never
        # reaches outside the places the search order names, so no other file of the user's can
        # end up in-world through one. Absolute names and names that climb out are not found.
        if os.path.isabs(name) or "\0" in name:
            return None
        if not angle:
            tree_path = self._tree_path(including)
            if tree_path is not None:
                folder = self._folder_of(tree_path)
                found = await self._in_folder(folder, name) if folder is not None else None
            else:
                root = self._include_root_of(including)
                if root is None and local_root is not None and _within(including, local_root):
                    root = local_root  # slfs push: a source tree's quoted includes stay inside it
                found = await _local(posixpath.join(posixpath.dirname(including), name), root) if root else None
            if found is not None:
                return found
        for directory in self.include_dirs():
            found = await _local(os.path.join(directory, name), directory)
            if found is not None:
                return found
        return None

    def _include_root_of(self, path: str) -> str | None:
        """The include directory a local include file lives in (its quoted includes stay there)."""
        for directory in self.include_dirs():
            if _within(path, directory):
                return directory
        return None

    async def _in_folder(self, folder: Folder, name: str) -> Source | None:
        """`name` (maybe with subdirectories) under a prim's folder: its items and child prims as
        the mount names them, then its local overlay."""
        parts = [p for p in name.split("/") if p not in ("", ".")]
        node: Folder = folder
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if part == "..":
                if node.parent is None or node.parent is self.tree.root:
                    return None  # never out of the object: another object's scripts are not this one's to copy
                node = node.parent
                continue
            child = node.entries.get(part)
            if last and isinstance(child, Item):
                text = (await self.content.read_content(child)).decode("utf-8", "replace")
                return Source(path=self.abspath(self.tree.path_of(child)), text=text, key=child.uuid)
            if not last and isinstance(child, Folder):
                node = child
                continue
            base = self.overlay.dir_of(node)
            if base is None:
                return None
            rest = "/".join(parts[i:])
            local = await _local(os.path.join(base, rest), base)
            if local is None:
                return None
            shown = self.abspath(posixpath.join(self.tree.path_of(node), rest))
            return Source(path=shown, text=local.text, key=local.path, oversize=local.oversize)
        return None

    # --- building ------------------------------------------------------------------------

    def wants_build(self, item: Item, source: str) -> bool:
        """Whether a source written to `item` goes in-world as envelope + expansion (Luau: when
        its requires resolve, decided while expanding)."""
        if not item.is_script:
            return False
        return wants_build(source, luau=item.info.is_luau, enveloped=item.cache.inworld is not None)

    async def build(self, item: Item, source: str, tree_path: str) -> Build | None:
        """The in-world text for `source`, or None when it is saved verbatim. A source that cannot
        be built records its diagnostic (F.diag) and raises FsError (EIO, or EFBIG when too big)."""
        if not self.wants_build(item, source):
            return None
        try:
            return await self.build_text(source, self.abspath(tree_path), luau=item.info.is_luau,
                                         enveloped=item.cache.inworld is not None, vm=item.info.vm or self.options.vm)
        except BuildFailed as exc:
            self.compiles.record(item, exc.report, tree_path)
            raise exc.error from None

    async def build_pushed(self, item: Item, source: str, tree_path: str, main: str | None,
                           local_root: str | None) -> Build | None:
        """`build` for a pushed source: the local file `main` of the tree `local_root` (slfs push);
        its diagnostics name the local files."""
        if main is None or local_root is None:
            return await self.build(item, source, tree_path)
        try:
            return await self.build_text(source, main, luau=item.info.is_luau, enveloped=item.cache.inworld is not None,
                                         vm=item.info.vm or self.options.vm, local_root=local_root)
        except BuildFailed as exc:
            self.compiles.record(item, exc.report, tree_path)
            raise exc.error from None

    async def build_text(self, source: str, main: str, *, luau: bool, enveloped: bool, vm: str,
                         search_dir: str | None = None, local_root: str | None = None) -> Build | None:
        """Expand `source` (the file at the absolute path `main`; its quoted includes are searched
        from `search_dir`, by default main's folder) and wrap it. None when a Luau source has no
        require that resolves and no envelope yet. Raises BuildFailed. `local_root`: a local source
        tree `main` is in (slfs push), whose files quoted includes find, never outside it."""
        size = len(source.encode("utf-8"))
        if size > SCRIPT_LIMIT:  # the envelope holds the source: too big before any expansion
            message = f"the source is {size} bytes; scripts hold at most {SCRIPT_LIMIT} bytes (the in-world limit)"
            raise BuildFailed(_failure(Place(main, 1), 1, message),
                              FsError(errno.EFBIG, f"{main}: source of {size} bytes exceeds {SCRIPT_LIMIT}"))
        token = trio.lowlevel.current_trio_token()
        resolver = _ThreadResolver(self, token, main, search_dir, local_root)
        name = self.inworld_name(main)
        if local_root is not None and _within(main, local_root):
            name = os.path.relpath(os.path.realpath(main), os.path.realpath(local_root))
        info = self.session_info()
        macros = AgentMacros(agent_id=info.agent_id, agent_name=info.agent_name) if info else AgentMacros()
        now = datetime.datetime.now(datetime.UTC)

        def expand() -> Expansion | None:
            if luau:
                from ..sources import luau as luau_sources
                if not enveloped and not luau_sources.resolvable_requires(source, main, resolver):
                    return None
                return luau_sources.expand_luau(source, main, resolver, name=name)
            from ..sources.lsl import expand_lsl
            return expand_lsl(source, main, resolver, macros=macros, lazy_lists=self.options.lazy_lists,
                              switch=self.options.switch, now=now, name=name)

        try:
            expansion = await trio.to_thread.run_sync(expand)
        except LimitExceeded as exc:
            log.warning("%s: not built, the %s limit: %s", main, exc.limit, exc)
            raise BuildFailed(_failure(Place(exc.path, exc.row), exc.col, exc.message),
                              FsError(errno.EFBIG, f"{main}: {exc}")) from None
        except PreprocessError as exc:
            raise BuildFailed(_failure(Place(exc.path, exc.row), exc.col, exc.message),
                              FsError(errno.EIO, f"{main}: {exc}")) from None
        except _ResolveFailed as exc:
            raise exc.error from None
        if expansion is None:
            return None
        if luau:
            text = envelope.wrap_luau(source, expansion.text, program=PROGRAM, when=now)
        else:
            text = envelope.wrap_lsl(source, expansion.text, program=PROGRAM, when=now, target=vm)
        unwrapped = envelope.unwrap(text)
        assert unwrapped is not None and unwrapped.source == source  # the round trip holds
        size = len(text.encode("utf-8"))
        if size > SCRIPT_LIMIT:
            message = (f"the in-world text is {size} bytes (envelope and expansion); scripts hold at most "
                       f"{SCRIPT_LIMIT} bytes")
            raise BuildFailed(_failure(Place(main, 1), 1, message),
                              FsError(errno.EFBIG, f"{main}: in-world text of {size} bytes exceeds {SCRIPT_LIMIT}"))
        return Build(inworld=text, expansion=expansion, expansion_row=unwrapped.expansion_row)

    def unchanged(self, item: Item, build: Build) -> bool:
        """Whether `build` would store what is in-world already (source and expansion alike)."""
        inworld = item.cache.inworld.decode("utf-8", "replace") if item.cache.inworld is not None else None
        now = envelope.unwrap(inworld) if inworld is not None else None
        new = envelope.unwrap(build.inworld)
        return now is not None and new is not None and (now.source, now.expansion) == (new.source, new.expansion)


def wants_build(source: str, *, luau: bool, enveloped: bool) -> bool:
    """The detection rule: an envelope already, or an LSL directive line, or (Luau) a
    `require("...")` (built only when one resolves, decided while expanding);
    `//fspreprocessor off` saves verbatim whatever the text holds."""
    if detect.preprocessor_off(source):
        return False
    if enveloped:
        return True
    if luau:
        from ..sources import luau as luau_sources
        return bool(luau_sources.requires(source))
    return detect.has_directive(source)


def _failure(place: Place, col: int, message: str) -> CompileReport:
    return CompileReport(compiled=False, diagnostics=(Diagnostic(row=place.row, column=col, level="ERROR",
                                                                 message=message),),
                         at=time.time(), note="not saved: the source could not be built", places=(place,),
                         preprocessed=True, landed=False)


class BuildFailed(Exception):
    """A source that cannot be built: the report F.diag shows, and the error close() answers."""

    def __init__(self, report: CompileReport, error: FsError) -> None:
        super().__init__(error.message)
        self.report = report
        self.error = error


class _ResolveFailed(Exception):
    """An include's content could not be read (the viewer is gone, a permission): the save fails
    with that error, not with a misleading "not found"."""

    def __init__(self, error: FsError) -> None:
        super().__init__(error.message)
        self.error = error


@attrs.define
class _ThreadResolver:
    """The expansion's resolver, called from its worker thread: each call runs in trio. Quoted
    includes of the main file are searched from `search_dir` when given (a live file's item)."""

    sources: Sources
    token: trio.lowlevel.TrioToken
    main: str
    search_dir: str | None = None
    local_root: str | None = None

    def _from(self, including: str) -> str:
        if including == self.main and self.search_dir is not None:
            return posixpath.join(self.search_dir, posixpath.basename(including))
        return including

    def find(self, name: str, including: str, angle: bool) -> Source | None:
        async def find() -> Source | None:
            try:
                return await self.sources.find(name, self._from(including), angle, self.local_root)
            except FsError as exc:
                raise _ResolveFailed(exc) from None
        return trio.from_thread.run(find, trio_token=self.token)

    def searched(self, name: str, including: str, angle: bool) -> list[str]:
        return self.sources.searched(name, self._from(including), angle)


def _within(path: str, root: str) -> bool:
    """Whether `path`, symlinks resolved, lies inside the directory `root`."""
    real_root = os.path.realpath(root)
    return os.path.realpath(path).startswith(real_root.rstrip("/") + "/")


async def _local(path: str, root: str) -> Source | None:
    """A regular file of the local file system inside `root` (an include directory, an overlay).
    No more than INCLUDE_LIMIT bytes are read: a larger file comes back `oversize`."""
    if not _within(path, root):
        return None

    def read() -> bytes | None:
        try:
            with open(path, "rb") as f:
                return f.read(INCLUDE_LIMIT + 1)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
            return None
    if not os.path.isfile(path):
        return None
    data = await trio.to_thread.run_sync(read)
    if data is None:
        return None
    text = data[:INCLUDE_LIMIT].decode("utf-8", "replace")
    return Source(path=os.path.abspath(path), text=text, oversize=len(data) > INCLUDE_LIMIT)
