"""A hostile viewer's editor commands on a real mount (issue 21, items 1 and 2): `editor.open_file`
runs the real vim (as `-o open_cmd`) only on a file inside the mount, the path after `--` and the
line a checked integer; `editor.show_message` runs one notify-send at a time, its text bounded,
free of terminal escapes and after `--`.

Both programs are found on the daemon's PATH, where a stub directory comes first: its `vim`
records its argument vector and runs the real vim, its `notify-send` records and sleeps."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from support.mount import Mount, MountFactory, require_tool

from slfs.protocol.rpc_errors import INVALID_PARAMS

NOTIFY_SLEEP = 0.5


def stub_dir(tmp_path: Path) -> Path:
    """`vim` that records argv (a JSON line) and execs the real vim; `notify-send` that records
    argv, notes a run that overlaps another (an mkdir lock) and sleeps."""
    require_tool("vim")
    real_vim = shutil.which("vim")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    vim = stubs / "vim"
    vim.write_text(f"#!{sys.executable}\nimport json, os, sys\n"
                   f"with open({str(tmp_path / 'vim-argv')!r}, 'a') as f:\n"
                   "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
                   f"os.execv({real_vim!r}, [{real_vim!r}, *sys.argv[1:]])\n")
    notify = stubs / "notify-send"
    notify.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n"
                      f"lock, overlap = {str(tmp_path / 'notify-lock')!r}, {str(tmp_path / 'notify-overlap')!r}\n"
                      "try:\n    os.mkdir(lock)\n    mine = True\n"
                      "except FileExistsError:\n    mine = False\n    open(overlap, 'a').write('x')\n"
                      f"with open({str(tmp_path / 'notify-argv')!r}, 'a') as f:\n"
                      "    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
                      f"time.sleep({NOTIFY_SLEEP})\n"
                      "if mine:\n    os.rmdir(lock)\n")
    for stub in (vim, notify):
        stub.chmod(0o755)
    return stubs


def lines(path: Path) -> list[Any]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


async def stubbed_mount(mount_factory: MountFactory, tmp_path: Path, *options: str) -> Mount:
    stubs = stub_dir(tmp_path)
    m = await mount_factory(env={"PATH": f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}"},
                            options=list(options))
    assert m.sim is not None
    return m


async def open_file_events(m: Mount) -> list[dict[str, Any]]:
    text = (await m.read_bytes(".slfs", "events")).decode()
    return [e for e in (json.loads(x) for x in text.splitlines() if x.strip()) if e["type"] == "viewer.open_file"]


@pytest.mark.allow_log(
    r"^WARNING slfs\.model\.editor_commands: editor\.open_file: line",
    r"^WARNING slfs\.model\.workspace: editor\.open_file",
)
async def test_open_file_runs_vim_only_inside_the_mount(mount_factory: MountFactory, tmp_path: Path) -> None:
    result = tmp_path / "vim-result"
    # The real vim in ex mode writes the file it has open and its cursor line to `result`. No
    # `{path}`: slfs appends it, after `--` (vim takes it). `-o` splits at commas: none here.
    script = ("let r = expand('%:p') . ':' . line('.')", "enew", "put =r", "1d", f"w! {result}", "qa!")
    open_cmd = "vim -es -n -u NONE -i NONE +{line} " + " ".join(f"-c {shlex.quote(c)}" for c in script)
    m = await stubbed_mount(mount_factory, tmp_path, f"open_cmd={open_cmd}")
    assert m.sim is not None
    hello = await m.thread(os.path.realpath, m.path("Hello Cube", "Hello.lsl"))
    argv_log = tmp_path / "vim-argv"
    pwned = tmp_path / "pwned"

    async def send(path: str, line: Any = None) -> Any:
        params: dict[str, Any] = {"path": path}
        if line is not None:
            params["line"] = line
        (resp,) = await m.sim.execute_on_clients("editor.open_file", params)  # type: ignore[union-attr]
        return resp

    async def opened(path: str, line: Any, want_line: int) -> None:
        await m.thread(lambda: result.unlink(missing_ok=True))
        runs = len(lines(argv_log))
        assert (await send(path, line)).error is None
        await m.wait_for(lambda: m.thread(result.exists), 20, f"vim on {path} at {line!r}")
        await m.wait_for(lambda: m.thread(lambda: result.read_text().strip() != ""), 5, "vim's result")
        assert (await m.thread(result.read_text)).strip() == f"{hello}:{want_line}"
        argv = lines(argv_log)[runs]
        assert argv[-2:] == ["--", hello] and f"+{want_line}" in argv  # the real path, after `--`
        assert len(lines(argv_log)) == runs + 1

    async def refused(path: str, why: str) -> None:
        count = len(await open_file_events(m))
        runs = len(lines(argv_log))
        assert (await send(path, 3)).error is None  # the command is taken; opening it is refused

        async def told() -> bool:
            return len(await open_file_events(m)) > count
        await m.wait_for(told, 10, f"the refusal of {path}")
        event = (await open_file_events(m))[-1]
        assert event["path"] == path and why in event["error"] and "opened" not in event
        status = await m.status()
        assert "editor.open_file" in status["last_error"] and "refused" in status["last_error"]
        assert why in status["last_error"]
        assert f"editor.open_file {path}: refused: " in m.log_text()
        assert len(lines(argv_log)) == runs

    await opened(str(m.path("Hello Cube", "Hello.lsl")), 7, 7)
    await refused("/etc/passwd", "outside the mount")
    await m.thread(os.symlink, "/etc/passwd", m.path("Hello Cube", ".evil"))  # in the overlay
    await refused(str(m.path("Hello Cube", ".evil")), "outside the mount")
    await refused(f"{m.mnt}/../../../../../../etc/passwd", "outside the mount")
    await refused(f"+!touch {pwned}", "not an absolute path")
    await refused(f"-c!touch {pwned}", "not an absolute path")
    await refused(str(m.path("Hello Cube", "Nothing.lsl")), "cannot be resolved")
    assert not pwned.exists()

    # The line: a number out of bounds is line 1 (and a log line); anything not a number the
    # session refuses before slfs looks at it (-32602); nothing raw ever reaches vim.
    await opened(str(m.path("Hello Cube", "Hello.lsl")), -5, 1)
    await opened(str(m.path("Hello Cube", "Hello.lsl")), 1e20, 1)
    assert "line -5 is not a line number" in m.log_text() and "line 1e+20 is not a line number" in m.log_text()
    runs = len(lines(argv_log))
    for bad in ("1; rm -rf", "+q", True):
        resp = await send(str(m.path("Hello Cube", "Hello.lsl")), bad)
        assert resp.error is not None and resp.error.code == INVALID_PARAMS, bad
    await opened(str(m.path("Hello Cube", "Hello.lsl")), 2, 2)  # the refused ones started nothing
    assert len(lines(argv_log)) == runs + 1
    m.assert_clean_log()


@pytest.mark.allow_log(r"^ERROR slfs\.model\.editor_commands: viewer says: message")
async def test_show_message_runs_one_notifier_at_a_time_with_clean_text(mount_factory: MountFactory,
                                                                       tmp_path: Path) -> None:
    m = await stubbed_mount(mount_factory, tmp_path)
    assert m.sim is not None
    argv_log = tmp_path / "notify-argv"
    for i in range(50):
        message = f"\x1b]52;c;cm0gLXJmIH4=\x07message {i} \x1b[2J\x1b]0;title\x07" + "A" * 3000
        (resp,) = await m.sim.execute_on_clients("editor.show_message",
                                                 {"message": message, "level": "error" if i == 49 else "bogus"})
        assert resp.error is None

    async def last_shown() -> bool:
        runs = lines(argv_log)
        return bool(runs) and "message 49 " in runs[-1][-1] and not (tmp_path / "notify-lock").exists()
    with trio.fail_after(30):
        await m.wait_for(last_shown, 25, "the last message shown")
    await trio.sleep(NOTIFY_SLEEP * 2)  # nothing else starts after the latest
    runs = lines(argv_log)
    assert not (tmp_path / "notify-overlap").exists(), "two notifiers ran at once"
    assert 1 <= len(runs) < 50
    assert "dropped while one was showing" in m.log_text()
    for argv in runs:
        assert argv[:4] in (["-u", "low", "--", "Second Life"], ["-u", "critical", "--", "Second Life"])
        assert len(argv) == 5
        text = argv[4]
        assert text.startswith("message ") and len(text) <= 1000
        assert not any(c in text for c in "\x1b\x07\x9b")
    assert runs[-1][1] == "critical"
    m.assert_clean_log()
