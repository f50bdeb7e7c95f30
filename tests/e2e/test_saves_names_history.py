"""Issue 33 on a real mount, on every viewer generation: a compile answer of any bytes never fails
a save that landed; diagnostics describe the in-world text once the file holds it again; a name
the viewer cannot hold fails with EILSEQ or EINVAL and says why; history version names sort in
time order with plain `ls`."""

from __future__ import annotations

import errno
import json
import os
from typing import Any

import pytest
from support import worlds
from support.cli import slfs
from support.mount import Mount, MountFactory
from support.texts import BAD_LSL
from support.writes import errno_of, recovery_files, write_file

from slfs.client import files as client_files
from slfs.client.client_error import ClientError
from slfs.mcp.results import fail
from slfs.protocol.compile_output import UNPRINTABLE

pytestmark = pytest.mark.generations()

CUBE = "Hello Cube"
BUILT = '#define GREETING "hello"\ndefault\n{\n    state_entry()\n    {\n        llOwnerSay(GREETING);\n    }\n}\n'


def item_named(m: Mount, name: str) -> Any:
    assert m.sim is not None
    return worlds.item_named(m.sim.world, name)


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


@pytest.mark.allow_log(r"^WARNING slfs\.fs\.guarded: flush:", r"^WARNING slfs\.model\.workspace: saving Hello")
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


# --- names the viewer cannot hold ------------------------------------------------------------------

REFUSED = [
    ("café.lsl", errno.EILSEQ, "in-world names are printable ASCII; 'é' is not"),
    ("a|b", errno.EILSEQ, "in-world names cannot hold '|'"),
    ("smile \U0001f600", errno.EILSEQ, "in-world names are printable ASCII; '\U0001f600' is not"),
    ("   ", errno.EINVAL, "in-world names cannot be empty or blank"),
]
STRERROR = {errno.EILSEQ: "Invalid or incomplete multibyte or wide character", errno.EINVAL: "Invalid argument"}


def inventory_names(m: Mount) -> list[str]:
    assert m.sim is not None
    return sorted(i.name for o in m.sim.world.objects.values() for p in o.prims() for i in p.inventory)


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: create:", r"^WARNING slfs\.model\.workspace: rename:")
async def test_a_name_the_viewer_cannot_hold_says_why(mounted: Mount) -> None:
    m = mounted
    before = inventory_names(m)
    for name, err, why in REFUSED:
        target = m.path(CUBE, name)
        for argv in (["touch", target], ["cp", m.path(CUBE, "Hello.lsl"), target],
                     ["mv", m.path(CUBE, "Hello.lsl"), target]):
            res = await m.run(*argv, check=False)
            stderr = res.stderr.decode()
            # mv words EINVAL from rename(2) its own way ("... to a subdirectory of itself"): the
            # status says why.
            mv_einval = argv[0] == "mv" and err == errno.EINVAL
            assert res.returncode != 0 and (mv_einval or STRERROR[err] in stderr), (argv, stderr)
            status = await m.status()
            assert why in status["last_error"], (argv, status["last_error"])
            assert name.isspace() or repr(name) in status["last_error"]  # the status shows blanks as one
            assert why in m.log_text()
            told = [e for e in events(m) if e["type"] == "error"][-1]
            assert why in told["message"] and told["errno"] == errno.errorcode[err], told
            assert told["operation"] == ("rename" if argv[0] == "mv" else "create")
        assert inventory_names(m) == before  # nothing created or renamed in-world
        assert name not in await m.thread(os.listdir, m.path(CUBE))
    # A prim (folder) rename too.
    res = await m.run("mv", m.path(CUBE), m.path("Cubé"), check=False)
    assert res.returncode != 0 and STRERROR[errno.EILSEQ] in res.stderr.decode()
    assert "'é' is not" in (await m.status())["last_error"]


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: create:", r"^WARNING slfs\.model\.workspace: rename:")
async def test_an_agent_reads_why_a_name_was_refused(mounted: Mount) -> None:
    """What the MCP tools call (slfs_save with create, slfs_rename): the reason, not the errno's text."""
    m = mounted
    with pytest.raises(ClientError) as info:
        await m.thread(lambda: client_files.rename(str(m.path(CUBE, "Hello.lsl")), "Hellö.lsl"))
    assert info.value.code == "EILSEQ" and "in-world names are printable ASCII; 'ö' is not" in info.value.message
    assert "in-world names are printable ASCII; 'ö' is not [EILSEQ: " in str(fail(info.value, str(m.mnt)))
    with pytest.raises(ClientError) as info:
        await m.thread(lambda: client_files.write_text(str(m.path(CUBE, "a|b")), b"x\n", create=True))
    assert info.value.code == "EILSEQ" and "cannot hold '|'" in info.value.message
    assert "a|b" not in inventory_names(m)


# --- history names in time order -------------------------------------------------------------------

GREET = 'default\n{\n    state_entry()\n    {\n        llOwnerSay("save %d");\n    }\n}\n'


@pytest.mark.own_mount("lists an item's whole history, which other tests' saves add to")
async def test_version_names_list_in_time_order(mounted: Mount) -> None:
    """25 quick saves (many within one second): plain `ls` lists the versions in time order, so the
    README's `diff $(ls | tail -2)` takes the last two; older unpadded names still restore."""
    m = mounted
    path = m.path(CUBE, "Hello.lsl")
    for i in range(25):
        assert await m.thread(errno_of, write_file, path, (GREET % i).encode()) == 0
    history = m.path(CUBE, ".slfs", "history", "Hello.lsl")

    async def saved_all() -> bool:
        return sum(".saved." in n for n in await m.thread(os.listdir, history)) >= 25
    await m.wait_for(saved_all, 10, "25 saved versions in the history")
    listed = (await m.run("sh", "-c", "ls | tail -2", cwd=history)).stdout.decode().split()
    assert [(history / n).read_text() for n in listed] == [GREET % 23, GREET % 24], listed
    names = (await m.run("ls", cwd=history)).stdout.decode().split()
    by_time = sorted(names, key=lambda n: ((history / n).stat().st_mtime_ns, names.index(n)))
    assert names == by_time
    assert [(history / n).read_text() for n in names if ".saved." in n] == [GREET % i for i in range(25)]
    sequenced = [n for n in names if "~" in n]
    if sequenced:  # saves within one second (most runs): the name of before, unpadded, restores it
        new = sequenced[0]
        stamp, rest = new.split("~", 1)
        seq, tail = rest.split(".", 1)
        old = f"{stamp}~{int(seq)}.{tail}"
        rc, out, err = await slfs(m, "restore", path, old, check=False)
        assert f"restored {new}" in out, (rc, out, err)
        assert await m.read_bytes(CUBE, "Hello.lsl") == (history / new).read_bytes()
