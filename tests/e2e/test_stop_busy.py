"""Ctrl-C on `slfs mount -f` in a terminal (tmux) while programs hold the mount: the daemon names
them at once, waits for them and for the pending saves; a second Ctrl-C detaches the mount lazily
and exits, keeping what was unsaved in the recovery folder (issue 36, item 5)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from support.mount import Mount, MountFactory, is_mounted, require_tool

# The stop is the daemon's alone: nothing a viewer generation changes. G2 lists objects at once.
pytestmark = [pytest.mark.generations("G2"),
              pytest.mark.allow_log(r"is in use by \d+ \(", r"received again: detaching",
                                    r"detached .* lazily", r"kept \d+ unsaved text", r"unsaved .* at shutdown",
                                    r"daemon stopped before it was saved", r"could not save")]


class Pane:
    """`slfs mount -f` in a tmux pane of its own: a terminal, as a user has one."""

    def __init__(self, m: Mount) -> None:
        self.m = m
        self.name = f"slfs-stop-{uuid.uuid4().hex[:8]}"

    async def start(self) -> None:
        m = self.m
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in m.env.items()
                       if k.startswith(("XDG_", "PYTHON", "HOME", "PATH")))
        mount = shlex.join([sys.executable, "-m", "slfs", "mount", "-f", "--port", str(m.port), str(m.mnt)])
        # bash waits out the daemon (its trap only runs after), then says how it ended.
        script = f"trap : INT TERM; env {env} {mount}; echo slfs-exit=$?; sleep 600"
        await m.run("tmux", "new-session", "-d", "-s", self.name, "-x", "200", "-y", "60", "bash", "-c", script)
        await m.wait_live("connected")

    async def screen(self) -> str:
        res = await self.m.run("tmux", "capture-pane", "-p", "-J", "-S", "-500", "-t", self.name, check=False)
        return res.stdout.decode(errors="replace")

    async def wait_screen(self, text: str, timeout: float) -> str:
        found = ""

        async def shows() -> bool:
            nonlocal found
            found = await self.screen()
            return text in found

        try:
            await self.m.wait_for(shows, timeout, f"{text!r} on the terminal")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the terminal shows:\n{found}") from None
        return found

    async def ctrl_c(self) -> None:
        await self.m.run("tmux", "send-keys", "-t", self.name, "C-c")

    async def close(self) -> None:
        """The daemon's output becomes the mount's log (checked as every daemon log is)."""
        text = await self.screen()
        log = self.m.logdir / "daemon-tmux.log"
        log.write_text(text)
        self.m.logs.append(log)
        await self.m.run("tmux", "kill-session", "-t", self.name, check=False)


@asynccontextmanager
async def pane_mount(mount_factory: MountFactory, **kw: object) -> AsyncIterator[tuple[Mount, Pane]]:
    require_tool("tmux")
    m = await mount_factory(start=False, **kw)
    pane = Pane(m)
    try:
        await pane.start()
        yield m, pane
    finally:
        with trio.CancelScope(shield=True):
            await pane.close()
            if is_mounted(m.mnt):
                subprocess.run(["fusermount3", "-u", "-z", str(m.mnt)], capture_output=True, timeout=30)


@asynccontextmanager
async def holder(m: Mount, *argv: str) -> AsyncIterator[trio.Process]:
    proc = await trio.lowlevel.open_process(list(argv), cwd=m.mnt, stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        with trio.CancelScope(shield=True):
            proc.kill()
            await proc.wait()


async def test_ctrl_c_names_the_holders_and_unmounts_when_they_leave(mount_factory: MountFactory) -> None:
    async with pane_mount(mount_factory) as (m, pane):
        async with holder(m, "sleep", "600") as proc:
            await pane.ctrl_c()
            # The names come at once: the bound is generous for a loaded machine, the point is
            # that nothing (saves, the holder) is waited for first.
            screen = await pane.wait_screen(f"is in use by {proc.pid} (sleep 600)", 10)
            assert "press Ctrl-C again" in screen
            assert is_mounted(m.mnt)
            assert "Hello Cube" in await m.thread(os.listdir, m.mnt)  # still served while it waits
        screen = await pane.wait_screen("slfs-exit=0", 30)
        assert not is_mounted(m.mnt)
        assert "detached" not in screen


async def test_a_second_ctrl_c_detaches_and_keeps_the_unsaved_text(mount_factory: MountFactory) -> None:
    """A file written and not closed, whose save at shutdown hangs on the viewer: the second
    Ctrl-C gives up on it, keeps the text in the recovery folder and says so, and exits."""
    slow = {"method_latency_ms": {"object.content.save": 60000}}
    async with pane_mount(mount_factory, sim_kwargs=slow) as (m, pane):
        text = "// written, never closed\ndefault { state_entry() { llSay(0, \"kept\"); } }\n"
        writer = ("import sys, time\n"
                  "f = open(sys.argv[1], 'w')\n"
                  "f.write(sys.argv[2]); f.flush()\n"
                  "print('written', flush=True); time.sleep(600)\n")
        async with holder(m, sys.executable, "-c", writer, "Hello Cube/Hello.lsl", text) as proc:
            await m.wait_for(lambda: _holds_open(proc.pid, m), 15, "the writer has the file open")
            await pane.ctrl_c()
            await pane.wait_screen(f"is in use by {proc.pid} (", 10)
            await m.wait_for(lambda: _saving(m), 30, "the shutdown's save of the open file sent")
            await pane.ctrl_c()
            screen = await pane.wait_screen("slfs-exit=0", 30)
            assert "received again: detaching" in screen
            assert "kept 1 unsaved text(s) in the recovery folder" in screen
            assert "detached" in screen and "lazily" in screen
            assert not is_mounted(m.mnt)
        recovery = os.path.join(m.env["XDG_STATE_HOME"], "slfs", "recovery")
        kept = [os.path.join(recovery, n) for n in os.listdir(recovery) if "Hello.lsl" in n]
        assert kept and any(Path(p).read_text() == text for p in kept), kept


async def _holds_open(pid: int, m: Mount) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith(str(m.mnt) + "/")
                   for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


async def _saving(m: Mount) -> bool:
    assert m.sim is not None
    return any(meth == "object.content.save" for meth, _p in m.sim.calls)


async def test_umount_of_a_busy_mount_names_the_holders(mount_factory: MountFactory) -> None:
    m = await mount_factory()
    async with holder(m, "sleep", "600") as proc:
        res = await m.run(sys.executable, "-m", "slfs", "umount", m.mnt, check=False)
        assert res.returncode == 1
        assert res.stderr.decode() == (f"slfs: could not unmount {m.mnt}: it is in use by {proc.pid} (sleep 600): "
                                       "close their files there (and leave it), then try again\n")
        assert is_mounted(m.mnt)
    await m.run(sys.executable, "-m", "slfs", "umount", m.mnt)
    assert not is_mounted(m.mnt)
