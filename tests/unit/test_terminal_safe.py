"""Network text made terminal-safe where people read it (issue 21, item 8)."""

from __future__ import annotations

import io
import logging

from slfs.cli import PrintableFormatter
from slfs.cli.output import PrintableStream
from slfs.protocol.text import printable
from slfs.world import names

HOSTILE = "a\x1b]52;c;aGk=\x07b\x1b[2J\x9b31m\r\x7f\x00\ud800"


def test_printable_keeps_tab_and_newline_and_replaces_every_other_control() -> None:
    assert printable("plain text") == "plain text"
    assert printable("tab\tand\nnewline") == "tab\tand\nnewline"
    assert printable(HOSTILE) == "a\ufffd]52;c;aGk=\ufffdb\ufffd[2J\ufffd31m\ufffd\ufffd\ufffd\ufffd"
    assert printable("ünïcode ✓") == "ünïcode ✓"


def test_names_show_control_characters_as_pictures() -> None:
    assert names.to_fs("Box\x1b[2J\x07\t\n") == "Box\u241b[2J\u2407\u2409\u240a"
    assert names.to_fs("del\x7f c1\x9b") == "del\u2421 c1\ufffd"
    assert names.to_fs("nul\x00") == "nul "  # as before
    assert names.to_fs("Plain Box") == "Plain Box"


def test_log_lines_are_printable() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(PrintableFormatter("%(message)s"))
    logger = logging.getLogger("slfs.test.terminal_safe")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("viewer says: %s", HOSTILE)
    finally:
        logger.removeHandler(handler)
    assert out.getvalue() == "viewer says: " + printable(HOSTILE) + "\n"
    assert "\x1b" not in out.getvalue()


def test_cli_output_is_printable() -> None:
    out = io.StringIO()
    stream = PrintableStream(out)
    print("Box" + HOSTILE, file=stream)  # type: ignore[arg-type]
    assert out.getvalue() == "Box" + printable(HOSTILE) + "\n"
