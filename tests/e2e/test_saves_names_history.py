"""Issue 33 on a real mount, on every viewer generation: a compile answer of any bytes never fails
a save that landed; diagnostics describe the in-world text once the file holds it again; a name
the viewer cannot hold fails with EILSEQ or EINVAL and says why; history version names sort in
time order with plain `ls`."""

from __future__ import annotations

import errno
import json
from typing import Any

import pytest
from support.cli import slfs
from support.mount import Mount, MountFactory
from support.texts import BAD_LSL
from support.writes import errno_of, recovery_files, write_file

from slfs.protocol.compile_output import UNPRINTABLE

pytestmark = pytest.mark.generations()

CUBE = "Hello Cube"
BUILT = '#define GREETING "hello"\ndefault\n{\n    state_entry()\n    {\n        llOwnerSay(GREETING);\n    }\n}\n'


def item_named(m: Mount, name: str) -> Any:
    assert m.sim is not None
    for obj in m.sim.world.objects.values():
        for prim in obj.prims():
            for item in prim.inventory:
                if item.name == name:
                    return item
    raise KeyError(name)


def events(m: Mount) -> list[dict[str, Any]]:
    return [json.loads(line) for line in m.path(".slfs", "events").read_text().splitlines()]


async def diag_of(m: Mount, *parts: str) -> str:
    *folder, name = parts
    return str(await m.thread(m.path(*folder, ".slfs", f"{name}.diag").read_text))


# --- a compile answer of any bytes ----------------------------------------------------------------


async def test_a_verdict_of_nul_bytes_never_fails_the_save(mount_factory: MountFactory) -> None:
    m = await mount_factory(sim_kwargs={"compile_failure": "nul"})
    hello = item_named(m, "Hello")
    assert await m.thread(errno_of, write_file, m.path(CUBE, "Hello.lsl"), BAD_LSL.encode()) == 0
    assert m.sim is not None and m.sim.item(hello.item_id).content == BAD_LSL
    assert not recovery_files(m)
    diag = (await diag_of(m, CUBE, "Hello.lsl")).splitlines()
    assert diag == [f"{m.mnt}/{CUBE}/Hello.lsl:0:0: error: {UNPRINTABLE}"]
    assert diag[0] in await m.thread(m.path(".slfs", "diagnostics").read_text)
    compile_event = [e for e in events(m) if e["type"] == "compile"][-1]
    assert compile_event["compiled"] is False
    assert [d["message"] for d in compile_event["diagnostics"]] == [UNPRINTABLE]
    assert await m.read_bytes(CUBE, "Hello.lsl") == BAD_LSL.encode()


# --- diagnostics describe the in-world text --------------------------------------------------------


async def test_a_failed_include_is_forgotten_once_the_file_holds_the_inworld_text(mounted: Mount) -> None:
    m = mounted
    path = m.path(CUBE, "Hello.lsl")
    assert await m.thread(errno_of, write_file, path, BUILT.encode()) == 0  # built: an envelope in-world
    assert await diag_of(m, CUBE, "Hello.lsl") == ""
    missing = '#include "missing.lsl"\n' + BUILT
    assert await m.thread(errno_of, write_file, path, missing.encode()) == errno.EIO
    diag = await diag_of(m, CUBE, "Hello.lsl")
    assert "missing.lsl" in diag, diag
    assert "missing.lsl" in await m.thread(m.path(".slfs", "diagnostics").read_text)
    # The in-world text again: nothing to send, and nothing of the failed attempt is shown.
    saves_before = sum(1 for meth, _p in m.sim.calls if meth == "object.content.save") if m.sim else 0
    assert await m.thread(errno_of, write_file, path, BUILT.encode()) == 0
    assert m.sim is not None and sum(1 for meth, _p in m.sim.calls if meth == "object.content.save") == saves_before
    assert await diag_of(m, CUBE, "Hello.lsl") == ""
    assert "missing.lsl" not in await m.thread(m.path(".slfs", "diagnostics").read_text)
    rc, out, err = await slfs(m, "diag", path, check=False)
    assert rc == 0 and "missing.lsl" not in out + err, (rc, out, err)
