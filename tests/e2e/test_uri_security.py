"""URIs from a browser (issue 21 item 9): `slfs open-uri` mounts only for the default viewer port
or a port the user listed (-o uri_ports), and a daemon started by a URI that never connects
within its wait (-o connect_wait) unmounts and exits instead of retrying for ever. Also item 10: a
mount without $XDG_RUNTIME_DIR starts although another user made /tmp/slfs-UID first."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import trio
from support.mount import MountFactory, is_mounted
from support.worlds import LAMP_ID

from slfs import cli
from slfs.cli.output import VerbError
from slfs.client import mounts

NOBODY = 65534


def uri(port: int) -> str:
    return f"vscode://lindenlab.sl-vscode-plugin/connect?port={port}&object={LAMP_ID}"


@pytest.fixture
def no_mounts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[int, float]]:
    """No mount is running; start_mount records what it would start instead of starting it."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("SLFS_PORT", raising=False)
    started: list[tuple[int, float]] = []

    def start(port: int, connect_wait: float = 0, **kw: Any) -> dict[str, Any]:
        started.append((port, connect_wait))
        raise VerbError("(not started in this test)", 7)

    monkeypatch.setattr(mounts, "start_mount", start)
    return started


def test_a_port_not_listed_is_refused(no_mounts: list[tuple[int, float]], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["open-uri", uri(9999)]) == 2
    err = capsys.readouterr().err
    assert "port 9999 is not the default viewer port (9020)" in err and "-o uri_ports=9999" in err
    assert cli.main(["open-uri", "-o", "uri_ports=9021,9022", "--json", uri(9999)]) == 2
    captured = capsys.readouterr()
    assert "nor in -o uri_ports=9021,9022" in json.loads(captured.out)["error"]
    assert "nor in -o uri_ports=9021,9022" in captured.err
    assert no_mounts == []


def test_the_default_port_and_listed_ports_are_accepted(no_mounts: list[tuple[int, float]]) -> None:
    assert cli.main(["open-uri", uri(9020)]) == 7
    assert cli.main(["open-uri", "-o", "uri_ports=9021,9022", uri(9022)]) == 7
    assert cli.main(["open-uri", "-o", "uri_ports=9021", "-o", "connect_wait=3", uri(9021)]) == 7
    # A URI-started mount always has a first-connection wait.
    assert no_mounts == [(9020, mounts.START_WAIT), (9022, mounts.START_WAIT), (9021, 3.0)]


def test_open_uri_takes_only_its_own_options(no_mounts: list[tuple[int, float]],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["open-uri", "-o", "open_cmd=evil", uri(9020)]) == 2
    assert "open-uri takes -o uri_ports and -o connect_wait only, not -o open_cmd" in capsys.readouterr().err
    assert cli.main(["open-uri", "-o", "uri_ports=80", uri(9020)]) == 2
    assert "'80' is not a port from 1024 to 65535" in capsys.readouterr().err
    assert no_mounts == []


async def test_a_daemon_with_connect_wait_exits_when_no_viewer_connects(mount_factory: MountFactory) -> None:
    m = await mount_factory(sim=False, start=False)  # nothing listens on m.port
    log = m.logdir / "daemon.log"
    argv = [sys.executable, "-m", "slfs", "mount", "-f", "--port", str(m.port), "-o", "connect_wait=1", str(m.mnt)]
    with open(log, "wb") as logf:
        proc = await trio.lowlevel.open_process(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                                env=m.env)
    try:
        with trio.fail_after(60):  # generous: the wait is 1 s, then a clean unmount
            code = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    text = log.read_text()
    assert code == 1, text
    assert f"no viewer connected on 127.0.0.1:{m.port} within 1 s (-o connect_wait" in text, text
    assert "unmounted" in text and "Traceback" not in text, text
    assert not is_mounted(m.mnt)
    assert list((Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts").glob("*.json")) == []


async def test_open_uri_against_no_viewer_leaves_no_daemon(mount_factory: MountFactory, tmp_path: Path) -> None:
    m = await mount_factory(sim=False, start=False)
    home = tmp_path / "home"
    home.mkdir()
    env = {**m.env, "HOME": str(home)}
    argv = [sys.executable, "-m", "slfs", "open-uri", "-o", f"uri_ports={m.port}", "-o", "connect_wait=2",
            uri(m.port)]
    with trio.fail_after(90):
        res = await trio.run_process(argv, capture_stdout=True, capture_stderr=True, check=False, env=env)
    err = res.stderr.decode()
    assert res.returncode == 1 and "not connected to the viewer" in err, err
    # The daemon it started gave up as well: unmounted, out of the registry.
    registry = Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts"
    with trio.fail_after(60):
        while is_mounted(home / "sl") or list(registry.glob("*.json")):
            await trio.sleep(0.1)
    logs = list((Path(m.env["XDG_STATE_HOME"]) / "slfs").glob("mount-*.log"))
    assert logs and "no viewer connected" in logs[0].read_text()


async def test_mount_starts_although_another_user_made_the_tmp_dir(mount_factory: MountFactory) -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            raise AssertionError("CI runs as root")
        pytest.skip("making a dir of another uid needs root")
    squatted = Path(f"/tmp/slfs-{os.getuid()}")  # what the runtime dir was without $XDG_RUNTIME_DIR
    if squatted.exists() or squatted.is_symlink():
        pytest.skip(f"{squatted} exists (not ours to replace)")
    squatted.mkdir(mode=0o700)
    # A short state dir: the socket's path must fit sun_path (108 bytes) wherever pytest's
    # temporary dirs are (under xdist they are deeper), or the daemon rightly falls back to /tmp.
    state = Path(tempfile.mkdtemp(prefix="slfs-state-"))
    try:
        os.chown(squatted, NOBODY, NOBODY)
        m = await mount_factory(env={"XDG_RUNTIME_DIR": "", "XDG_STATE_HOME": str(state)})
        run = Path(m.env["XDG_STATE_HOME"]) / "slfs" / "run"
        (entry_file,) = (run / "mounts").glob("*.json")
        assert json.loads(entry_file.read_text())["socket"].startswith(f"{run}/")
        assert "Hello Cube" in await m.out("ls", m.mnt)
        out = await m.out(sys.executable, "-m", "slfs", "status", "--mount", m.mnt)
        assert "state: connected" in out
    finally:
        os.rmdir(squatted)
        shutil.rmtree(state, ignore_errors=True)
