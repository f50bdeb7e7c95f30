"""The one options table (model/option_table.py) against what is built from it: parse_options, the
option lists of README.md and slfs(1), each default the docs show."""

from __future__ import annotations

import itertools
import re
import subprocess

import attrs
import pytest

from slfs.cli import option_docs
from slfs.model import options
from slfs.model.option_table import OPTION_TABLE, PASSTHROUGH


def test_the_table_names_every_option_parse_options_takes() -> None:
    assert set(OPTION_TABLE) == set(options._RULES) | set(PASSTHROUGH)
    fields = {f.name for f in attrs.fields(options.Options)} - {"fuse"}
    assert fields == set(options._RULES)
    for name, opt in OPTION_TABLE.items():
        if opt.form is None:  # a flag: parse_options takes it bare, and refuses a value
            options.parse_options([name])
            with pytest.raises(ValueError):
                options.parse_options([f"{name}=1"])


@pytest.mark.parametrize("name", [n for n, o in OPTION_TABLE.items() if o.form is not None])
def test_each_default_the_docs_show_is_what_the_mount_takes(name: str) -> None:
    """A default written as a value (`16`, `mono`, `256M`) parses to the Options default; one written
    as prose (none, a path that depends on the environment) is a default the code computes."""
    opt, default = OPTION_TABLE[name], getattr(options.Options(), name)
    if opt.default in ("", "none"):
        assert default in (None, ()), f"-o {name}: the docs show no default, the code has {default!r}"
    elif "`" not in opt.default:
        assert getattr(options.parse_options([f"{name}={opt.default}"]), name) == default


def test_flags_are_off_by_default() -> None:
    for name, opt in OPTION_TABLE.items():
        if opt.form is None and name not in PASSTHROUGH:
            assert opt.default == "off" and getattr(options.Options(), name) is False


@pytest.mark.parametrize("rel", sorted(option_docs.FILES))
def test_the_docs_list_what_the_table_renders(rel: str) -> None:
    marks, render = option_docs.FILES[rel]
    held = option_docs.block_of((option_docs.ROOT / rel).read_text(), marks)
    assert held == render(), f"{rel}: its option list is not the table's: run python -m slfs.cli.option_docs"


def test_every_option_is_in_both_lists() -> None:
    readme, page = option_docs.markdown(), option_docs.roff()
    for name, opt in OPTION_TABLE.items():
        assert f"`{name}" in readme
        assert (f'.BI "{name.replace("-", chr(92) + "-")}="' if opt.form else name) in page


def test_the_man_page_renders_without_warnings() -> None:
    res = subprocess.run(["groff", "-man", "-ww", "-z", str(option_docs.ROOT / "man" / "slfs.1")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stderr == "", res.stderr


def _slfs5_option_names() -> set[str]:
    """The options slfs(5)'s MOUNT OPTIONS describes: the names each `.TP` entry's tag line gives."""
    text = (option_docs.ROOT / "man" / "slfs.5").read_text()
    section = text.split(".SH MOUNT OPTIONS\n", 1)[1].split("\n.SH ", 1)[0]
    names: set[str] = set()
    lines = section.splitlines()
    for tp, tag in itertools.pairwise(lines):
        if tp != ".TP":
            continue
        # `.BI name= ARG`, `.BR name= a | b`, `.B name`, `.BR a ", " b ", " c`: every bare word that
        # is a name, quoted separators and arguments after an `=` aside.
        in_argument = False
        for word in re.findall(r'"[^"]*"|\S+', tag.split(" ", 1)[1]):
            if word.startswith('"'):
                in_argument = in_argument and "," not in word  # `", "` starts the next name
            elif not in_argument:
                names.add(word.split("=", 1)[0])
                in_argument = "=" in word
    return names


def test_slfs5_describes_exactly_the_table_s_options() -> None:
    described = _slfs5_option_names()
    assert described == set(OPTION_TABLE), (
        f"slfs(5) MOUNT OPTIONS lacks {sorted(set(OPTION_TABLE) - described)} and describes options the table "
        f"does not have: {sorted(described - set(OPTION_TABLE))}")
