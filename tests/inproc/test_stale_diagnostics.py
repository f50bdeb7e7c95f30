"""Diagnostics describe the in-world text (no mount): an attempt that never reached the item (an
include not found) is forgotten once a save finds the file holding the in-world text again, and the
in-world text's own diagnostics come back."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from support.inproc import fails, fs_against_sim

from slfs.sim import sample_world

# Built (a directive), and failing to compile in-world: its diagnostics describe the in-world text.
BUILT_BAD = '#define GREETING "hi"\ndefault\n{\n    state_entry()\n    {\n        llOwnerSay(GREETING @);\n    }\n}\n'
DIAG = "Hello Cube/.slfs/Hello.lsl.diag"


async def test_the_inworld_texts_diagnostics_come_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sample_world()) as fs:
        await fs.write_file("Hello Cube/Hello.lsl", BUILT_BAD.encode())  # stored, not compiled
        inworld = (await fs.read_file(DIAG)).decode()
        assert ":6:" in inworld and "missing.lsl" not in inworld, inworld
        attempt = '#include "missing.lsl"\n' + BUILT_BAD
        assert await fails(fs.write_file("Hello Cube/Hello.lsl", attempt.encode())) == errno.EIO
        assert "missing.lsl" in (await fs.read_file(DIAG)).decode()
        await fs.write_file("Hello Cube/Hello.lsl", BUILT_BAD.encode())  # nothing to send
        assert (await fs.read_file(DIAG)).decode() == inworld
        # And a failed attempt on a script with no report before leaves none once undone.
        hello = next(i for i in fs.ws.compiles)
        del fs.ws.compiles[hello]
        assert await fails(fs.write_file("Hello Cube/Hello.lsl", attempt.encode())) == errno.EIO
        await fs.write_file("Hello Cube/Hello.lsl", BUILT_BAD.encode())
        assert await fs.read_file(DIAG) == b""
