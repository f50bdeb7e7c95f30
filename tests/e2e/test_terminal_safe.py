"""Network text never reaches a terminal raw (issue 21, item 8): names in `find`'s output, the
status file, the daemon's log and the CLI's output hold no control character but tab and newline;
`--json` keeps the exact text, escaped."""

from __future__ import annotations

import json
import os
import re

import pytest
from support.cli import slfs
from support.mount import Mount, MountFactory
from support.worlds import LAMP_ID

from slfs.sim.world import sample_world

# An OSC that sets the title, one that writes the clipboard, a CSI that clears the screen, an 8-bit
# CSI, a carriage return that overwrites the line, a bell.
HOSTILE = "\x1b]0;pwned\x07\x1b]52;c;aGk=\x07\x1b[2J\x9b31m\rX\x07"
# Any C0 control but tab and newline, DEL, C1: as bytes of UTF-8 output.
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def assert_safe(data: bytes, what: str) -> None:
    found = RAW.search(data)
    assert found is None, f"{what} holds {found.group()!r}: {data[max(0, found.start() - 40):found.end() + 40]!r}"


@pytest.mark.allow_log(r"^WARNING slfs\.model\.editor_commands: viewer says: helloX")
async def test_hostile_names_and_messages_reach_no_terminal_raw(mount_factory: MountFactory) -> None:
    world = sample_world()
    world.agent_name = "Resident" + HOSTILE
    m = await mount_factory(world)
    assert m.sim is not None
    await m.sim.publish(LAMP_ID)
    await m.sim.rename_prim(LAMP_ID, "Lamp" + HOSTILE)

    async def renamed() -> bool:
        return any(name.startswith("Lamp\u241b]0;pwned") for name in os.listdir(m.mnt))

    await m.wait_for(renamed, 20, "the renamed object")
    (shown,) = [name for name in os.listdir(m.mnt) if name.startswith("Lamp")]
    assert shown == "Lamp\u241b]0;pwned\u2407\u241b]52;c;aGk=\u2407\u241b[2J\ufffd31m\u240dX\u2407"

    # What people run over the tree prints names raw: find, grep -r -l, a shell glob.
    found = (await m.run("find", m.mnt)).stdout
    assert_safe(found, "find's output")
    assert b"Lamp" in found
    assert_safe((await m.sh(f"printf '%s\\n' {m.mnt}/*")).stdout, "a shell glob")

    # The viewer's message lands in the daemon's log.
    await m.sim.execute_on_clients("editor.show_message", {"level": "warn", "message": "hello" + HOSTILE})
    await m.wait_for(lambda: _logged(m, "hello"), 20, "the viewer's message in the log")

    status_file = await m.read_bytes(".slfs", "status")
    assert b"Resident" in status_file
    assert_safe(status_file, ".slfs/status")

    _rc, out, err = await slfs(m, "status", "--mount", m.mnt)
    assert "Resident" in out
    assert_safe(out.encode(), "slfs status")
    assert_safe(err.encode(), "slfs status (stderr)")
    # JSON keeps the exact text, escaped.
    _rc, out, _err = await slfs(m, "status", "--json", "--mount", m.mnt)
    assert_safe(out.encode(), "slfs status --json")
    assert json.loads(out)["agent"] == "Resident" + HOSTILE

    assert_safe(m.log_text().encode("utf-8", "surrogateescape"), "the daemon's log")


async def _logged(m: Mount, word: str) -> bool:
    return f"viewer says: {word}" in m.log_text()
