"""The simulated viewer's handshake: the challenge file, `session.handshake`, `session.ok` or
`session.disconnect`, and the optional pings of a client afterwards.

`Handshake` is a mixin of `SimViewer` (server.py); what each generation does differently is its
profile's (generation.py, after viewer-source.md §6).
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from slfs.protocol.jsonrpc import Response

from .connection import Connection
from .generation import Generation
from .world import World

log = logging.getLogger(__name__)

CHALLENGE_FIXED_NAME = "sl_script_challenge.tmp"  # G1 (viewer-source.md §6)
# Newer protocol document: 64 KB before authentication (transport.py), 16 MB after.
V2_MESSAGE_LIMIT = 16 * 1024 * 1024


class Handshake:
    """The handshake half of SimViewer; the attributes annotated below are SimViewer's."""

    world: World
    viewer_version_string: str
    syntax_id: str
    handshake_timeout: float | None
    tmpdir: str
    profile: Generation
    viewer_path: Callable[[str], str]
    client_ping_interval: float | None
    challenge_files: list[str]
    client_pings: list[Response]
    client_handshakes: list[dict[str, Any]]

    @property
    def v2(self) -> bool:
        raise NotImplementedError

    # Transport's (annotation only, no stub)
    call_client: Callable[..., Awaitable[Response]]
    _notify: Callable[..., Awaitable[None]]
    # WorldControl's: called after each session.ok has been sent
    _on_session_ok: Callable[[], None]


    def _write_challenge(self, challenge: str) -> str:
        """Write the challenge file as the profile says; its local path (OSError if it cannot be).

        viewer-source.md §6: G1 a fixed name `sl_script_challenge.tmp`, default permissions (so
        concurrent handshakes overwrite each other's secret); G2 `sl_script_challenge_<secret>.tmp`
        (the path holds the answer), default permissions; G3/G4 a name made of another random
        UUID, created exclusively with mode 0600. V1/V2: `sl_script_challenge_<random>.tmp`, 0600
        (viewer-behaviour.md). The content is always the bare lower-case UUID, no newline."""
        naming = self.profile.challenge_naming
        data = challenge.encode("ascii")
        if naming == "mkstemp":
            fd, path = tempfile.mkstemp(prefix="sl_script_challenge_", suffix=".tmp", dir=self.tmpdir)
            self.challenge_files.append(path)
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o600)
                f.write(data)
            return path
        if naming == "uuid":
            path = os.path.join(self.tmpdir, f"sl_script_challenge_{uuid.uuid4()}.tmp")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            self.challenge_files.append(path)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return path
        name = CHALLENGE_FIXED_NAME if naming == "fixed" else f"sl_script_challenge_{challenge}.tmp"
        path = os.path.join(self.tmpdir, name)
        with open(path, "wb") as f:  # default permissions (0666 less the umask)
            f.write(data)
        self.challenge_files.append(path)
        return path

    async def _handshake(self, conn: Connection) -> None:
        profile = self.profile
        challenge = str(uuid.uuid4())
        path: str | None = None
        try:
            path = self._write_challenge(challenge)
        except OSError as exc:
            if profile.unwritable_challenge == "refuse":
                # viewer-source.md §6: G3/G4 disconnect {4, "Unable to issue a challenge"}
                await self._disconnect(conn, 4, "Unable to issue a challenge")
                return
            if profile.unwritable_challenge != "open":
                raise
            # G2: "if the file cannot be written no challenge is sent and any answer is accepted"
            log.info("challenge file not written (%s): handshake without a challenge", exc)
        answered = False
        try:
            params: dict[str, Any] = {
                "server_version": "1.0.0",
                "protocol_version": "1.0",
                "viewer_name": "Second Life Simulated",
                "viewer_version": self.viewer_version_string,
                "languages": ["lsl", "luau"],
                "syntax_id": self.syntax_id,
                "features": {name: True for name in profile.features},
            }
            if path is not None:
                params["challenge"] = self.viewer_path(path)
            if profile.agent_in_handshake:
                params["agent_id"] = self.world.agent_id
                params["agent_name"] = self.world.agent_name
            timeout = self.handshake_timeout if self.handshake_timeout is not None else math.inf
            response = await self.call_client(conn, "session.handshake", params, timeout=timeout)
            answered = response.error is None and not conn.closed
        finally:
            # G1/G2 delete the file only when the answer arrives; G3+ (and V1/V2) whatever happens
            if path is not None and (answered or profile.challenge_always_deleted):
                try:
                    os.unlink(path)
                except OSError:
                    pass
        if conn.closed:
            return
        err = response.error
        if err is not None and err.code == -32001:
            await self._disconnect(conn, 3, "Handshake timed out")
            return
        if err is not None and profile.handshake_failed_on_error:
            await self._disconnect(conn, 2, "Handshake failed")
            return
        result = response.result if isinstance(response.result, dict) else {}
        self.client_handshakes.append(result)
        answer = result.get("challenge_response")
        if profile.is_generation and isinstance(answer, str):
            answer = answer.lower()  # viewer-source.md §6: "Answer compared as a UUID (case-insensitive)"
        accepted = err is None and (path is None or (isinstance(answer, str) and answer == challenge))
        if not accepted:
            await self._disconnect(conn, 2, "Invalid challenge response")
            return
        conn.authenticated = True
        if self.v2:
            conn.ws._max_message_size = V2_MESSAGE_LIMIT
        if profile.agent_in_session_ok:
            await self._notify(
                conn, "session.ok", {"agent_id": self.world.agent_id, "agent_name": self.world.agent_name}
            )
        else:
            await self._notify(conn, "session.ok")  # G1-G3: no params (viewer-source.md §2)
        self._on_session_ok()
        if self.client_ping_interval and conn.nursery is not None:
            conn.nursery.start_soon(self._ping_client, conn, self.client_ping_interval)

    async def _ping_client(self, conn: Connection, interval: float) -> None:
        """Optionally call the client's system.ping now and then, as a viewer may."""
        while not conn.closed:
            await trio.sleep(interval)
            stamp = int(time.time() * 1000)
            self.client_pings.append(await self.call_client(conn, "system.ping", {"timestamp": stamp}, 30.0))

    async def _disconnect(self, conn: Connection, reason: int, message: str) -> None:
        await self._notify(conn, "session.disconnect", {"reason": reason, "message": message})
        await conn.close(1000)
