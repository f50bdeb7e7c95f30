import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pytest

from slfs.session.challenge import MAX_CHALLENGE_BYTES, ChallengeError, read_challenge

UUID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"


def ch(directory: os.PathLike[str] | str, tag: str) -> str:
    """A path named as the viewers name their challenge files."""
    return os.path.join(directory, f"sl_script_challenge_{tag}.tmp")


def write(path: os.PathLike[str] | str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_reads_and_strips(tmp_path: os.PathLike[str]) -> None:
    assert read_challenge(write(ch(tmp_path, "c"), f"  {UUID}\n".encode())) == UUID


def test_missing(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="does not exist"):
        read_challenge(ch(tmp_path, "nope"))


def test_symlink_refused(tmp_path: os.PathLike[str]) -> None:
    target = write(ch(tmp_path, "real"), UUID.encode())
    link = ch(tmp_path, "link")
    os.symlink(target, link)
    with pytest.raises(ChallengeError, match="symbolic link"):
        read_challenge(link)


def test_too_big(tmp_path: os.PathLike[str]) -> None:
    path = write(ch(tmp_path, "big"), b"a" * (MAX_CHALLENGE_BYTES + 1))
    with pytest.raises(ChallengeError, match="too big"):
        read_challenge(path)


def test_uuid_padded_to_max_is_fine(tmp_path: os.PathLike[str]) -> None:
    data = UUID.encode() + b" " * (MAX_CHALLENGE_BYTES - len(UUID))
    assert read_challenge(write(ch(tmp_path, "max"), data)) == UUID


def test_uppercase_uuid(tmp_path: os.PathLike[str]) -> None:
    assert read_challenge(write(ch(tmp_path, "u"), UUID.upper().encode())) == UUID.upper()


KEY = (b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n"
       b"-----END OPENSSH PRIVATE KEY-----\n")


@pytest.mark.parametrize("data", [
    KEY,
    b"a" * 100,
    UUID.encode() + b"\n" + UUID.encode(),  # two UUIDs
    UUID.encode() + b"x",
    UUID.replace("-", "").encode(),  # not the 8-4-4-4-12 form
    b"{" + UUID.encode() + b"}",
    UUID[:-1].encode() + b"g",
    "6ba7b810-9dad-11d1-80b4-00c04fd430c\u0661".encode(),  # a non-ASCII digit
], ids=["ssh-key", "letters", "two-uuids", "trailing", "no-dashes", "braces", "non-hex", "unicode-digit"])
def test_anything_but_one_uuid_is_refused_without_its_content(tmp_path: os.PathLike[str], data: bytes) -> None:
    path = write(ch(tmp_path, "secret"), data)
    with pytest.raises(ChallengeError, match="does not hold a UUID") as info:
        read_challenge(path)
    text = str(info.value)
    for chunk in data.decode(errors="replace").split():
        if len(chunk) >= 4:
            assert chunk not in text


def test_empty(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="empty"):
        read_challenge(write(ch(tmp_path, "e"), b" \n"))


def test_directory_refused(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="not a regular file"):
        os.mkdir(ch(tmp_path, "dir"))
        read_challenge(ch(tmp_path, "dir"))


def test_fifo_refused_without_blocking(tmp_path: os.PathLike[str]) -> None:
    path = ch(tmp_path, "fifo")
    os.mkfifo(path)
    with pytest.raises(ChallengeError, match="not a regular file"):
        read_challenge(path)


def test_not_text(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="does not hold a UUID"):
        read_challenge(write(ch(tmp_path, "b"), b"\xff\xfe"))


def test_no_path() -> None:
    with pytest.raises(ChallengeError):
        read_challenge("")


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another uid")
def test_wrong_owner(tmp_path: os.PathLike[str]) -> None:
    path = write(ch(tmp_path, "other"), UUID.encode())
    os.chown(path, 65534, 65534)
    with pytest.raises(ChallengeError, match="owned by uid 65534"):
        read_challenge(path)


# --- only a viewer's fresh challenge (issue 21) ---------------------------------------------------


def test_a_hard_link_is_refused(tmp_path: os.PathLike[str]) -> None:
    # Another user's hard link to a file of ours is ours by owner: only its link count tells.
    mine = write(os.path.join(tmp_path, "my-token"), UUID.encode())
    link = ch(tmp_path, "linked")
    os.link(mine, link)
    with pytest.raises(ChallengeError, match="has 2 hard links, not 1"):
        read_challenge(link)
    os.unlink(mine)
    assert read_challenge(link) == UUID  # one link again


def test_an_old_file_is_refused(tmp_path: os.PathLike[str]) -> None:
    path = write(ch(tmp_path, "old"), UUID.encode())
    then = time.time() - 120
    os.utime(path, (then, then))
    with pytest.raises(ChallengeError, match=r"last modified 1[12]\d s ago, more than 60 s"):
        read_challenge(path)


def test_a_file_touched_to_look_new_is_still_refused_by_its_ctime(tmp_path: os.PathLike[str]) -> None:
    # The mtime can be set to anything; the ctime is the kernel's. Two minutes later, an mtime set to
    # "now" leaves the ctime of two minutes ago (the clock is injected: no waiting).
    path = write(ch(tmp_path, "touched"), UUID.encode())
    later = time.time() + 120
    os.utime(path, (later, later))
    with pytest.raises(ChallengeError, match=r"last changed 1[12]\d s ago"):
        read_challenge(path, now=lambda: later)


def test_a_file_from_the_future_is_refused(tmp_path: os.PathLike[str]) -> None:
    path = write(ch(tmp_path, "future"), UUID.encode())
    ahead = time.time() + 60
    os.utime(path, (ahead, ahead))
    with pytest.raises(ChallengeError, match="in the future"):
        read_challenge(path)
    os.utime(path, (time.time() + 2, time.time() + 2))  # a small skew is tolerated
    assert read_challenge(path) == UUID


def test_a_fresh_file_is_answered_for_60_s() -> None:
    path = write(os.path.join(tempfile.mkdtemp(), "sl_script_challenge_x.tmp"), UUID.encode())
    made = os.stat(path).st_ctime
    assert read_challenge(path, now=lambda: made + 59) == UUID
    with pytest.raises(ChallengeError, match="more than 60 s"):
        read_challenge(path, now=lambda: made + 61)


@pytest.mark.parametrize("name", [
    "challenge.tmp", "sl_script_challenge", "sl_script_challenge.txt", "id_rsa", "xsl_script_challenge.tmp",
    "SL_SCRIPT_CHALLENGE.TMP",  # a POSIX name is the viewer's exact one
    "sl_script_challenge.tmp.bak",
])
def test_a_file_not_named_as_a_viewer_names_it_is_not_even_looked_at(
        tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    path = write(os.path.join(tmp_path, name), UUID.encode())
    touched: list[str] = []

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            touched.append(real.__name__)
            return real(*args, **kwargs)
        return call

    for fn in ("open", "lstat", "stat", "read"):
        monkeypatch.setattr(os, fn, spy(getattr(os, fn)))
    with pytest.raises(ChallengeError, match=r"is not named sl_script_challenge\*\.tmp as a viewer names it"):
        read_challenge(path)
    assert touched == []


def test_a_wrongly_named_fifo_does_not_block(tmp_path: os.PathLike[str]) -> None:
    # Were it opened without O_NONBLOCK, or read, this would hang; it is refused by its name first.
    path = os.path.join(tmp_path, "notes.fifo")
    os.mkfifo(path)
    with pytest.raises(ChallengeError, match="is not named"):
        read_challenge(path)


def test_a_windows_name_is_checked_before_translation() -> None:
    def to_local(path: str) -> str:
        raise AssertionError("translated")

    with pytest.raises(ChallengeError, match="is not named"):
        read_challenge(r"C:\Users\Resident\.ssh\id_rsa", to_local)


def test_g1s_fixed_world_readable_name_is_answered(tmp_path: os.PathLike[str]) -> None:
    # viewer-source.md section 6: G1 writes sl_script_challenge.tmp with default permissions.
    path = write(os.path.join(tmp_path, "sl_script_challenge.tmp"), UUID.encode())
    os.chmod(path, 0o644)
    assert read_challenge(path) == UUID


@pytest.mark.parametrize("name", [
    "sl_script_challenge.tmp",  # G1
    f"sl_script_challenge_{UUID}.tmp",  # G2 (the secret), G3/G4 (another UUID)
    "sl_script_challenge_k3j9x_1a.tmp",  # V1/V2: mkstemp
])
def test_every_generations_name_is_answered(tmp_path: os.PathLike[str], name: str) -> None:
    assert read_challenge(write(os.path.join(tmp_path, name), UUID.encode())) == UUID
