"""Which new names stay local, and which in-world names slfs refuses before asking the viewer."""

from __future__ import annotations

import errno

import pytest

from slfs.world.fs_errors import FsError, NameRefused
from slfs.world.naming_rules import NOTECARD_MAX, SCRIPT_MAX, is_overlay_name, parse_remote_name, size_limit

LOCAL = [".git", ".Note.swp", ".#Note", "#Note#", "Note~", "Main.lsl~", "4913", "Note.swp", "Note.swx",
         "sedAb12Cd", "XXYo5Cue", "XXaphQuh", "Note___jb_tmp___", "Note___jb_old___", ".goutputstream-AB12CD",
         ".Note.a1B2c3", "tmpab12_x9z", "tmp.AbCdEf1234", "x.orig", "x.rej", "Note.tmp.1234"]
REMOTE = ["Note", "Main.lsl", "Tool.luau", "New Card", "x.lsl@57f2a1c2", "README", "sed", "XX", "Notes\u2215Todo"]


@pytest.mark.parametrize("name", LOCAL)
def test_local_names(name: str) -> None:
    assert is_overlay_name(name)


@pytest.mark.parametrize("name", REMOTE)
def test_remote_names(name: str) -> None:
    assert not is_overlay_name(name)


def test_kinds() -> None:
    assert (parse_remote_name("Main.lsl").type, parse_remote_name("Main.lsl").subtype) == ("script", 0)
    assert (parse_remote_name("Tool.luau").type, parse_remote_name("Tool.luau").subtype) == ("script", 1)
    assert parse_remote_name("Card").type == "notecard"
    assert parse_remote_name("Notes\u2215Todo").sl_name == "Notes/Todo"


@pytest.mark.parametrize("name,err", [
    ("Ünï", errno.EILSEQ), ("a\U0001f600", errno.EILSEQ), ("bad\udcff", errno.EILSEQ),
    ("a|b", errno.EILSEQ), ("   ", errno.EINVAL), ("", errno.EINVAL), ("tab\tx", errno.EILSEQ),
    ("x" * 64, errno.ENAMETOOLONG), ("x" * 64 + ".lsl", errno.ENAMETOOLONG),
])
def test_refused_names(name: str, err: int) -> None:
    with pytest.raises(FsError) as info:
        parse_remote_name(name)
    assert info.value.errno == err and info.value.message


def test_63_bytes_fit() -> None:
    assert parse_remote_name("x" * 63 + ".lsl").sl_name == "x" * 63


def test_limits() -> None:
    assert size_limit("notecard") == NOTECARD_MAX == 65536
    assert size_limit("script") == SCRIPT_MAX == 262144


def test_a_refusal_says_which_character_and_why() -> None:
    with pytest.raises(NameRefused) as info:
        parse_remote_name("café.lsl")
    assert info.value.explain and info.value.message == "'café.lsl': in-world names are printable ASCII; 'é' is not"
    with pytest.raises(NameRefused) as info:
        parse_remote_name("a|b")
    assert "'|'" in info.value.message and "separator" in info.value.message
