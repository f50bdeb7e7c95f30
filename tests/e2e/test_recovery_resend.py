"""A save while the viewer is away (issue 33, point 6): vim's `:w` with the simulated viewer
stopped leaves exactly one recovery copy, of the user's text (not of vim's restore of the
original), `last_recovery` names it, `slfs status` lists the file as recovered, and after the
reconnect `slfs resend FILE` saves it once; an item changed in-world meanwhile is ESTALE (and
`--force` sends it over that change)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from support.cli import sj, slfs
from support.mount import Mount, MountFactory
from support.writes import (
    NOTE,
    NOTE_TEXT,
    assert_writes,
    content,
    mark,
    need,
    recovery_files,
    save_params,
    settle,
    sim_of,
    write_mount,
)

from slfs.client import ClientError, MountClient
from slfs.mcp.server import build_server

pytestmark = pytest.mark.generations("G1", "G2", "G3", "G4")

# What a save while the viewer is stopped logs: the failed save, its fsync or flush, the refused
# unlink, and on G1 the publish asked again after the reconnect (viewer-source.md §2).
VIEWER_STOPPED = (
    r"^WARNING slfs\.fs\.guarded: (flush|fsync): save",
    r"^WARNING slfs\.fs\.guarded: unlink:",
    r"^WARNING slfs\.model\.workspace: could not ask the viewer",
    r"^WARNING slfs\.model\.workspace: saving",
)

MINE = NOTE_TEXT.replace("one", "ONE")


async def vim_save_while_the_viewer_is_stopped(mount_factory: MountFactory) -> tuple[Mount, Path]:
    """Box/Note read, the viewer stopped, vim's `:w` of an edit (it fails), the viewer started again
    with the same world. The mount, the world and the one recovery copy."""
    need("vim")
    # A short reconnect_wait: the save fails soon after the viewer went away, not 5 s later.
    m = await write_mount(mount_factory, "reconnect_wait=0.3")
    world = sim_of(m).world
    assert await m.read_bytes("Box", "Note") == NOTE_TEXT.encode()
    m.stop_sim()

    async def away() -> bool:
        return (await m.status())["state"] != "connected"

    await m.wait_for(away, 20, "the mount saw the viewer go")
    res = await m.run("vim", "-Nu", "NONE", "-i", "NONE", "-es", "-c", "%s/one/ONE/", "-c", "wq",
                      m.path("Box", "Note"), check=False)
    assert res.returncode != 0, "vim's write should have failed"
    # One copy, of the user's text: not one per failed flush, none of vim's restore of the original.
    (copy,) = recovery_files(m)
    assert copy.read_text() == MINE
    status = await m.status()
    assert status["last_recovery"] == str(copy), status
    await m.start_sim(world)
    await m.wait_live("connected", timeout=20)
    if m.generation == "G1":
        await m.explore_published()
    return m, copy


async def resend_code(m: Mount, path: str) -> str | None:
    """`resend` over the control socket: the errno name it failed with (None: it worked)."""
    (entry,) = [json.loads(f.read_text()) for f in (Path(m.env["XDG_RUNTIME_DIR"]) / "slfs" / "mounts").glob("*.json")]

    def ask() -> str | None:
        try:
            MountClient(entry).resend(path)
        except ClientError as exc:
            return exc.code
        return None

    return await m.thread(ask)


def unsent_lines(text: str) -> list[str]:
    return [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("unsent: ")]


async def listed(m: Mount) -> list[dict[str, Any]]:
    data = await sj(m, "status", "--mount", m.mnt)
    return list(data["unsent"])


@pytest.mark.allow_log(*VIEWER_STOPPED)
async def test_vim_save_while_the_viewer_is_stopped_is_resent_once(mount_factory: MountFactory) -> None:
    m, copy = await vim_save_while_the_viewer_is_stopped(mount_factory)
    note = str(m.path("Box", "Note"))
    (entry,) = await listed(m)
    assert entry["path"] == note and entry["state"] == "recovered" and entry["recovery"] == str(copy), entry
    assert entry["code"] == "EIO" and "not connected" in entry["reason"], entry
    assert not entry["inworld_changed"]
    # `.slfs/status` and `slfs status` say the same, one line per file.
    status_text = await m.thread((m.mnt / ".slfs" / "status").read_text)
    (line,) = unsent_lines(status_text)
    assert line.startswith(f"recovered {note} (EIO), copy {copy}: "), line
    _rc, out, _err = await slfs(m, "status", "--mount", m.mnt)
    assert unsent_lines(out) == [line]

    t = mark(m)
    _rc, out, _err = await slfs(m, "resend", note)
    assert out.strip() == f"{note}: resent from {copy}"
    await settle(m)
    assert_writes(m, t, [("object.content.save", NOTE)])
    assert [p["content"] for p in save_params(m, NOTE, t)] == [MINE]
    assert content(m, NOTE) == MINE
    assert await m.read_bytes("Box", "Note") == MINE.encode()
    assert await listed(m) == []
    assert unsent_lines(await m.thread((m.mnt / ".slfs" / "status").read_text)) == ["none"]
    # Nothing left to send: ENOENT, exit status 1, the reason on stderr.
    rc, out, err = await slfs(m, "resend", note, check=False)
    assert rc == 1 and out == "" and "no recovered text to resend" in err, (rc, out, err)
    _rc, out, _err = await slfs(m, "events", "--json", "--mount", m.mnt)
    events = [json.loads(line) for line in out.splitlines()]
    recoveries = [e for e in events if e["type"] == "recovery"]
    assert (recoveries[0]["recovery"], recoveries[0]["made"]) == (str(copy), True)
    assert {e["recovery"] for e in recoveries} == {str(copy)}  # the same text failing again: no new copy
    assert [e["outcome"] for e in events if e["type"] == "resend"] == ["saved"]
    assert len(recovery_files(m)) == 1


@pytest.mark.allow_log(*VIEWER_STOPPED, r"^WARNING slfs\.model\.unsent:")
async def test_resend_over_an_in_world_change_is_estale(mount_factory: MountFactory) -> None:
    m, _copy = await vim_save_while_the_viewer_is_stopped(mount_factory)
    note = str(m.path("Box", "Note"))
    theirs = "changed in-world meanwhile\n"
    await sim_of(m).set_content(NOTE, theirs)
    await sim_of(m).quiesce()
    t = mark(m)
    rc, out, err = await slfs(m, "resend", note, check=False)
    assert rc == 1 and out == "", (rc, out, err)
    assert "changed in-world since the recovered text was based on it" in err and "--force" in err, err
    assert await resend_code(m, note) == "ESTALE"  # the errno name the control socket answers with
    assert_writes(m, t, [])
    assert content(m, NOTE) == theirs
    (entry,) = await listed(m)  # still listed, and says the item changed since
    assert entry["state"] == "recovered" and entry["inworld_changed"], entry
    # --force sends it over the change (the history keeps theirs).
    _rc, out, _err = await slfs(m, "resend", "--force", note)
    await settle(m)
    assert_writes(m, t, [("object.content.save", NOTE)])
    assert content(m, NOTE) == MINE
    assert await listed(m) == []
    assert len(recovery_files(m)) == 1


@pytest.mark.allow_log(*VIEWER_STOPPED, r"^WARNING slfs\.model\.unsent:")
async def test_the_mcp_tools_list_and_resend(mount_factory: MountFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """slfs_status names the file not in-world; slfs_resend is refused with ESTALE over an in-world
    change, and sends it with force=true."""
    m, copy = await vim_save_while_the_viewer_is_stopped(mount_factory)
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(key, m.env[key])
    async with Client(build_server(), mode="legacy") as client:
        status = await client.call_tool("slfs_status", {})
        assert not status.is_error and status.structured_content is not None
        (entry,) = status.structured_content["unsent"]
        assert entry["path"] == "Box/Note" and entry["recovery"] == str(copy), entry
        assert "1 files not in-world: Box/Note (recovered)" in status.content[0].text  # type: ignore[union-attr]
        await sim_of(m).set_content(NOTE, "theirs\n")
        await sim_of(m).quiesce()
        refused = await client.call_tool("slfs_resend", {"path": "Box/Note"})
        assert refused.is_error and "ESTALE" in refused.content[0].text  # type: ignore[union-attr]
        t = mark(m)
        sent = await client.call_tool("slfs_resend", {"path": "Box/Note", "force": True})
        assert not sent.is_error and sent.structured_content is not None
        assert sent.structured_content["sent"] and sent.structured_content["path"] == "Box/Note"
    await settle(m)
    assert_writes(m, t, [("object.content.save", NOTE)])
    assert content(m, NOTE) == MINE
    assert await listed(m) == []


@pytest.mark.allow_log(*VIEWER_STOPPED)
async def test_a_later_save_through_the_file_clears_the_entry(mount_factory: MountFactory) -> None:
    m, copy = await vim_save_while_the_viewer_is_stopped(mount_factory)
    assert [e["recovery"] for e in await listed(m)] == [str(copy)]
    # The file shows the in-world text: vim's restore of the original after its failed write was
    # that text, which is never sent again (so it could not fail, and left no copy). vim's `:w`
    # now saves an edit of it.
    shown = (await m.read_bytes("Box", "Note")).decode()
    assert shown == NOTE_TEXT
    t = mark(m)
    await m.run("vim", "-Nu", "NONE", "-i", "NONE", "-es", "-c", "$put ='four'", "-c", "wq", m.path("Box", "Note"))
    await settle(m)
    assert content(m, NOTE) == shown + "four\n"
    assert_writes(m, t, [("object.content.save", NOTE)])
    assert await listed(m) == []
    assert copy.read_text() == MINE and recovery_files(m) == [copy]  # the copy stays, no longer listed
