"""Commands the viewer sends to slfs: show_message becomes an event, open_file runs the user's
editor as an argument vector (never a shell), and only when one is configured."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import trio
from support.mount import MountFactory


def events(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.allow_log(r"^WARNING slfs\.model\.editor_commands: viewer says: Reset done")
async def test_show_message_is_an_event(mount_factory: MountFactory) -> None:
    m = await mount_factory()
    assert m.sim is not None
    (resp,) = await m.sim.execute_on_clients("editor.show_message", {"message": "Reset done", "level": "warn"})
    assert resp.error is None and resp.result == {"success": True}
    text = (await m.read_bytes(".slfs", "events")).decode()
    assert any(e["type"] == "viewer.message" and e["message"] == "Reset done" for e in events(text))


async def test_open_file_runs_the_configured_editor_without_a_shell(mount_factory: MountFactory,
                                                                   tmp_path: Path) -> None:
    record = tmp_path / "argv.json"
    editor = tmp_path / "editor.py"
    editor.write_text("#!/usr/bin/env python3\nimport json, sys\n"
                      f"json.dump(sys.argv[1:], open({str(record)!r}, 'w'))\n")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    m = await mount_factory(options=[f"open_cmd={editor} --line {{line}} {{path}}"])
    assert m.sim is not None
    # A file in the mount (only those are opened: tests/e2e/test_editor_launch.py) named to break a shell.
    hostile = m.path("Hello Cube", ".a b; touch pwned $(touch pwned)")
    await m.thread(hostile.write_text, "x\n")
    (resp,) = await m.sim.execute_on_clients("editor.open_file", {"path": str(hostile), "line": 7})
    assert resp.error is None
    with trio.fail_after(10):
        while not record.exists():
            await trio.sleep(0.05)
    real = await m.thread(os.path.realpath, hostile)
    assert json.loads(record.read_text()) == ["--line", "7", real]  # one word, no shell
    assert not (await m.thread(os.path.exists, m.path("Hello Cube", "pwned")))


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: editor\.open_file")
async def test_open_file_without_an_editor_is_only_an_event(mount_factory: MountFactory) -> None:
    m = await mount_factory()
    assert m.sim is not None
    (resp,) = await m.sim.execute_on_clients("editor.open_file", {"path": "/x/y.lsl"})
    assert resp.error is None

    async def told() -> bool:
        # The path is resolved in a worker thread after the answer (never on the loop that serves
        # the mount), and the event follows it.
        text = (await m.read_bytes(".slfs", "events")).decode()
        return any(e["type"] == "viewer.open_file" and e["path"] == "/x/y.lsl" for e in events(text))

    await m.wait_for(told, 10, "the viewer.open_file event")
    assert os.path.ismount(m.mnt)
