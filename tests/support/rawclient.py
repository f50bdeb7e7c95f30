"""A raw JSON-RPC client over a real socket, for the simulated-viewer conformance tests
(the `start_sim` and `connect` fixtures: tests/sim/conftest.py)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from trio_websocket import WebSocketConnection, open_websocket_url

from slfs.sim import SimViewer


class RawClient:
    """Speaks JSON-RPC by hand; keeps every frame received, in order, in `frames`."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self.unread: list[dict[str, Any]] = []
        self._next_id = 1
        self.handshake_params: dict[str, Any] = {}
        self.session_ok: dict[str, Any] = {}

    async def _read(self) -> dict[str, Any]:
        msg = json.loads(await self.ws.get_message())
        self.frames.append(msg)
        return msg

    async def recv(self) -> dict[str, Any]:
        """The next frame not yet consumed by recv/response/notification."""
        if self.unread:
            return self.unread.pop(0)
        return await self._read()

    async def _take(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        for i, msg in enumerate(self.unread):
            if match(msg):
                return self.unread.pop(i)
        while True:
            msg = await self._read()
            if match(msg):
                return msg
            self.unread.append(msg)

    async def send(self, obj: Any) -> None:
        await self.ws.send_message(obj if isinstance(obj, str) else json.dumps(obj))

    async def request(self, method: str, params: Any = None, *, with_params: bool = True) -> int:
        rid = self._next_id
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if with_params:
            msg["params"] = {} if params is None else params
        await self.send(msg)
        return rid

    async def response(self, rid: Any) -> dict[str, Any]:
        """The response with id `rid` (other frames stay unread)."""
        return await self._take(lambda m: "method" not in m and m.get("id") == rid)

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        return await self.response(await self.request(method, params))

    async def result(self, method: str, params: Any = None) -> Any:
        resp = await self.call(method, params)
        assert "error" not in resp, resp
        return resp.get("result")

    async def error(self, method: str, params: Any = None) -> tuple[int, str]:
        resp = await self.call(method, params)
        assert "error" in resp, resp
        return resp["error"]["code"], resp["error"]["message"]

    async def notification(self, method: str) -> dict[str, Any]:
        msg = await self._take(lambda m: m.get("method") == method and "id" not in m)
        return msg.get("params") or {}

    async def drain(self, sim: SimViewer) -> None:
        """Once the sim is idle (all it received handled, all it deferred done), a round trip: the
        sim sends frames to a connection in order, so by the answer every frame it sent this client
        before is in `frames` (what `received` looks at)."""
        await sim.idle()
        await self.result("system.status")

    def received(self, method: str) -> list[dict[str, Any]]:
        return [m.get("params") or {} for m in self.frames if m.get("method") == method and "id" not in m]

    async def handshake(self, answer: str | None = None, *, use_file: bool = True) -> dict[str, Any]:
        """Answer session.handshake (with the challenge file's content unless `answer` is given)."""
        msg = await self.recv()
        assert msg["method"] == "session.handshake", msg
        params = msg["params"]
        self.handshake_params = params
        if answer is None and use_file:
            with open(params["challenge"], encoding="ascii") as f:
                answer = f.read()
        result = {
            "client_name": "test",
            "client_version": "1.0",
            "protocol_version": "1.0",
            "languages": ["lsl", "luau"],
            "features": {"object_publish": True, "commands": True},
        }
        if answer is not None:
            result["challenge_response"] = answer
        await self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        return params

    async def login(self) -> None:
        await self.handshake()
        self.session_ok = await self.notification("session.ok")


@asynccontextmanager
async def raw(
    sim: SimViewer, *, login: bool = True, headers: list[tuple[str, str]] | None = None, **ws_options: Any
) -> AsyncIterator[RawClient]:
    """A RawClient on a fresh connection; `ws_options` go to open_websocket_url (max_message_size...)."""
    async with open_websocket_url(
        f"ws://127.0.0.1:{sim.port}/any/path", extra_headers=headers, **ws_options
    ) as ws:
        client = RawClient(ws)
        if login:
            await client.login()
        yield client
