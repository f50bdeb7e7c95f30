"""Human output where people read (issue 36, item 2), end to end: `slfs events` without --json (a
line per event with the mount-relative path), `-f` from the end like tail -f (--since for the past)
and ending with a message when the mount goes away; `slfs status` on a terminal ends with a
per-object summary; an error says its prefix once."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import trio
from support.cli import slfs
from support.mount import Mount
from support.terminal import on_a_terminal

CUBE = "Hello Cube"
HELLO = f"{CUBE}/Hello.lsl"


async def test_events_prints_a_line_per_event(mounted: Mount) -> None:
    m = mounted
    await slfs(m, "reset", m.path(HELLO))
    _rc, out, _err = await slfs(m, "events")
    lines = out.splitlines()
    assert lines and "{" not in lines[0]
    assert " connected " in lines[0] or lines[0].endswith(" connected"), lines[0]
    said = [ln for ln in lines if " runtime.debug " in ln and "Hello from the cube!" in ln]
    assert said, out
    # local time, then the mount-relative path with its real names, the kind, the message
    stamp, rest = said[-1].split("  ", 1)
    assert len(stamp) in (8, 19) and stamp[-3] == ":", said[-1]
    assert rest.startswith(f"{HELLO}  runtime.debug  Hello from the cube!"), said[-1]
    assert str(m.mnt) not in out  # paths are relative to the mount
    assert "\x1b[" not in out  # no colour off a terminal


async def test_events_follow_starts_at_the_end(mounted: Mount) -> None:
    m = mounted
    _rc, before, _err = await slfs(m, "events")
    assert before.strip()
    proc = await trio.lowlevel.open_process([sys.executable, "-m", "slfs", "events", "-f"],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=m.env)
    assert proc.stdout is not None
    got = bytearray()

    async def pump() -> None:
        while chunk := await proc.stdout.receive_some(65536):  # type: ignore[union-attr]
            got.extend(chunk)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump)

            async def said_hello() -> bool:
                # the follower subscribes some time after it starts: say hello until it shows one
                await slfs(m, "reset", m.path(HELLO))
                return b"Hello from the cube!" in got
            await m.wait_for(said_hello, 20, "slfs events -f shows a new runtime line")
            nursery.cancel_scope.cancel()
        text = got.decode()
        assert " connected" not in text, text  # nothing of the past
        assert all(" connected " not in ln for ln in text.splitlines())
    finally:
        proc.terminate()
        await proc.wait()


async def test_events_follow_with_since_replays_the_past(mounted: Mount) -> None:
    m = mounted
    proc = await trio.lowlevel.open_process([sys.executable, "-m", "slfs", "events", "-f", "--since", "0"],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=m.env)
    assert proc.stdout is not None
    got = bytearray()
    try:
        with trio.fail_after(20):
            while b" connected" not in got:
                chunk = await proc.stdout.receive_some(65536)
                assert chunk, "slfs events -f --since 0 exited"
                got.extend(chunk)
    finally:
        proc.terminate()
        await proc.wait()


@pytest.mark.own_mount("stops the daemon: `events -f` must end, saying why, when the mount goes away")
async def test_events_follow_says_when_the_mount_goes_away(mounted: Mount) -> None:
    m = mounted
    proc = await trio.lowlevel.open_process([sys.executable, "-m", "slfs", "events", "-f", "--since", "0"],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=m.env)
    assert proc.stdout is not None and proc.stderr is not None
    got = bytearray()
    try:
        with trio.fail_after(20):
            while b" connected" not in got:  # subscribed
                chunk = await proc.stdout.receive_some(65536)
                assert chunk, "slfs events -f exited early"
                got.extend(chunk)
        await m.stop_daemon()
        with trio.fail_after(10):
            await proc.wait()
        err = b""
        while chunk := await proc.stderr.receive_some(65536):
            err += chunk
        assert proc.returncode == 0
        assert f"slfs: {m.mnt}: the mount went away".encode() in err, err
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _stdout_on_a_terminal(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    return on_a_terminal(argv, env, stderr=subprocess.DEVNULL)  # what it prints on stdout alone


async def test_status_on_a_terminal_ends_with_a_summary_per_object(mounted: Mount) -> None:
    m = mounted
    env: dict[str, Any] = {**m.env, "NO_COLOR": "1"}
    rc, text = await m.thread(_stdout_on_a_terminal, [sys.executable, "-m", "slfs", "status"], env)
    assert rc == 0, text
    assert "state: connected" in text
    _head, _, summary = text.partition("\nscripts per object:\n")
    assert summary, text
    lines = summary.splitlines()
    assert len(lines) == 6, summary  # one per published object
    cube = next(ln for ln in lines if ln.strip().startswith(CUBE))
    assert "running" in cube and "stopped" in cube and "faulted" in cube, cube
    assert "\x1b[" not in text  # NO_COLOR
    # with colour on a terminal, and never off one
    rc, coloured = await m.thread(_stdout_on_a_terminal, [sys.executable, "-m", "slfs", "status"],
                                  {k: v for k, v in env.items() if k != "NO_COLOR"} | {"TERM": "xterm"})
    assert rc == 0 and "\x1b[" in coloured
    _rc, plain, _err = await slfs(m, "status")
    assert "per object" not in plain


async def test_errors_say_their_prefix_once(mounted: Mount) -> None:
    m = mounted
    for verb in ("stop", "run", "reset"):
        target = m.path(CUBE, "nope.lsl")
        rc, _out, err = await slfs(m, verb, target, check=False)
        assert rc == 1
        assert err.count(str(target)) == 1, err
        assert err.count(f"{verb} ") == 1 and err.startswith(f"slfs: {verb} {target}: "), err
    notecard = m.path(CUBE, "Notes\u2215Todo")
    rc, _out, err = await slfs(m, "stop", notecard, check=False)
    assert rc == 1 and err.count(str(notecard)) == 1, err
