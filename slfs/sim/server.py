"""The simulated viewer: a WebSocket JSON-RPC 2.0 server behaving like the Second Life viewer.

See README.md for what it simulates and how. Version 1 follows the protocol document; version 2
adds what newer viewers do (see the `v2` checks).

`SimViewer` is the public class and holds the configuration; its behaviour is in four mixins:
transport.py (`Transport`: connections, framing, limits, the handshake, broadcasts, calls to clients
and the sync points), methods.py (`MethodHandlers`: the methods a client calls and their validators)
control.py (`WorldControl`: the world-editing API and the notifications it sends) and live.py
(`LiveSync`: the viewer's own script editor, its temp file and watcher, script.subscribe/list).
"""

from __future__ import annotations

import tempfile

from .control import WorldControl
from .live import LIVE_POLL_INTERVAL, LiveSync
from .methods import COMPILE_FAILURES, DEFAULT_LSL, DEFAULT_LUAU, MethodHandlers, correct_name
from .transport import SyncError, Transport
from .world import World

# Importable from here as before the split.
__all__ = ["DEFAULT_LSL", "DEFAULT_LUAU", "SimViewer", "SyncError", "correct_name"]


class SimViewer(Transport, LiveSync, MethodHandlers, WorldControl):
    """A simulated Second Life viewer serving the external-editor protocol on 127.0.0.1."""

    def __init__(
        self,
        world: World,
        viewer_version: int = 1,
        latency_ms: float = 0,
        method_latency_ms: dict[str, float] | None = None,
        *,
        handshake_timeout: float = 30.0,
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
    ) -> None:
        if viewer_version not in (1, 2):
            raise ValueError("viewer_version must be 1 or 2")
        if deferred_owner_id not in ("absent", "null"):
            raise ValueError("deferred_owner_id must be 'absent' or 'null'")
        if compile_failure is not None and compile_failure not in COMPILE_FAILURES:
            raise ValueError("compile_failure must be None, 'stoi' or 'nul'")
        self.world = world
        self.viewer_version = viewer_version
        self.latency_ms = latency_ms
        self.method_latency_ms: dict[str, float] = dict(method_latency_ms or {})
        self.handshake_timeout = handshake_timeout
        self.publish_delay = publish_delay
        self.apply_delay = apply_delay
        self.create_delay = create_delay
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
        # live sync (live.py): the external editor command (None: $LL_SCRIPT_EDITOR, else none) and
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
