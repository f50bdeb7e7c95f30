"""A small scriptable fake viewer (WebSocket JSON-RPC server) for the session tests."""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, serve_websocket

from slfs.protocol.rpc_errors import RpcError
from slfs.protocol.types import PublishedObject

Method = Callable[["FakeConn", Any], Awaitable[Any]]


def sample_objects() -> list[dict[str, Any]]:
    return [
        {
            "object_id": "11111111-1111-1111-1111-111111111111",
            "object_name": "Box",
            "inventory": [
                {"item_id": "22222222-2222-2222-2222-222222222222", "name": "hello", "type": "script"}
            ],
        }
    ]


class FakeConn:
    def __init__(
        self, viewer: FakeViewer, ws: WebSocketConnection, headers: list[tuple[bytes, bytes]]
    ) -> None:
        self.viewer = viewer
        self.ws = ws
        self.headers = headers
        self.responses: dict[Any, dict[str, Any]] = {}
        self.response_event = trio.Event()
        self.notifications: list[dict[str, Any]] = []
        self.next_id = 1000
        self.closed = False

    async def send(self, obj: Any) -> None:
        await self.ws.send_message(obj if isinstance(obj, (str, bytes)) else json.dumps(obj))

    async def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)

    async def call(self, method: str, params: Any = None, rid: Any = None) -> dict[str, Any]:
        """Send a request to the client and wait for its response message (as a dict)."""
        if rid is None:
            rid = f"rpc_{self.next_id}"
            self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)
        while rid not in self.responses:
            await self.response_event.wait()
        return self.responses.pop(rid)

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed = True
        await self.ws.aclose(code, reason)


class FakeViewer:
    def __init__(
        self,
        *,
        objects: list[dict[str, Any]] | None = None,
        challenge: bool = True,
        v2: bool = False,
        answer_pings: bool = True,
        methods: dict[str, Method] | None = None,
        challenge_dir: str | None = None,
        name_challenge: Callable[[str], str] | None = None,
    ) -> None:
        self.objects = sample_objects() if objects is None else objects
        self.use_challenge = challenge
        self.v2 = v2
        self.answer_pings = answer_pings
        self.methods: dict[str, Method] = dict(methods or {})
        self.port = 0
        self.conns: list[FakeConn] = []
        self.calls: list[tuple[str, Any]] = []
        self.handshake_answers: list[dict[str, Any]] = []
        self.requests: list[WebSocketRequest] = []
        self.auto_handshake = True
        self.ready = trio.Event()  # set after each session.ok (replaced on the next connection)
        self._cancel: trio.CancelScope | None = None
        self._tmp = challenge_dir or tempfile.mkdtemp(prefix="fakeviewer")
        # How the viewer names its challenge file (a Windows viewer: by its Windows path).
        self.name_challenge = name_challenge or (lambda path: path)

    @property
    def conn(self) -> FakeConn:
        return self.conns[-1]

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:
            self._cancel = scope
            async with trio.open_nursery() as nursery:
                server = await nursery.start(
                    partial(serve_websocket, self._handler, "127.0.0.1", self.port, ssl_context=None)
                )
                self.port = server.port
                task_status.started(self.port)

    def stop(self) -> None:
        if self._cancel is not None:
            self._cancel.cancel()

    async def _handler(self, request: WebSocketRequest) -> None:
        self.requests.append(request)
        ws = await request.accept()
        conn = FakeConn(self, ws, list(request.headers))
        self.conns.append(conn)
        self.ready = trio.Event()
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._reader, conn, nursery)
                if self.auto_handshake:
                    await self.handshake(conn)
        except ConnectionClosed:
            pass

    async def handshake(self, conn: FakeConn) -> bool:
        secret = str(uuid.uuid4())
        params: dict[str, Any] = {
            "server_version": "1.0.0",
            "protocol_version": "1.0",
            "viewer_name": "Fake Viewer",
            "viewer_version": "7.0.0",
            "languages": ["lsl", "luau"],
            "syntax_id": "33333333-3333-3333-3333-333333333333",
            "features": {"live_sync": True, "commands": True},
        }
        if not self.v2:
            params.update(agent_id="44444444-4444-4444-4444-444444444444", agent_name="Test Resident")
        path = None
        if self.use_challenge:
            path = os.path.join(self._tmp, f"sl_script_challenge_{uuid.uuid4().hex}.tmp")
            with open(path, "w") as f:
                f.write(secret)
            os.chmod(path, 0o600)
            params["challenge"] = self.name_challenge(path)
        resp = await conn.call("session.handshake", params)
        if path:
            os.unlink(path)
        self.handshake_answers.append(resp)
        result = resp.get("result")
        if not isinstance(result, dict):
            await conn.notify("session.disconnect", {"reason": 2, "message": "Handshake failed"})
            await conn.close(1000)
            return False
        if self.use_challenge and result.get("challenge_response") != secret:
            await conn.notify("session.disconnect", {"reason": 2, "message": "Invalid challenge response"})
            await conn.close(1000)
            return False
        if self.v2:
            await conn.notify("session.ok", {"agent_id": "55555555-5555-5555-5555-555555555555",
                                              "agent_name": "V2 Resident"})
        else:
            await conn.notify("session.ok")
        self.ready.set()
        return True

    async def _reader(self, conn: FakeConn, nursery: trio.Nursery) -> None:
        try:
            while True:
                text = await conn.ws.get_message()
                msg = json.loads(text)
                if "method" in msg and "id" in msg:
                    self.calls.append((msg["method"], msg.get("params")))
                    nursery.start_soon(self._serve, conn, msg)
                elif "method" in msg:
                    conn.notifications.append(msg)
                else:
                    conn.responses[msg.get("id")] = msg
                    conn.response_event.set()
                    conn.response_event = trio.Event()
        except ConnectionClosed:
            conn.closed = True
            conn.response_event.set()
            nursery.cancel_scope.cancel()

    async def _serve(self, conn: FakeConn, msg: dict[str, Any]) -> None:
        method, params, rid = msg["method"], msg.get("params"), msg["id"]
        try:
            if method in self.methods:
                result = await self.methods[method](conn, params)
            elif method == "object.list":
                result = {"objects": self.objects}
            elif method == "system.ping":
                if not self.answer_pings:
                    return
                result = {"pong": "pong", "timestamp": (params or {}).get("timestamp"), "server_time": 1}
            else:
                raise RpcError(-32601, f"Method not found: {method}")
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "result": result}
        except RpcError as err:
            reply = {"jsonrpc": "2.0", "id": rid, "error": err.to_json()}
        try:
            await conn.send(reply)
        except ConnectionClosed:
            pass


def published(objs: list[dict[str, Any]]) -> list[str]:
    return [o["object_id"] for o in objs]


__all__ = ["FakeConn", "FakeViewer", "PublishedObject", "published", "sample_objects"]
