"""The control verbs without a mount: argument parsing, URI parsing, mount selection, and the
blocking client against a scripted socket server."""

from __future__ import annotations

import json
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from slfs import cli
from slfs.cli import verbs
from slfs.cli.output import VerbError
from slfs.cli.uri import parse_uri
from slfs.cli.verbs import parse_params, parse_since
from slfs.client import ClientError, ShutDown
from slfs.client.connection import ControlClient
from slfs.client.mounts import find_mount, mount_path

REPO = Path(__file__).resolve().parents[2]
OBJ = "edb64ade-4edb-5ab6-9b00-726ed29bc790"
SCRIPT = "50f550c1-7f14-5ac6-be04-f121557806dc"


# --- parsing -----------------------------------------------------------------------------------


def test_parse_since() -> None:
    assert parse_since("42") == (42, None)
    assert parse_since("0") == (0, None)
    assert parse_since("30s") == (None, 30)
    assert parse_since("10m") == (None, 600)
    assert parse_since("2h") == (None, 7200)
    assert parse_since("1d") == (None, 86400)
    assert parse_since("1.5h") == (None, 5400)
    for bad in ("yesterday", "10x", "-5", "", "m"):
        with pytest.raises(VerbError):
            parse_since(bad)


def test_parse_params() -> None:
    got = parse_params(["a=1", "b=true", 'c="quoted"', "d=plain text", "e={\"k\": [1]}", "f=", "g=a=b", "h=null"])
    assert got == {"a": 1, "b": True, "c": "quoted", "d": "plain text", "e": {"k": [1]}, "f": "", "g": "a=b",
                   "h": None}
    assert parse_params([f"object_id={OBJ}"]) == {"object_id": OBJ}  # a UUID is no JSON: a string
    for bad in ("novalue", "=x"):
        with pytest.raises(VerbError):
            parse_params([bad])


@pytest.mark.parametrize("uri", [
    f"vscode://lindenlab.sl-vscode-plugin/connect?port=9021&object={OBJ}&script={SCRIPT}",
    f"vscode://lindenlab.sl-vscode-plugin/connect%3Fport%3D9021%26object%3D{OBJ}%26script%3D{SCRIPT}",
    f"vscode://lindenlab.sl-vscode-plugin%2Fconnect%3Fport%3D9021%26object%3D{OBJ.upper()}%26script%3D{SCRIPT}",
    f"vscode%3A%2F%2Flindenlab.sl-vscode-plugin%2Fconnect%3Fport%3D9021%26object%3D{OBJ}%26script%3D{SCRIPT}",
    f"vscode://lindenlab.sl-vscode-plugin/connect%253Fport%253D9021%2526object%253D{OBJ}%2526script%253D{SCRIPT}",
    f"  vscode://lindenlab.sl-vscode-plugin/connect/?script={SCRIPT}&object={OBJ}&port=9021\n",
])
def test_parse_uri(uri: str) -> None:
    assert parse_uri(uri) == {"port": 9021, "object": OBJ, "script": SCRIPT}


def test_parse_uri_partial_and_bad() -> None:
    assert parse_uri(f"vscode://lindenlab.sl-vscode-plugin/connect?port=1024&object={OBJ}") == \
        {"port": 1024, "object": OBJ, "script": None}
    assert parse_uri(f"vscode://lindenlab.sl-vscode-plugin/connect?port=65535&script={SCRIPT}&object=") == \
        {"port": 65535, "object": None, "script": SCRIPT}
    for port in ("1023", "65536", "0", "-1", "abc", ""):
        with pytest.raises(VerbError, match="1024 to 65535"):
            parse_uri(f"vscode://lindenlab.sl-vscode-plugin/connect?port={port}&object={OBJ}")
    with pytest.raises(VerbError, match="port"):
        parse_uri(f"vscode://lindenlab.sl-vscode-plugin/connect?object={OBJ}")
    with pytest.raises(VerbError, match="not a viewer launch URI"):
        parse_uri("vscode://ms-python.python/connect?port=9020")
    with pytest.raises(VerbError, match="neither"):
        parse_uri("vscode://lindenlab.sl-vscode-plugin/connect?port=9020")
    with pytest.raises(VerbError, match="not a UUID"):
        parse_uri("vscode://lindenlab.sl-vscode-plugin/connect?port=9020&object=../../etc")


def test_every_verb_parses_with_json_and_mount() -> None:
    parser = cli.build_parser()
    samples = {
        "status": [], "stats": [], "diag": ["--wait", "f"], "edit": ["--wait", "t"], "live": [],
        "build": ["f", "d"], "run": ["f"], "stop": ["f"], "reset": ["f"],
        "events": ["-f", "--since", "1h"], "top": ["--once"],
        "open": [OBJ], "close": ["d"], "teleport": ["d"], "focus": ["d"], "save-back": ["d"], "reset-all": ["d"],
        "recompile": ["--target", "luau", "d"], "exec": ["viewer.teleport", "object_id=x"], "commands": [],
        "open-uri": ["vscode://x"], "history": ["--deleted", "d"], "restore": ["f", "2026-12-02T14:03:07Z.saved.lsl"],
        "resend": ["--force", "f"],
        "push": ["--plan", "--delete", "--stopped", "--force", "--no-rollback", "--verbose", "src", "d"],
        "pull": ["--delete", "d", "local"],
    }
    assert set(samples) == set(verbs.VERBS) == set(verbs.HANDLERS)
    for verb, args in samples.items():
        ns = parser.parse_args([verb, "--json", "--mount", "/m", *args])
        assert ns.command == verb and ns.json is True and ns.mount == "/m"
    with pytest.raises(SystemExit):
        parser.parse_args(["recompile", "--target", "java", "d"])
    with pytest.raises(SystemExit):
        parser.parse_args(["run"])
    # the old verbs are still there
    assert parser.parse_args(["mount", "-f", "--port", "9021", "/x"]).port == 9021
    assert parser.parse_args(["umount", "/x"]).mountpoint == "/x"


def test_completion_and_man_page_list_every_verb() -> None:
    bash = (REPO / "contrib" / "completion" / "slfs.bash").read_text()
    man = (REPO / "man" / "slfs.1").read_text()
    for verb in verbs.VERBS:
        assert re.search(rf"(?<![\w-]){re.escape(verb)}(?![\w-])", bash), verb
        assert f".B {verb.replace('-', chr(92) + '-')}" in man, verb


# --- mount selection ---------------------------------------------------------------------------


def entries(*mounts: str) -> list[dict[str, Any]]:
    return [{"pid": 1, "mountpoint": mp, "endpoint": "127.0.0.1:9020", "socket": f"{mp}.sock"} for mp in mounts]


def test_find_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "ab")
    os.mkdir(a)
    os.mkdir(b)
    both = entries(a, b)
    assert find_mount(mount=a, entries=both)["mountpoint"] == a
    assert find_mount(mount=a + "/", entries=both)["mountpoint"] == a
    assert find_mount(mount=f"{b}/x/y", entries=both)["mountpoint"] == b  # not a: ab is no child of a
    assert find_mount(path=f"{a}/Obj/main.luau", entries=both)["mountpoint"] == a
    assert find_mount(path=f"{b}/Obj", entries=both)["mountpoint"] == b
    monkeypatch.chdir(b)
    assert find_mount(entries=both)["mountpoint"] == b
    assert find_mount(path="Obj/x.lsl", entries=both)["mountpoint"] == b  # relative to the cwd
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ClientError, match=r"several mounts are running: .*; use --mount"):
        find_mount(entries=both)
    with pytest.raises(ClientError, match="several mounts"):
        find_mount(path="/elsewhere/x", entries=both)  # a path in no mount falls through
    assert find_mount(entries=entries(a))["mountpoint"] == a
    assert find_mount(path="/elsewhere/x", entries=entries(a))["mountpoint"] == a
    with pytest.raises(ClientError, match="no slfs mount is running"):
        find_mount(entries=[])
    with pytest.raises(ClientError, match="not an slfs mount"):
        find_mount(mount="/elsewhere", entries=both)
    # a symlink to a mount
    (tmp_path / "link").symlink_to(a)
    assert find_mount(path=str(tmp_path / "link" / "Obj"), entries=both)["mountpoint"] == a


def test_mount_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mp = str(tmp_path / "m")
    os.mkdir(mp)
    e = entries(mp)[0]
    assert mount_path(e, f"{mp}/Obj/x.lsl") == f"{mp}/Obj/x.lsl"
    assert mount_path(e, f"{mp}/Obj/../Obj/x.lsl") == f"{mp}/Obj/x.lsl"
    monkeypatch.chdir(mp)
    assert mount_path(e, "Obj/x.lsl") == f"{mp}/Obj/x.lsl"
    monkeypatch.chdir(tmp_path)
    assert mount_path(e, "Obj/x.lsl") == "Obj/x.lsl"  # outside the mount: relative to its root
    assert mount_path(e, "/elsewhere/x") == "/elsewhere/x"


# --- the client against a scripted server -------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Callable[[Callable[[socket.socket, Callable[[], dict[str, Any]]], None]], str]]:
    """serve(script) -> socket path; `script(conn, recv)` runs for one connection in a thread."""
    threads: list[threading.Thread] = []
    socks: list[socket.socket] = []

    def serve(script: Callable[[socket.socket, Callable[[], dict[str, Any]]], None]) -> str:
        path = str(tmp_path / f"s{len(socks)}.sock")
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(path)
        lsock.listen(1)
        socks.append(lsock)

        def run() -> None:
            conn, _ = lsock.accept()
            buf = b""

            def recv() -> dict[str, Any]:
                nonlocal buf
                while b"\n" not in buf:
                    chunk = conn.recv(4096)
                    if not chunk:
                        raise EOFError
                    buf += chunk
                line, buf = buf.split(b"\n", 1)
                return dict(json.loads(line))

            try:
                script(conn, recv)
            except (EOFError, OSError):
                pass
            finally:
                conn.close()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
        return path

    yield serve
    for s in socks:
        s.close()
    for t in threads:
        t.join(timeout=5)


def send(conn: socket.socket, *frames: dict[str, Any] | bytes) -> None:
    conn.sendall(b"".join(f if isinstance(f, bytes) else json.dumps(f).encode() + b"\n" for f in frames))


READY = {"type": "ready", "protocolVersion": 1, "supportedProtocolVersions": [1], "mount": "/m", "pid": 1}


def test_client_request_skips_events_and_other_answers(server: Any) -> None:
    def script(conn: socket.socket, recv: Callable[[], dict[str, Any]]) -> None:
        send(conn, READY)
        req = recv()
        assert req["type"] == "status" and isinstance(req["id"], str) and req["extra"] == 1
        send(conn, {"type": "event", "event": {"seq": 1}}, b"garbage\n\n",
             {"type": "response", "id": "someone-else", "success": True, "data": "no"},
             {"type": "future-frame"},
             {"type": "response", "id": req["id"], "command": "status", "success": True, "data": {"ok": 1}})
        req2 = recv()
        assert req2["id"] != req["id"]
        send(conn, {"type": "response", "id": req2["id"], "success": False, "error": "no such", "code": "ENOENT"})
        recv()

    with ControlClient(server(script)) as c:
        assert c.ready["mount"] == "/m"
        assert c.request("status", extra=1) == {"ok": 1}
        with pytest.raises(ClientError) as info:
            c.request("diag", path="/x")
        assert info.value.code == "ENOENT" and str(info.value) == "no such"


def test_client_checks_ready(server: Any) -> None:
    def not_ready(conn: socket.socket, recv: Callable[[], dict[str, Any]]) -> None:
        send(conn, {"type": "response", "success": True})
        recv()

    with pytest.raises(ClientError, match="ready"):
        ControlClient(server(not_ready))

    def wrong_version(conn: socket.socket, recv: Callable[[], dict[str, Any]]) -> None:
        send(conn, {"type": "ready", "protocolVersion": 9, "supportedProtocolVersions": [9]})
        recv()

    with pytest.raises(ClientError, match="protocol version"):
        ControlClient(server(wrong_version))

    def silent(conn: socket.socket, recv: Callable[[], dict[str, Any]]) -> None:
        recv()

    with pytest.raises(ClientError, match="timed out"):
        ControlClient(server(silent), connect_timeout=0.3)
    with pytest.raises(ClientError, match="cannot connect"):
        ControlClient("/nonexistent/slfs.sock")


def test_client_timeout_and_shutdown(server: Any) -> None:
    def slow(conn: socket.socket, recv: Callable[[], dict[str, Any]]) -> None:
        send(conn, READY)
        recv()
        recv()

    with ControlClient(server(slow)) as c, pytest.raises(ClientError, match="no answer") as info:
        c.request("run", _timeout=0.3, path="x")
    assert info.value.code == "ETIMEDOUT"

    def shutdown(conn: socket.socket, recv: Callable[[], dict[str, Any]]) -> None:
        send(conn, READY)
        recv()
        send(conn, {"type": "shutdown"})

    with ControlClient(server(shutdown)) as c, pytest.raises(ShutDown):
        c.request("status")


def test_client_subscribe(server: Any) -> None:
    def script(conn: socket.socket, recv: Callable[[], dict[str, Any]]) -> None:
        send(conn, READY)
        req = recv()
        assert req["type"] == "subscribe" and req["since"] == 5
        send(conn, {"type": "event", "event": {"seq": 6}},  # an event may precede the answer? skipped
             {"type": "response", "id": req["id"], "command": "subscribe", "success": True, "data": {"cursor": 7}},
             {"type": "event", "event": {"seq": 7}}, {"type": "event", "event": {"seq": 8}}, {"type": "shutdown"})

    with ControlClient(server(script)) as c:
        assert [e["seq"] for e in c.subscribe(since=5)] == [7, 8]


def test_run_verb_no_mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["status", "--json"]) == 1
    out, err = capsys.readouterr()
    # --json: a failure is a JSON error object too (the daemon's shape: error, code; and the exit)
    assert json.loads(out) == {"error": "no slfs mount is running", "code": "ENOENT", "exit": 1}
    assert "no slfs mount is running" in err
    assert cli.main(["open-uri", "--json", "vscode://lindenlab.sl-vscode-plugin/connect?port=80&object=" + OBJ]) == 2
    out, err = capsys.readouterr()
    assert json.loads(out)["exit"] == 2 and "1024" in json.loads(out)["error"] and "1024" in err
    # a malformed port is a usage error, never a traceback (int() refuses what isdigit() takes)
    for port in ("\u00b2\u00b2\u00b2\u00b2", "\u0669\u0660\u0662\u0660", "9020x", "", "1e4"):
        assert cli.main(["open-uri", f"vscode://lindenlab.sl-vscode-plugin/connect?port={port}&object=" + OBJ]) == 2
        assert "the port must be a number" in capsys.readouterr().err
    # a usage error argparse finds: the JSON error object too, exit 2
    with pytest.raises(SystemExit) as exited:
        cli.main(["recompile", "--json", "--target", "java", "x"])
    assert exited.value.code == 2
    data = json.loads(capsys.readouterr().out)
    assert data["exit"] == 2 and "--target" in data["error"]


def test_umount_of_what_is_not_mounted_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    plain = tmp_path / "plain"
    plain.mkdir()
    for path in (plain, tmp_path / "missing"):
        assert cli.main(["umount", str(path)]) == 1
        err = capsys.readouterr().err
        assert err == f"slfs: {path}: not mounted\n"  # not "is it busy?": nothing is mounted there


def test_mount_takes_a_real_port_and_a_bracketed_ipv6_host(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["mount", "--port", "65535", "/x"]).port == 65535
    for bad in ("0", "-1", "99999", "abc"):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(["mount", "--port", bad, "/x"])
        assert exit_.value.code == 2
        assert f"argument --port: '{bad}' is not a TCP port (1-65535)" in capsys.readouterr().err
    assert parser.parse_args(["mount", "--host", "[::1]", "/x"]).host == "::1"
    assert parser.parse_args(["mount", "--host", "::1", "/x"]).host == "::1"
