import os

import pytest

from slfs.session.challenge import MAX_CHALLENGE_BYTES, ChallengeError, read_challenge

UUID = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"


def write(path: os.PathLike[str] | str, data: bytes) -> str:
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_reads_and_strips(tmp_path: os.PathLike[str]) -> None:
    assert read_challenge(write(os.path.join(tmp_path, "c"), f"  {UUID}\n".encode())) == UUID


def test_missing(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="does not exist"):
        read_challenge(os.path.join(tmp_path, "nope"))


def test_symlink_refused(tmp_path: os.PathLike[str]) -> None:
    target = write(os.path.join(tmp_path, "real"), UUID.encode())
    link = os.path.join(tmp_path, "link")
    os.symlink(target, link)
    with pytest.raises(ChallengeError, match="symbolic link"):
        read_challenge(link)


def test_too_big(tmp_path: os.PathLike[str]) -> None:
    path = write(os.path.join(tmp_path, "big"), b"a" * (MAX_CHALLENGE_BYTES + 1))
    with pytest.raises(ChallengeError, match="too big"):
        read_challenge(path)


def test_exactly_max_is_fine(tmp_path: os.PathLike[str]) -> None:
    path = write(os.path.join(tmp_path, "max"), b"a" * MAX_CHALLENGE_BYTES)
    assert read_challenge(path) == "a" * MAX_CHALLENGE_BYTES


def test_empty(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="empty"):
        read_challenge(write(os.path.join(tmp_path, "e"), b" \n"))


def test_directory_refused(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="not a regular file"):
        read_challenge(str(tmp_path))


def test_fifo_refused_without_blocking(tmp_path: os.PathLike[str]) -> None:
    path = os.path.join(tmp_path, "fifo")
    os.mkfifo(path)
    with pytest.raises(ChallengeError, match="not a regular file"):
        read_challenge(path)


def test_not_utf8(tmp_path: os.PathLike[str]) -> None:
    with pytest.raises(ChallengeError, match="UTF-8"):
        read_challenge(write(os.path.join(tmp_path, "b"), b"\xff\xfe"))


def test_no_path() -> None:
    with pytest.raises(ChallengeError):
        read_challenge("")


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file to another uid")
def test_wrong_owner(tmp_path: os.PathLike[str]) -> None:
    path = write(os.path.join(tmp_path, "other"), UUID.encode())
    os.chown(path, 65534, 65534)
    with pytest.raises(ChallengeError, match="owned by uid 65534"):
        read_challenge(path)
