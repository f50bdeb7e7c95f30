"""A compile verdict in every shape a viewer generation sends (viewer-source.md §3)."""

from __future__ import annotations

from typing import Any

import pytest

from slfs.protocol.compile_output import MAX_MESSAGE, MAX_ROWS, UNPRINTABLE, compile_rows, parse_line
from slfs.protocol.text import clean, one_line


def rows(diagnostics: Any = None, errors: Any = None) -> list[tuple[int, int, str, str]]:
    return [(d.row, d.column, d.level, d.message) for d in compile_rows(diagnostics, errors).rows]


def test_lsl_raw_lines_are_zero_based_and_keep_their_level() -> None:
    assert rows(errors=["(2, 9) : ERROR : Syntax error", "(0, 0) : WARNING : unused"]) == [
        (3, 10, "ERROR", "Syntax error"), (1, 1, "WARNING", "unused")]
    assert parse_line("(2, 9) : ERROR : Syntax error").format == "lsl"


def test_luau_raw_lines_keep_their_row_and_have_no_column() -> None:
    assert rows(errors=["[string \"Main\"]:2: Expected identifier, got 'BREAK'"]) == [
        (2, 0, "ERROR", "Expected identifier, got 'BREAK'")]
    assert rows(errors=["Main:7:   too many spaces"]) == [(7, 0, "ERROR", "too many spaces")]
    assert parse_line("Main:7: x").format is None


def test_a_line_matching_neither_pattern_is_kept_whole_at_row_zero() -> None:
    assert rows(errors=["Math Error", "  "]) == [(0, 0, "ERROR", "Math Error")]


def test_structured_rows_under_either_name() -> None:
    record = {"row": 4, "column": 2, "level": "ERROR", "message": "m", "format": "lsl"}
    assert rows(diagnostics=[record]) == rows(errors=[record]) == [(4, 2, "ERROR", "m")]
    assert rows(diagnostics=[record], errors=["(0, 0) : ERROR : x"]) == [(4, 2, "ERROR", "m"), (1, 1, "ERROR", "x")]


@pytest.mark.parametrize("value", [5, True, 1.5, {"row": "x"}, [None, 3, ["nested"]]])
def test_wrong_types_are_reported_never_fatal(value: Any) -> None:
    got = compile_rows(None, value)
    assert all(d.row >= 0 for d in got.rows)
    assert got.problems or got.rows


def test_a_string_where_a_list_was_expected_is_its_lines() -> None:
    assert rows(errors="(0, 1) : ERROR : a\n(1, 1) : ERROR : b") == [(1, 2, "ERROR", "a"), (2, 2, "ERROR", "b")]


def test_numbers_past_int32_and_odd_rows_read_as_zero() -> None:
    assert rows(errors=["(4294967295, 0) : ERROR : unplaced"])[0][:2] == (0, 1)
    assert rows(diagnostics=[{"row": 2**40, "column": -1, "level": 3, "message": None}]) == [(0, 0, "ERROR", "")]
    assert rows(diagnostics=[{"row": "12", "column": 3.0, "message": "m"}]) == [(12, 3, "ERROR", "m")]


def test_messages_are_terminal_safe_and_bounded() -> None:
    nasty = "\x1b]52;c;aGk=\x07\x1b[2J\x1b[31mred\x1b[0m\0end\x9b1m" + "y" * 10 * MAX_MESSAGE
    (row,) = rows(errors=[f"(0, 0) : ERROR : {nasty}"])
    assert "\x1b" not in row[3] and "\0" not in row[3] and "\x9b" not in row[3]
    assert row[3].startswith("red end") and len(row[3]) <= MAX_MESSAGE
    # NULs are cleaned like any control character: the row stays, with what is printable of it.
    assert rows(errors=["bad\0line"]) == [(0, 0, "ERROR", "bad line")]
    assert rows(errors=["(3, 4) : ERROR : syntax\0error\0\0"]) == [(4, 5, "ERROR", "syntax error")]
    assert rows(diagnostics=[{"row": 2, "column": 1, "message": "x\0\x07y"}]) == [(2, 1, "ERROR", "x y")]
    # A message of nothing but control characters says so rather than showing an empty row.
    assert rows(errors=["\0" * 12]) == [(0, 0, "ERROR", UNPRINTABLE)]
    assert rows(diagnostics=[{"row": 0, "message": "\0\x1b[2J"}]) == [(0, 0, "ERROR", UNPRINTABLE)]


def test_rows_are_bounded() -> None:
    got = compile_rows(None, ["(0, 0) : ERROR : e"] * (MAX_ROWS + 50))
    assert len(got.rows) == MAX_ROWS and got.problems


def test_a_huge_line_costs_a_bounded_prefix() -> None:
    assert len(rows(errors=["x" * 20_000_000])[0][3]) <= MAX_MESSAGE


def test_clean_keeps_newlines_only_when_asked() -> None:
    assert clean("a\nb\tc", 100) == "a b c"
    assert clean("a\nb", 100, keep_newlines=True) == "a\nb"
    assert clean("abcdef", 4) == "abc…"
    assert one_line("  a \n\n b  ", 100) == "a b"
