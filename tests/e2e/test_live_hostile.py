"""Live sync on a real mount against temp files that are not the viewer's (issue 21 item 6):
`slfs edit` on a symlink, a hard link, another uid's file, a file outside the temp dir the viewer
lists, or a temp dir another user can change is refused before any subscription (exit 1, the
reason on stderr and in `.slfs/status`); a write keeps the temp file's mode; a temp file swapped
for a symlink after `slfs edit` is never written through."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest
from support.cli import slfs
from support.live_mounts import BAD, GOOD, INV, live_world
from support.mount import Mount, MountFactory

OTHER_UID = 65534
SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot yours\n"


def require_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI"):
            pytest.fail("files and directories of another uid need root")
        pytest.skip("files and directories of another uid need root")


def viewer_tmpdir(tmp_path: Path, mode: int = 0o700, name: str = "viewer-tmp") -> Path:
    d = tmp_path / name
    d.mkdir()
    d.chmod(mode)
    return d


async def hostile_mount(mount_factory: MountFactory, tmpdir: Path) -> Mount:
    """A mount whose simulated viewer keeps its temp files in `tmpdir` and starts no editor
    (`slfs edit` is run by the test, as a viewer's external editor setting would run it)."""
    m = await mount_factory(live_world(), sim_kwargs={"tmpdir": str(tmpdir)})
    assert m.sim is not None
    m.sim.external_editor = None
    await m.thread(os.listdir, m.mnt)
    return m


async def opened(m: Mount) -> Path:
    assert m.sim is not None
    sid, temp = await m.sim.open_script_editor(INV)
    await m.sim.live_seen(sid, 1)
    return Path(temp)


async def edit_refused(m: Mount, temp: str | Path, why: str) -> None:
    rc, out, err = await slfs(m, "edit", "--mount", m.mnt, temp, check=False, env={"VISUAL": "true"})
    assert rc == 1 and out == "" and why in err, (rc, out, err)
    assert await m.thread(os.listdir, m.path(".slfs", "live")) == []
    assert m.sim is not None and not any(meth == "script.subscribe" for meth, _p in m.sim.calls)
    assert why in (await m.status()).get("last_error", "")


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: live: not subscribing to")
async def test_symlinks_hard_links_and_other_uids_files_are_never_subscribed(mount_factory: MountFactory,
                                                                             tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text(SECRET)
    secret.chmod(0o600)
    m = await hostile_mount(mount_factory, viewer_tmpdir(tmp_path))
    temp = await opened(m)
    temp.unlink()
    temp.symlink_to(secret)
    await edit_refused(m, temp, "is a symbolic link")
    assert secret.read_text() == SECRET
    temp.unlink()
    temp.write_text(GOOD)
    os.link(temp, tmp_path / "elsewhere")
    await edit_refused(m, temp, "hard links")
    os.unlink(tmp_path / "elsewhere")
    require_root()
    os.chown(temp, OTHER_UID, OTHER_UID)
    await edit_refused(m, temp, f"belongs to uid {OTHER_UID}")


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: live: not subscribing to")
async def test_a_temp_file_outside_the_viewers_temp_dir_is_refused(mount_factory: MountFactory,
                                                                   tmp_path: Path) -> None:
    m = await hostile_mount(mount_factory, viewer_tmpdir(tmp_path))
    temp = await opened(m)
    assert m.sim is not None
    listed = viewer_tmpdir(tmp_path, name="listed")
    m.sim.listed_temp_dir = str(listed)  # it writes to one dir and lists another
    await edit_refused(m, temp, "is not in the viewer's temp dir")
    m.sim.listed_temp_dir = None
    beside = viewer_tmpdir(tmp_path, name="x")
    (beside / temp.name).write_text(GOOD)
    await edit_refused(m, f"{temp.parent}/../x/{temp.name}", "is not in the viewer's temp dir")


@pytest.mark.allow_log(r"^WARNING slfs\.model\.workspace: live: not subscribing to")
@pytest.mark.parametrize("shape", ["world-writable", "another-uid"])
async def test_a_temp_dir_another_user_can_change_is_refused(mount_factory: MountFactory, tmp_path: Path,
                                                             shape: str) -> None:
    if shape == "another-uid":
        require_root()
        tmpdir = viewer_tmpdir(tmp_path, 0o755)
        os.chown(tmpdir, OTHER_UID, OTHER_UID)
        why = f"belongs to uid {OTHER_UID}"
    else:
        tmpdir = viewer_tmpdir(tmp_path, 0o777)
        why = "writable by other users and not sticky"
    m = await hostile_mount(mount_factory, tmpdir)
    temp = await opened(m)
    await edit_refused(m, temp, why)


@pytest.mark.allow_log(
    r"^WARNING slfs\.fs\.guarded: open: live: Pocket Script\.lsl:",
    r"^WARNING slfs\.model\.workspace: live: Pocket Script\.lsl:",
)
async def test_writes_keep_the_mode_and_never_follow_a_swapped_in_symlink(mount_factory: MountFactory,
                                                                          tmp_path: Path) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("mine\n")
    mine.chmod(0o644)
    m = await hostile_mount(mount_factory, viewer_tmpdir(tmp_path))
    temp = await opened(m)
    temp.chmod(0o600)
    _rc, out, _err = await slfs(m, "edit", "--mount", m.mnt, temp, env={"VISUAL": "true"})
    live = Path(out.strip())
    assert live == m.path(".slfs", "live", "Pocket Script.lsl")
    await m.thread(live.write_text, BAD)
    assert temp.read_text() == BAD and stat.S_IMODE(os.lstat(temp).st_mode) == 0o600
    temp.chmod(0o640)
    await m.thread(live.write_text, GOOD)
    assert temp.read_text() == GOOD and stat.S_IMODE(os.lstat(temp).st_mode) == 0o640
    # Swapped for a symlink to a file of ours between the subscribe and the write.
    temp.unlink()
    temp.symlink_to(mine)
    with pytest.raises(OSError) as failed:
        await m.thread(live.write_text, BAD)
    assert failed.value.errno in (errno.ELOOP, errno.ENOENT)  # refused (the live file may go first)
    assert temp.is_symlink() and mine.read_text() == "mine\n" and stat.S_IMODE(mine.stat().st_mode) == 0o644
    assert "symbolic link" in (await m.status()).get("last_error", "")
