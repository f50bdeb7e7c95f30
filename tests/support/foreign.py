"""A TCP listener owned by another uid (needs root): the impostor on the viewer's port.

    async with foreign_listener(port) as impostor:
        ...                                   # slfs must refuse it
    assert impostor.report == {"connections": 0, "bytes": 0}

The child drops to `uid` before it creates its socket (the kernel records the socket's owner at
creation), listens on 127.0.0.1:port, counts connections and bytes received, and prints them when
its stdin closes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

NOBODY = 65534

CHILD = r"""
import json, os, select, socket, sys
port, uid = int(sys.argv[1]), int(sys.argv[2])
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(8)
print("ready", flush=True)
conns, got, clients = 0, 0, []
while True:
    ready = select.select([s, 0, *clients], [], [])[0]
    if 0 in ready and not os.read(0, 1):
        break
    if s in ready:
        clients.append(s.accept()[0])
        conns += 1
    for c in [c for c in clients if c in ready]:
        data = c.recv(65536)
        got += len(data)
        if not data:
            clients.remove(c)
            c.close()
print(json.dumps({"connections": conns, "bytes": got}), flush=True)
"""


def require_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("a listener of another uid needs root")
        pytest.skip("a listener of another uid needs root")


class Impostor:
    def __init__(self, proc: trio.Process) -> None:
        self.proc = proc
        self.report: dict[str, Any] | None = None
        self._buf = b""

    async def line(self) -> str:
        assert self.proc.stdout is not None
        while b"\n" not in self._buf:
            chunk = await self.proc.stdout.receive_some(4096)
            if not chunk:
                raise RuntimeError(f"the foreign listener exited: {self._buf!r}")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode()

    async def stop(self) -> dict[str, Any]:
        """Close the listener; what it received."""
        if self.report is None:
            assert self.proc.stdin is not None
            await self.proc.stdin.aclose()
            self.report = json.loads(await self.line())
            await self.proc.wait()
        return self.report


@asynccontextmanager
async def foreign_listener(port: int, uid: int = NOBODY) -> AsyncIterator[Impostor]:
    require_root()
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-c", CHILD, str(port), str(uid)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    impostor = Impostor(proc)
    try:
        with trio.fail_after(10):
            assert await impostor.line() == "ready"
        yield impostor
        with trio.fail_after(10):
            await impostor.stop()
    finally:
        if proc.returncode is None:
            proc.kill()
            with trio.CancelScope(shield=True):
                await proc.wait()
