"""A mount among other users: an impostor on the viewer's port, a long $XDG_RUNTIME_DIR, a remote
--host."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support.foreign import NOBODY, foreign_listener
from support.mount import MountFactory

from slfs import paths


@pytest.mark.allow_log(r"^WARNING slfs\.session\.session: the listener on")
async def test_impostor_on_the_viewer_port_is_refused_until_the_viewer_comes(mount_factory: MountFactory) -> None:
    m = await mount_factory(sim=False, start=False)
    want = f"the listener on 127.0.0.1:{m.port} belongs to uid {NOBODY}, not to us (uid {os.geteuid()}); not connecting"
    async with foreign_listener(m.port) as impostor:
        await m.start_daemon(wait_state=None)

        async def refused() -> bool:
            status = await m.status()
            return status.get("state") == "connecting" and want in status.get("state_detail", "")

        await m.wait_for(refused, 20, "the status names the impostor's uid")
    assert impostor.report == {"connections": 0, "bytes": 0}
    assert want in m.log_text()
    # The real viewer (ours) starts later on the same port: the mount connects to it.
    await m.start_sim()
    await m.wait_live("connected")
    assert "Hello Cube" in await m.out("ls", m.mnt)


# Loaded by the daemon's Python at startup (PYTHONPATH): the look before connecting always "sees our
# own listener", as when another uid takes the port between that look and the connect.
LOST_RACE = """
from slfs.session import peer


async def _saw_ours(host, port):
    return None


peer.check_listener = _saw_ours
"""


@pytest.mark.allow_log(r"^WARNING slfs\.session\.session: the connection to")
async def test_impostor_that_wins_the_race_for_the_port_gets_not_a_byte(mount_factory: MountFactory,
                                                                       tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(LOST_RACE)
    pythonpath = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p)
    m = await mount_factory(sim=False, start=False)
    want = (f"the connection to 127.0.0.1:{m.port} is served by uid {NOBODY}, not by us (uid {os.geteuid()}); "
            "not talking to it")
    async with foreign_listener(m.port) as impostor:
        await m.start_daemon(wait_state=None, extra_env={"PYTHONPATH": pythonpath})

        async def refused() -> bool:
            status = await m.status()
            return status.get("state") == "connecting" and want in status.get("state_detail", "")

        await m.wait_for(refused, 20, "the status names the uid serving the connection")
    assert impostor.report is not None
    assert impostor.report["connections"] >= 1  # it was connected to (the first look was fooled) ...
    assert impostor.report["bytes"] == 0  # ... and got not a byte: no upgrade, no challenge answer
    warned = [line for line in m.log_text().splitlines() if line.endswith(f"WARNING slfs.session.session: {want}")]
    assert len(warned) == 1  # logged once, not once per retry
    # Our viewer starts later on the same port: the connection is ours, and the mount takes it.
    await m.start_sim()
    await m.wait_live("connected")
    assert "Hello Cube" in await m.out("ls", m.mnt)


async def test_long_runtime_dir_gets_a_short_control_socket(mount_factory: MountFactory, tmp_path: Path) -> None:
    long_dir = tmp_path / ("r" * (150 - len(str(tmp_path)) - 1))
    assert len(str(long_dir)) == 150
    long_dir.mkdir(mode=0o700)
    m = await mount_factory(env={"XDG_RUNTIME_DIR": str(long_dir)})
    (entry_file,) = (long_dir / "slfs" / "mounts").glob("*.json")
    entry = json.loads(entry_file.read_text())
    # A dir of its own with a random name (issue 21 item 10: no name another user could make first).
    sock = Path(entry["socket"])
    assert sock.name == f"{paths.mount_key(m.mnt)}.sock" and sock.parent.parent == Path(paths.FALLBACK_RUNTIME_BASE)
    assert sock.parent.name.startswith(f"slfs-{os.getuid()}-") and (sock.parent.stat().st_mode & 0o777) == 0o700
    # The CLI verbs find the mount and its socket through the registry.
    out = await m.out(sys.executable, "-m", "slfs", "status", "--mount", m.mnt)
    assert "state: connected" in out
    m.assert_clean_log()
    await m.stop_daemon()
    assert not sock.parent.exists()  # removed with the daemon


async def test_remote_host_needs_the_option(mount_factory: MountFactory) -> None:
    m = await mount_factory(sim=False, start=False, args=("--host", "192.0.2.1"))
    res = await m.run(sys.executable, "-m", "slfs", "mount", "-f", "--host", "192.0.2.1", m.mnt, check=False)
    assert res.returncode == 2
    assert b"--host 192.0.2.1: not a loopback address" in res.stderr
    await m.start_daemon(wait_state=None, options=["allow_remote_viewer"])
    status = await m.status()
    assert status["state"] == "connecting" and "192.0.2.1" in status["state_detail"]
