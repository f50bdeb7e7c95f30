"""The simulated viewer: a WebSocket JSON-RPC 2.0 server behaving like the Second Life viewer.

See README.md for what it simulates and how. Version 1 follows the protocol document; version 2
adds what newer viewers do (see the `v2` checks).

`SimViewer` is the public class and holds the configuration; its behaviour is in four mixins:
transport.py (`Transport`: connections, framing, limits, the handshake, broadcasts, calls to clients
and the sync points), methods.py (`MethodHandlers`: the methods a client calls and their validators)
control.py (`WorldControl`: the world-editing API and the notifications it sends) and live_sync.py
(`LiveSync`: the viewer's own script editor, its temp file and watcher, script.subscribe/list).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from .commands import CommandMethods
from .generation import GENERATIONS, Generation, profile_for
from .handshake import Handshake
from .item_methods import COMPILE_FAILURES, DEFAULT_LSL, DEFAULT_LUAU, correct_name
from .live_sync import LIVE_POLL_INTERVAL, LiveSync
from .methods import MethodHandlers
from .sync_points import SyncError
from .transport import Transport
from .winpaths import WINDOWS_MODES, WindowsPaths
from .world import World
from .world_control import WorldControl

# Importable from here as before the split.
__all__ = ["DEFAULT_LSL", "DEFAULT_LUAU", "SimViewer", "SyncError", "correct_name"]


class SimViewer(Transport, Handshake, LiveSync, CommandMethods, MethodHandlers, WorldControl):
    """A simulated Second Life viewer serving the external-editor protocol on 127.0.0.1."""

    def __init__(
        self,
        world: World,
        viewer_version: int | None = None,
        latency_ms: float = 0,
        method_latency_ms: dict[str, float] | None = None,
        *,
        handshake_timeout: float | None = None,
        publish_delay: float = 0.05,
        apply_delay: float = 0.05,
        create_delay: float = 0.02,
        tmpdir: str | None = None,
        viewer_version_string: str = "7.2.0.1",
        client_ping_interval: float | None = None,
        properties_delay: float | None = 0.05,
        deferred_owner_id: str = "absent",
        compile_failure: str | None = None,
        external_editor: str | None = None,
        live_poll_interval: float | None = LIVE_POLL_INTERVAL,
        generation: str | None = None,
        windows_paths: str | None = None,
        wine_prefix: Path | str | None = None,
        windows_mount: Path | str | None = None,
        windows_user: str = "resident",
        windows_drive: str = "C",
    ) -> None:
        if generation is not None and generation not in GENERATIONS:
            raise ValueError("generation must be None, 'G1', 'G2', 'G3' or 'G4'")
        implied = None if generation is None else (2 if generation == "G4" else 1)
        if viewer_version is None:
            viewer_version = implied or 1
        if viewer_version not in (1, 2):
            raise ValueError("viewer_version must be 1 or 2")
        if implied is not None and viewer_version != implied:
            raise ValueError(f"generation {generation} is viewer_version {implied}")
        if windows_paths is not None and windows_paths not in WINDOWS_MODES:
            raise ValueError("windows_paths must be None, 'wine' or 'wsl'")
        if windows_paths is not None and tmpdir is not None:
            raise ValueError("tmpdir and windows_paths exclude each other (the temp dir is the Windows one)")
        if deferred_owner_id not in ("absent", "null"):
            raise ValueError("deferred_owner_id must be 'absent' or 'null'")
        if compile_failure is not None and compile_failure not in COMPILE_FAILURES:
            raise ValueError("compile_failure must be None, 'stoi' or 'nul'")
        self.world = world
        self.viewer_version = viewer_version
        # None, or "G1".."G4": which generation of the viewer's C++ the sim plays (generation.py)
        self.generation = generation
        self.profile: Generation = profile_for(viewer_version, generation)
        self.latency_ms = latency_ms
        self.method_latency_ms: dict[str, float] = dict(method_latency_ms or {})
        # None: the generation's (30 s; G1/G2 wait for ever, viewer-source.md §5)
        if handshake_timeout is None:
            handshake_timeout = 30.0 if self.profile.handshake_timeout == "default" else None
        self.handshake_timeout: float | None = handshake_timeout
        self.publish_delay = publish_delay
        self.apply_delay = apply_delay
        self.create_delay = create_delay
        # Windows path forms (winpaths.py): the temp dir is the Windows viewer's, and every local
        # path the viewer names goes out in its Windows form (viewer_path)
        self.windows: WindowsPaths | None = None
        self.windows_drive = windows_drive
        if windows_paths is not None:
            self.windows = WindowsPaths(
                windows_paths, wine_prefix=wine_prefix, windows_mount=windows_mount, user=windows_user
            )
            self.tmpdir = self.windows.prepare()
            self.viewer_path(self.tmpdir)  # a drive that does not reach the temp dir fails here
        else:
            self.tmpdir = tmpdir or tempfile.gettempdir()
        self.viewer_version_string = viewer_version_string
        self.client_ping_interval = client_ping_interval
        # V2, objects with deferred_properties: seconds from publish (or, for an object published in
        # the world file, from the first session.ok) until the properties arrive; None: only
        # deliver_properties() delivers them.
        self.properties_delay = properties_delay
        self.deferred_owner_id = deferred_owner_id  # placeholder owner_id: "absent" or "null" (UUID)
        self.compile_failure = compile_failure  # None, "stoi" or "nul": how a failed LSL save is answered
        self.syntax_id = "e2a4f6b8-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
        # live sync (live_sync.py): the external editor command (None: $LL_SCRIPT_EDITOR, else none) and
        # the seconds between two checks of a temp file (None: only live_poll() checks)
        self.external_editor = external_editor
        self.live_poll_interval = live_poll_interval
        # transport state: port, calls, notifications_sent, challenge_files, client_pings,
        # dropped_connections, the connections and the sync-point bookkeeping
        self._init_transport()
        self._init_live()
        # world state
        self._creating: set[str] = set()
        self._refuse_create: dict[str, list[str]] = {}
        self._world_deferred_scheduled = False
        self._last_inventory: dict[tuple[str, str], str] = {}
        self._handlers = self._method_table()

    @property
    def v2(self) -> bool:
        return self.viewer_version >= 2

    @property
    def windows_paths(self) -> str | None:
        """None, "wine" or "wsl"."""
        return self.windows.mode if self.windows is not None else None

    def windows_path(self, local_path: str | os.PathLike[str], drive: str = "C") -> str:
        """The Windows name of a local path as the simulated Windows viewer would write it: through
        `drive` C: (the prefix's drive_c under Wine, MOUNT/c under WSL) or, under Wine, Z: (the
        Unix root). ValueError when the sim plays no Windows viewer or the drive does not reach it."""
        if self.windows is None:
            raise ValueError("the sim plays no Windows viewer (windows_paths is None)")
        return self.windows.to_windows(local_path, drive)

    def local_path(self, viewer_path: str) -> str:
        """The local path behind a path the viewer names (itself when no Windows viewer is played)."""
        return viewer_path if self.windows is None else self.windows.to_local(viewer_path)

    def viewer_path(self, local_path: str) -> str:
        """How the viewer names a local file: its Windows form through `windows_drive`, or as is."""
        if self.windows is None:
            return local_path
        return self.windows.to_windows(local_path, self.windows_drive)
