"""The handshake's challenge named by a Windows path (a viewer under Wine, or on Windows with slfs
in WSL2): translated, then every check of a native one; refused with the option to set when it
cannot be translated. And WSL2's listener on the Windows side, said in state_detail."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from support.fakeviewer import FakeViewer
from support.sessions import running

from slfs.session import incoming as incoming_module
from slfs.session import peer
from slfs.session.challenge import ChallengeError, read_challenge
from slfs.winpaths import PathMapper, PathTranslator

UUID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"


@pytest.fixture
def prefix(tmp_path: Path) -> Path:
    """A Wine prefix whose C: is ../drive_c, with the user's temp dir."""
    root = tmp_path / "wine"
    (root / "dosdevices").mkdir(parents=True)
    (root / "drive_c" / "users" / "Resident" / "Temp").mkdir(parents=True)
    os.symlink("../drive_c", root / "dosdevices" / "c:")
    return root


def temp_of(prefix: Path) -> Path:
    return prefix / "drive_c" / "users" / "Resident" / "Temp"


def windows_name(prefix: Path, *, upper: bool = False) -> Callable[[str], str]:
    """The viewer's name of a file under the prefix's C: drive (in other case, with `upper`)."""
    def name(path: str) -> str:
        rel = os.path.relpath(path, prefix / "drive_c")
        return "C:\\" + (rel.upper() if upper else rel).replace("/", "\\")
    return name


def wine(prefix: Path) -> PathTranslator:
    return PathTranslator(PathMapper(mode="wine", wine_prefix=str(prefix)))


# --- read_challenge through a translation -------------------------------------------------------


def test_a_windows_path_is_read_through_the_prefix(prefix: Path) -> None:
    (temp_of(prefix) / "sl_script_challenge.tmp").write_text(UUID + "\n")
    assert read_challenge(r"C:\users\Resident\Temp\sl_script_challenge.tmp", wine(prefix).to_local) == UUID
    # Any case, as Windows takes it.
    assert read_challenge(r"c:/USERS/resident/temp/SL_Script_Challenge.TMP", wine(prefix).to_local) == UUID


def test_the_translated_file_gets_every_check(prefix: Path) -> None:
    to_local = wine(prefix).to_local
    temp = temp_of(prefix)
    (temp / "sl_script_challenge_real.tmp").write_text(UUID)
    os.symlink(temp / "sl_script_challenge_real.tmp", temp / "sl_script_challenge_link.tmp")
    with pytest.raises(ChallengeError, match=r"'C:\\\\users\\\\Resident\\\\Temp\\\\sl_script_challenge_link.tmp' "
                                             r"\(here .*link.tmp'\) is a "
                                             "symbolic link"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_link.tmp", to_local)
    with pytest.raises(ChallengeError, match="does not exist"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_nope.tmp", to_local)
    (temp / "sl_script_challenge_dir.tmp").mkdir()
    with pytest.raises(ChallengeError, match="not a regular file"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_dir.tmp", to_local)
    (temp / "sl_script_challenge_key.tmp").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    with pytest.raises(ChallengeError, match="does not hold a UUID"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_key.tmp", to_local)
    (temp / "sl_script_challenge_two.tmp").write_text(f"{UUID}\n{UUID}\n")
    with pytest.raises(ChallengeError, match="does not hold a UUID"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_two.tmp", to_local)
    (temp / "sl_script_challenge_big.tmp").write_text(UUID + " " * 2000)
    with pytest.raises(ChallengeError, match="too big"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_big.tmp", to_local)
    os.mkfifo(temp / "sl_script_challenge_fifo.tmp")
    with pytest.raises(ChallengeError, match="not a regular file"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_fifo.tmp", to_local)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another uid")
def test_a_translated_file_of_another_uid_is_refused(prefix: Path) -> None:
    path = temp_of(prefix) / "sl_script_challenge_theirs.tmp"
    path.write_text(UUID)
    os.chown(path, 4321, 4321)
    with pytest.raises(ChallengeError, match="owned by uid 4321"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge_theirs.tmp", wine(prefix).to_local)


@pytest.mark.parametrize(("path", "why"), [
    (r"C:\users\Resident\Temp\..\..\..\..\tmp\sl_script_challenge.tmp", r"'\.\.' component"),
    (r"\\server\share\sl_script_challenge.tmp", "UNC"),
    (r"\\?\C:\sl_script_challenge.tmp", "device path"),
    (r"C:Temp\sl_script_challenge.tmp", "drive-relative"),
    (r"Q:\sl_script_challenge.tmp", r"drive Q: has no link .*-o wine_prefix=DIR"),
])
def test_an_untranslatable_path_is_refused_with_the_option(prefix: Path, path: str, why: str) -> None:
    with pytest.raises(ChallengeError, match=why) as info:
        read_challenge(path, wine(prefix).to_local)
    assert "-o " in str(info.value)


def test_native_mode_names_the_option_to_set() -> None:
    with pytest.raises(ChallengeError, match=r"set -o windows_paths=wine .* or -o windows_paths=wsl"):
        read_challenge(r"C:\users\Resident\Temp\sl_script_challenge.tmp", PathTranslator().to_local)


def test_a_posix_path_is_unchanged_by_any_translator(tmp_path: Path, prefix: Path) -> None:
    (tmp_path / "sl_script_challenge_c.tmp").write_text(UUID)
    assert read_challenge(str(tmp_path / "sl_script_challenge_c.tmp"), wine(prefix).to_local) == UUID
    assert read_challenge(str(tmp_path / "sl_script_challenge_c.tmp"), PathTranslator().to_local) == UUID


# --- the session against a Windows viewer -------------------------------------------------------


async def test_a_wine_viewer_is_answered_from_the_translated_file(prefix: Path) -> None:
    fake = FakeViewer(challenge_dir=str(temp_of(prefix)), name_challenge=windows_name(prefix, upper=True))
    paths = wine(prefix)
    with trio.fail_after(10):
        async with running(fake, paths=paths) as (session, _rec, _n):
            await session.wait_connected(5)
            assert fake.handshake_answers[0]["result"]["challenge_response"]  # checked by the fake: its UUID
            assert paths.status() == f"wine (prefix {prefix})"


async def test_a_windows_challenge_without_translation_is_refused_and_backs_off(prefix: Path) -> None:
    fake = FakeViewer(challenge_dir=str(temp_of(prefix)), name_challenge=windows_name(prefix))
    with trio.fail_after(10):
        async with running(fake) as (session, rec, _n):  # no translator: native
            await rec.wait_for(lambda: len(fake.handshake_answers) >= 2)
            err = fake.handshake_answers[0]["error"]
            assert err == {"code": -32002, "message": "Challenge file rejected"}  # the peer learns nothing
            assert session.state != "connected"
            said = session.last_error + session.state_detail
            assert "windows_paths=wine" in said and "refused the viewer's handshake" in said


async def test_wsl_listener_on_the_windows_side_is_said_not_refused(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c" / "Temp").mkdir(parents=True)

    def name(path: str) -> str:
        return "C:\\" + os.path.relpath(path, tmp_path / "c").replace("/", "\\")

    def unseen(proc: str = "/proc") -> list[peer.TcpSocket]:
        return []  # as in WSL2: the viewer listens on the Windows side, out of /proc/net/tcp's sight

    paths = PathTranslator(PathMapper(mode="wsl", windows_mount=str(tmp_path)))
    fake = FakeViewer(challenge_dir=str(tmp_path / "c" / "Temp"), name_challenge=name)
    monkeypatch.setattr(peer, "read_sockets", unseen)
    with trio.fail_after(10):
        async with running(fake, paths=paths) as (session, _rec, _n):
            await session.wait_connected(5)
            assert session.state_detail.endswith(
                "; the viewer's listener is on the Windows side; relying on the challenge")
            assert incoming_module.WINDOWS_SIDE in session.state_detail
            assert paths.status() == f"wsl ({tmp_path})"


async def test_wsl_listener_seen_locally_is_checked_as_ever(tmp_path: Path) -> None:
    fake = FakeViewer()
    paths = PathTranslator(PathMapper(mode="wsl", windows_mount=str(tmp_path)))
    with trio.fail_after(10):
        async with running(fake, paths=paths) as (session, _rec, _n):
            await session.wait_connected(5)
            assert "Windows side" not in session.state_detail  # our fake's listener is in /proc/net/tcp


async def test_wsl_unseen_listener_without_a_challenge_says_nothing_vouches(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def unseen(proc: str = "/proc") -> list[peer.TcpSocket]:
        return []

    monkeypatch.setattr(peer, "read_sockets", unseen)
    fake = FakeViewer(challenge=False)
    paths = PathTranslator(PathMapper(mode="wsl", windows_mount=str(tmp_path)))
    with trio.fail_after(10):
        async with running(fake, paths=paths) as (session, _rec, _n):
            await session.wait_connected(5)
            assert "no challenge: nothing vouches for it" in session.state_detail
