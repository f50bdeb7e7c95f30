"""`-o` parsing: each option structured by its rule (model/options.py)."""

from __future__ import annotations

import attrs
import pytest

from slfs.model.options import Options, parse_options


def test_every_field_is_an_option_and_keeps_its_default() -> None:
    assert parse_options([]) == Options()
    for name in {f.name for f in attrs.fields(Options)} - {"fuse"}:
        try:
            parse_options([name])  # a bare flag: some take it, the others say what they need
        except ValueError as exc:
            assert "unknown mount option" not in str(exc) and name in str(exc)


@pytest.mark.parametrize(("given", "want"), [
    (["uri_ports=9021,9022"], {"uri_ports": (9021, 9022)}),
    (["uri_ports=9021:9022", "prefetch=3"], {"uri_ports": (9021, 9022), "prefetch": 3}),
    (["uri_ports=9021,prefetch=0,9023"], None),  # a port after another option is not a list
    (["prefetch=1", "prefetch=2"], {"prefetch": 2}),  # the last one wins, as with mount(8)
    (["lazy_lists=0,switch=1"], {"lazy_lists": False, "switch": True}),
    (["allow_remote_viewer"], {"allow_remote_viewer": True}),
    (["include=/a::/b"], {"include": ("/a", "/b")}),
    (["vm=luau", "open_cmd=vim +{line} -- {path}"], {"vm": "luau", "open_cmd": "vim +{line} -- {path}"}),
    (["connect_wait=2.5,attr_timeout=0"], {"connect_wait": 2.5, "attr_timeout": 0.0}),
])
def test_values(given: list[str], want: dict[str, object] | None) -> None:
    if want is None:
        with pytest.raises(ValueError):
            parse_options(given)
        return
    o = parse_options(given)
    assert {k: getattr(o, k) for k in want} == want


@pytest.mark.parametrize(("given", "words"), [
    ("prefetch=x", "-o prefetch needs an integer, got 'x'"),
    ("prefetch", "-o prefetch needs an integer, got ''"),
    ("delete_grace=-1", "-o delete_grace must not be negative"),
    ("save_retries=101", "-o save_retries must be at most 100"),
    ("vm=java", "-o vm must be one of mono, lsl2, luau"),
    ("windows_paths=linux", "-o windows_paths must be one of auto, wine, wsl, off, got 'linux'"),
    ("allow_remote_viewer=1", "-o allow_remote_viewer takes no value"),
    ("switch=yes", "-o switch takes 0 or 1, got 'yes'"),
    ("open_cmd", "-o open_cmd needs a command"),
    ("uri_ports=80", "-o uri_ports: '80' is not a port from 1024 to 65535"),
    ("windows_mount", "-o windows_mount needs a directory"),
    ("colour=blue", "unknown mount option 'colour'"),
    ("ro=1", "-o ro takes no value"),
])
def test_errors_say_what_is_wrong(given: str, words: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_options([given])
    assert words in str(info.value)


def test_windows_options_are_checked_together(tmp_path: object) -> None:
    with pytest.raises(ValueError, match="needs windows_paths=wsl"):
        parse_options(["windows_paths=off", "windows_mount=/"])
    assert parse_options(["windows_paths=wsl", "windows_mount=/"]).windows_mount == "/"
