"""The control socket, spoken directly: ready first, malformed lines, unknown frame types, answers
correlated by id under concurrency, the event subscription, shutdown on unmount, mode 0600; and the
blocking client the CLI uses."""

from __future__ import annotations

import json
import os
import socket
import stat
import struct
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from support.foreign import require_root
from support.mount import Mount

from slfs.client import ClientError
from slfs.client.connection import ControlClient
from slfs.client.mounts import find_mount

CUBE = "Hello Cube"


def registry(m: Mount) -> dict[str, Any]:
    files = list((Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts").glob("*.json"))
    assert len(files) == 1, files
    return dict(json.loads(files[0].read_text()))


class Raw:
    """A bare NDJSON connection (blocking; use from a worker thread)."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(path)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def frame(self) -> dict[str, Any] | None:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return dict(json.loads(line))

    def close(self) -> None:
        self.sock.close()


async def raw(m: Mount) -> Raw:
    return await m.thread(Raw, registry(m)["socket"])


async def logged_events(m: Mount) -> list[dict[str, Any]]:
    """The daemon's event log (.slfs/events)."""
    return [json.loads(line) for line in (await m.read_bytes(".slfs", "events")).splitlines()]


async def test_registry_and_socket_mode(mounted: Mount) -> None:
    m = mounted
    entry = registry(m)
    assert entry["mountpoint"] == str(m.mnt) and entry["pid"] == m.pid
    assert entry["endpoint"] == f"127.0.0.1:{m.port}"
    st = os.stat(entry["socket"])
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert entry["socket"].startswith(m.env["XDG_RUNTIME_DIR"] + "/slfs/")


async def test_ready_first_and_malformed_lines(mounted: Mount) -> None:
    m = mounted
    r = await raw(m)
    try:
        ready = await m.thread(r.frame)
        assert ready is not None and ready["type"] == "ready" and ready["protocolVersion"] == 1
        assert ready["mount"] == str(m.mnt) and ready["pid"] == m.pid
        for bad in (b"this is not json\n", b"[1, 2]\n", b'{"no":"type"}\n', b'{"type": 5}\n'):
            await m.thread(r.send, bad)
            answer = await m.thread(r.frame)
            assert answer is not None and answer["type"] == "response" and answer["command"] == "parse"
            assert answer["success"] is False and answer["error"] and "id" not in answer
        # still usable, and unknown frame types get no answer at all
        await m.thread(r.send, b'{"type":"hello-from-the-future","id":"u1"}\n\n'
                               b'{"type":"status","id":"s1"}\n')
        answer = await m.thread(r.frame)
        assert answer is not None and answer["id"] == "s1" and answer["success"] is True
        assert answer["command"] == "status" and answer["data"]["state"] == "connected"
        # a failing command: success false with an errno name
        await m.thread(r.send, b'{"type":"diag","id":7,"path":"/nowhere"}\n')
        answer = await m.thread(r.frame)
        assert answer is not None and answer["id"] == 7 and answer["success"] is False
        assert answer["code"] == "EINVAL" and "not inside the mount" in answer["error"]
    finally:
        r.close()


async def test_concurrent_requests_correlated_by_id(mounted: Mount) -> None:
    m = mounted
    r = await raw(m)
    try:
        await m.thread(r.frame)  # ready
        hello = str(m.path(CUBE, "Hello.lsl"))
        # a slow command (waits for the viewer's confirmation) and quick ones behind it
        frames = [{"type": "stop", "id": "slow", "path": hello}]
        frames += [{"type": "resolve", "id": f"q{i}", "path": f"{CUBE}/Hello.lsl"} for i in range(20)]
        frames += [{"type": "status", "id": "st"}]
        await m.thread(r.send, b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        answers = [await m.thread(r.frame) for _ in frames]
        assert all(a is not None and a["success"] for a in answers), answers
        by_id = {a["id"]: a for a in answers if a is not None}
        assert set(by_id) == {f["id"] for f in frames}
        assert by_id["slow"]["data"]["state"] == "stopped"
        assert all(by_id[f"q{i}"]["data"]["path"] == hello for i in range(20))
        # the quick ones were not held behind the slow one
        order = [a["id"] for a in answers if a is not None]
        assert order.index("st") < order.index("slow")
    finally:
        r.close()


async def test_client_correlates_and_skips_events(mounted: Mount) -> None:
    m = mounted
    entry = registry(m)

    def work() -> tuple[Any, list[Any], str | None, list[tuple[str | None, str]]]:
        with ControlClient(entry["socket"]) as c:
            assert c.ready["type"] == "ready"
            # events arrive on this connection while requests are answered: they are skipped
            c.send({"type": "subscribe", "id": "sub"})
            status = c.request("status")
            results = [c.request("resolve", path=f"{CUBE}/Hello.lsl") for _ in range(5)]
            code = None
            try:
                c.request("run", path=f"{CUBE}/nope.lsl")
            except ClientError as exc:
                code = exc.code
            # A field of the wrong type is the client's mistake (EINVAL, the field named), not an
            # internal error, and the connection stays usable.
            bad = []
            for params in ({"path": f"{CUBE}/Hello.lsl", "timeout": "soon"}, {"path": 5}):
                try:
                    c.request("run", **params)
                except ClientError as exc:
                    bad.append((exc.code, str(exc)))
            results.append(c.request("resolve", path=f"{CUBE}/Hello.lsl"))
            return status, results, code, bad

    status, results, code, bad = await m.thread(work)
    assert status["state"] == "connected"
    assert {r["path"] for r in results} == {str(m.path(CUBE, "Hello.lsl"))} and len(results) == 6
    assert code == "ENOENT"
    assert [c for c, _ in bad] == ["EINVAL", "EINVAL"], bad
    assert "run.timeout" in bad[0][1] and "run.path" in bad[1][1], bad


async def test_subscribe_streams_events(mounted: Mount) -> None:
    m = mounted
    entry = registry(m)
    got: list[dict[str, Any]] = []
    client = await m.thread(ControlClient, entry["socket"])

    def follow() -> None:
        try:
            for event in client.subscribe(since=0):
                got.append(event)
        except ClientError:
            pass  # closed under it

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.to_thread.run_sync, follow)
            try:
                state = m.path(CUBE, ".slfs", "Hello.lsl.state")
                await m.sh(f"echo reset > '{state}'")
                with trio.fail_after(15):
                    while not any(e.get("message") == "Hello from the cube!" for e in got):
                        await trio.sleep(0.05)
            finally:
                client.close()  # shutdown() wakes the follower's recv; it ends
    finally:
        client.close()
    assert got[0]["type"] == "connected" and got[0]["seq"] == 1  # the backlog from cursor 0 first
    seqs = [e["seq"] for e in got]
    assert seqs == sorted(set(seqs))
    assert any(e["type"] == "script.state_requested" for e in got)

    # without `since`: only what happens from now on; unsubscribe stops the stream
    r = await raw(m)
    try:
        await m.thread(r.frame)
        await m.thread(r.send, b'{"type":"subscribe","id":"s"}\n')
        answer = await m.thread(r.frame)
        assert answer is not None and answer["id"] == "s" and answer["success"] is True
        cursor = answer["data"]["cursor"]
        await m.sh(f"echo reset > '{m.path(CUBE, '.slfs', 'Hello.lsl.state')}'")
        event = await m.thread(r.frame)
        assert event is not None and event["type"] == "event" and event["event"]["seq"] == cursor + 1
        await m.thread(r.send, b'{"type":"unsubscribe"}\n{"type":"status","id":"after"}\n')
        while True:  # events already on their way may precede the answer
            frame = await m.thread(r.frame)
            assert frame is not None
            if frame.get("id") == "after":
                break
        assert m.sim is not None
        sim = m.sim
        await sim.quiesce()  # the first reset is over on both sides
        mark = sim.mark()
        seen = max(e["seq"] for e in await logged_events(m))
        await m.sh(f"echo reset > '{m.path(CUBE, '.slfs', 'Hello.lsl.state')}'")

        async def reset_sent() -> bool:
            return bool(sim.calls_since(mark, "object.script.reset"))

        await m.wait_for(reset_sent, 10, "the reset reached the viewer")
        # The viewer has answered and said what the script says on reset; the daemon has handled
        # all of it: its events are in the log (events a stream would have had to send).
        await sim.quiesce()
        assert any(e["seq"] > seen and e.get("message") == "Hello from the cube!" for e in await logged_events(m))
        await m.thread(r.send, b'{"type":"status","id":"last"}\n')
        frame = await m.thread(r.frame)
        assert frame is not None and frame.get("id") == "last", frame  # no event in between
    finally:
        r.close()


@pytest.mark.own_mount("unmounts: the shutdown frame is the last the socket sends")
async def test_shutdown_frame_on_unmount(mounted: Mount) -> None:
    m = mounted
    entry = registry(m)
    r = await raw(m)
    idle = await raw(m)
    try:
        await m.thread(r.frame)
        await m.thread(idle.frame)
        await m.thread(r.send, b'{"type":"subscribe","id":"s"}\n')
        assert (await m.thread(r.frame) or {}).get("id") == "s"
        await m.stop_daemon()
        for conn in (r, idle):
            frames = []
            while True:
                frame = await m.thread(conn.frame)
                if frame is None:
                    break
                frames.append(frame)
            assert frames and frames[-1] == {"type": "shutdown"}, frames
        assert not os.path.exists(entry["socket"])
    finally:
        r.close()
        idle.close()


async def test_find_mount_from_paths(mounted: Mount, tmp_path: Path) -> None:
    m = mounted
    entry = registry(m)
    entries = [entry]
    assert find_mount(path=str(m.path(CUBE, "Hello.lsl")), entries=entries) == entry
    assert find_mount(mount=str(m.mnt), entries=entries) == entry
    # a symlink to the mount
    link = tmp_path / "sl"
    link.symlink_to(m.mnt)
    assert await m.thread(lambda: find_mount(path=str(link / CUBE), entries=entries)) == entry
    # a path inside the mount that does not exist (yet) still names the mount, without a lookup
    t = time.monotonic()
    assert find_mount(path=str(m.path("no such object", "new.lsl")), entries=entries) == entry
    assert time.monotonic() - t < 1


OTHER_UID_CLIENT = r"""
import os, socket, sys
os.setgroups([]); os.setgid(65534); os.setuid(65534)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
sys.stdout.write(repr(data))
"""


@pytest.mark.allow_log(r"WARNING slfs\.control\.server: control socket: refused a connection from uid")
async def test_another_uid_is_refused_even_when_the_socket_is_opened_up(mounted: Mount) -> None:
    """Defence in depth: the socket's dir is 0700 and the socket 0600; a user who loosens them still
    lets no other uid in (SO_PEERCRED)."""
    require_root()
    m = mounted
    path = registry(m)["socket"]
    opened = {}  # every directory above the socket, searchable by others for the test's length
    d = os.path.dirname(path)
    while d not in ("/", "/tmp"):
        opened[d] = stat.S_IMODE(os.stat(d).st_mode)
        d = os.path.dirname(d)
    try:
        for d in opened:
            os.chmod(d, opened[d] | 0o711)
        os.chmod(path, 0o666)
        res = await m.run(sys.executable, "-c", OTHER_UID_CLIENT, path)
    finally:
        for d, mode in opened.items():
            os.chmod(d, mode)
    assert res.stdout == b"b''"  # closed at once: not even the ready frame
    assert "control socket: refused a connection from uid 65534" in m.log_text()
    # Our own uid still gets in.
    r = await raw(m)
    try:
        assert (await m.thread(r.frame))["type"] == "ready"
    finally:
        r.close()


async def test_a_client_reset_mid_stream_ends_its_connection_not_the_daemon(mounted: Mount) -> None:
    """A client killed while events stream to it (Ctrl-C on `slfs events -f`) resets its connection:
    the daemon goes on serving (it once let the reset escape from the connection's nursery and stopped)."""
    m = mounted
    for _ in range(3):
        r = await raw(m)
        assert (await m.thread(r.frame) or {}).get("type") == "ready"
        await m.thread(r.send, b'{"type":"subscribe","since":0}\n')
        await m.thread(r.frame)  # events are on their way to it
        # close with unread data pending and SO_LINGER 0: the kernel sends a reset, not a FIN
        r.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        r.close()
    assert (await m.status())["state"] == "connected"
    r = await raw(m)
    assert (await m.thread(r.frame) or {}).get("type") == "ready"
    r.close()
