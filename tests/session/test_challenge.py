import os

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
