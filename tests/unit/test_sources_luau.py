"""`require("...")` inlining for Luau (slfs.sources.luau)."""

from __future__ import annotations

import posixpath

import pytest

from slfs.sim.compiler import compile_source
from slfs.sources import Expansion, Origin, PreprocessError, Source
from slfs.sources.luau import expand_luau, requires, resolvable_requires


class FakeResolver:
    """Files in a dict by path; a name is looked up next to the including file."""

    def __init__(self, files: dict[str, str], keys: dict[str, str] | None = None) -> None:
        self.files = files
        self.keys = keys or {}
        self.asked: list[tuple[str, str, bool]] = []

    def _path(self, name: str, including: str) -> str:
        return posixpath.normpath(posixpath.join(posixpath.dirname(including), name))

    def find(self, name: str, including: str, angle: bool) -> Source | None:
        self.asked.append((name, including, angle))
        path = self._path(name, including)
        if path not in self.files:
            return None
        # named in-world as in diagnostics here (these paths are relative already)
        return Source(path, self.files[path], self.keys.get(path, ""), shown=path)

    def searched(self, name: str, including: str, angle: bool) -> list[str]:
        return [self._path(name, including)]


def rows(expansion: Expansion) -> list[tuple[str, str, int]]:
    """(line, origin path, origin row) for each line of the expansion."""
    lines = expansion.text.split("\n")
    return [(line, o.path, o.row) for line, o in zip(lines, expansion.origins, strict=True)]


# --- finding requires ----------------------------------------------------------------------------


def test_requires_finds_calls_with_a_string_literal() -> None:
    src = 'local a = require("a")\nlocal b = require(\'lib/b.luau\')\nlocal c = require ( "c" )\n'
    assert requires(src) == [("a", 1, 11), ("lib/b.luau", 2, 11), ("c", 3, 11)]


def test_requires_ignores_strings_and_comments() -> None:
    src = "\n".join(
        [
            '-- require("c1")',
            '--[[ require("c2")',
            'still require("c3") ]] local x = require("real1")',
            '--[==[ ]] require("c4") ]==]',
            'local s = "require(\\"s1\\")" .. \'require("s2")\'',
            'local l = [[ require("s3") ]] .. [=[ ]] require("s4") ]=]',
            'local t = `require("s5") {require("real2")} {  {1} } require("s6")`',
            'local e = "\\z',
            '   require(\'s7\')" print(require("real3"))',
        ]
    )
    assert [name for name, _, _ in requires(src)] == ["real1", "real2", "real3"]


def test_requires_ignores_fields_methods_and_dynamic_arguments() -> None:
    src = 'm.require("a") m:require("b") require(x) require("a" .. b) require "c" required("d") myrequire("e")'
    assert requires(src) == []
    assert requires('local s = "a"..require("m")') == [("m", 1, 16)]


# --- expansion -----------------------------------------------------------------------------------


def test_single_module_exact_text_and_origins() -> None:
    resolver = FakeResolver({"m.luau": "local x = 42\nreturn x\n"})
    main = '-- main\nlocal v = require("m")\nprint(v)\n'
    e = expand_luau(main, "main.luau", resolver)
    assert e.text == (
        "local __require_table: { [number]: () -> any } = {}\n"
        "__require_table[1] = (function()\n"
        '-- @line 1 "m.luau"\n'
        "local x = 42\n"
        "return x\n"
        "end)\n"
        '-- @line 1 "main.luau"\n'
        "-- main\n"
        "local v = __require_table[1]()\n"
        "print(v)\n"
        "__require_table = nil :: any\n"
    )
    assert e.origins == (
        Origin("main.luau", 2),  # the table
        Origin("main.luau", 2),  # slot
        Origin("main.luau", 2),  # @line
        Origin("m.luau", 1),
        Origin("m.luau", 2),
        Origin("main.luau", 2),  # end)
        Origin("main.luau", 2),  # @line of the main chunk
        Origin("main.luau", 1),
        Origin("main.luau", 2),
        Origin("main.luau", 3),
        Origin("main.luau", 2),  # clearing
        Origin("main.luau", 2),  # after the final newline
    )
    assert e.includes == ("m.luau",)
    assert resolver.asked == [("m.luau", "main.luau", False)]

def test_every_main_line_maps_to_its_row() -> None:
    resolver = FakeResolver({"a.luau": "return 1\n" * 5, "b.luau": "return 2\n"})
    main = "\n".join(["--!strict", 'local a = require("a")', "", 'local b = require("b")', "print(a, b)"])
    e = expand_luau(main, "main.luau", resolver)
    out = e.text.split("\n")
    shown = [(line, o.row) for line, o in zip(out, e.origins, strict=True) if o.path == "main.luau"
             and not line.startswith(("local __require_table", "__require_table", "-- @line", "end)"))]
    assert [row for _line, row in shown] == [1, 2, 3, 4, 5]
    assert [line for line, _row in shown if "require" not in line] == ["--!strict", "", "print(a, b)"]
    assert out[0] == "--!strict"  # hot comments stay first
    assert out[1].startswith("local __require_table")
    assert '-- @line 2 "main.luau"' in out

def test_two_modules_get_numbered_slots_in_first_use_order() -> None:
    resolver = FakeResolver({"b.luau": "return 'b'", "a.luau": "return 'a'"})
    e = expand_luau('local b = require("b")\nlocal a = require("a")', "main.luau", resolver)
    assert "local b = __require_table[1]()" in e.text
    assert "\nlocal a = __require_table[2]()" in e.text
    assert "__require_table[1] = (function()\n-- @line 1 \"b.luau\"\nreturn 'b'\nend)" in e.text
    assert "__require_table[2] = (function()\n-- @line 1 \"a.luau\"\nreturn 'a'\nend)" in e.text
    assert e.includes == ("b.luau", "a.luau")


def test_a_module_required_twice_is_inlined_once() -> None:
    resolver = FakeResolver({"m.luau": "return {marker = true}"})
    e = expand_luau('local a = require("m")\nlocal b = require("m.luau")', "main.luau", resolver)
    assert e.text.count("marker = true") == 1
    assert e.text.count("__require_table[1]()") == 2
    assert e.includes == ("m.luau",)


def test_modules_are_one_by_identity() -> None:
    resolver = FakeResolver(
        {"x/m.luau": "return {marker = true}", "y/m.luau": "return {marker = true}"},
        keys={"x/m.luau": "asset-1", "y/m.luau": "asset-1"},
    )
    e = expand_luau('require("x/m")\nrequire("y/m")', "main.luau", resolver)
    assert e.text.count("marker = true") == 1
    assert e.includes == ("x/m.luau",)


def test_nested_requires_resolve_relative_to_the_module() -> None:
    resolver = FakeResolver(
        {
            "lib/a.luau": 'local c = require("c")\nreturn c',
            "lib/c.luau": 'local d = require("../d")\nreturn d',
            "d.luau": "return 4",
        }
    )
    e = expand_luau('local a = require("lib/a")\nlocal d = require("d")', "main.luau", resolver)
    assert [(n, i) for n, i, _ in resolver.asked] == [
        ("lib/a.luau", "main.luau"),
        ("c.luau", "lib/a.luau"),
        ("../d.luau", "lib/c.luau"),
        ("d.luau", "main.luau"),
    ]
    # A module gets its slot before the modules it requires.
    assert e.includes == ("lib/a.luau", "lib/c.luau", "d.luau")
    assert "local c = __require_table[2]()" in e.text
    assert "local d = __require_table[3]()" in e.text
    assert e.text.count("__require_table[3]()") == 2
    assert e.text.count("return 4") == 1
    got = rows(e)
    # Module lines come from their files; a slot's generated lines from the require that caused it.
    assert ("local c = __require_table[2]()", "lib/a.luau", 1) in got
    assert ("local d = __require_table[3]()", "lib/c.luau", 1) in got
    assert ("__require_table[2] = (function()", "lib/a.luau", 1) in got
    assert ('-- @line 1 "lib/c.luau"', "lib/a.luau", 1) in got
    assert ("__require_table[3] = (function()", "lib/c.luau", 1) in got
    end_rows = [(p, r) for line, p, r in got if line == "end)"]
    assert end_rows == [("main.luau", 1), ("lib/a.luau", 1), ("lib/c.luau", 1)]


def test_luau_appended_only_to_a_name_without_extension() -> None:
    resolver = FakeResolver({"m.luau": "return 1", "n.lua": "return 2", "o.txt": "return 3"})
    e = expand_luau('require("m")\nrequire("n")\nrequire("o.txt")', "main.luau", resolver)
    assert [name for name, _, _ in resolver.asked] == ["m.luau", "n.luau", "n.lua", "o.txt"]
    assert e.includes == ("m.luau", "n.lua", "o.txt")


def test_a_cycle_is_an_error_naming_the_chain() -> None:
    resolver = FakeResolver({"a.luau": 'return require("b")', "b.luau": '-- b\n  local a = require("a")\nreturn a'})
    with pytest.raises(PreprocessError) as info:
        expand_luau('local a = require("a")', "main.luau", resolver)
    err = info.value
    assert (err.path, err.row, err.col) == ("b.luau", 2, 13)
    assert err.message == "require cycle: a.luau -> b.luau -> a.luau"


def test_a_module_requiring_the_main_file_is_a_cycle() -> None:
    resolver = FakeResolver({"main.luau": "", "a.luau": 'return require("main")'})
    with pytest.raises(PreprocessError) as info:
        expand_luau('local a = require("a")', "main.luau", resolver)
    assert info.value.message == "require cycle: main.luau -> a.luau -> main.luau"


def test_a_missing_module_is_an_error() -> None:
    resolver = FakeResolver({"a.luau": 'local x = 1\nreturn require("lib/missing")'})
    with pytest.raises(PreprocessError) as info:
        expand_luau('local a = require("a")', "main.luau", resolver)
    err = info.value
    assert (err.path, err.row, err.col) == ("a.luau", 2, 8)
    assert err.message == 'module not found: "lib/missing" (searched: lib/missing.luau, lib/missing.lua)'
    assert str(err) == f"a.luau:2:8: {err.message}"


def test_resolvable_requires() -> None:
    resolver = FakeResolver({"m.luau": "return 1"})
    assert resolvable_requires('local x = require("nope")\nlocal m = require("m")', "main.luau", resolver)
    assert not resolvable_requires('local x = require("nope")', "main.luau", resolver)
    assert not resolvable_requires('-- require("m")\nlocal s = "require(\'m\')"', "main.luau", resolver)


def test_a_source_without_requires_is_unchanged() -> None:
    main = '-- require("m")\nprint("require(\'m\')")\n'
    e = expand_luau(main, "main.luau", FakeResolver({"m.luau": "return 1"}))
    assert e.text == main
    assert e.origins == (Origin("main.luau", 1), Origin("main.luau", 2), Origin("main.luau", 3))
    assert e.includes == ()


def test_strings_and_comments_in_modules_are_untouched() -> None:
    module = '--[[ require("x") ]]\nlocal s = [==[\nrequire("y")]==]\nreturn `{s} require("z")`'
    e = expand_luau('local m = require("m")', "main.luau", FakeResolver({"m.luau": module}))
    assert module in e.text


def test_the_table_comes_after_hot_comments_only() -> None:
    main = '--!strict\n--!nolint\n--[[ a\nlong comment ]] local m = require("m")\n'
    e = expand_luau(main, "main.luau", FakeResolver({"m.luau": "return 1"}))
    assert e.text.split("\n")[:3] == ["--!strict", "--!nolint", "local __require_table: { [number]: () -> any } = {}"]
    assert "--[[ a\nlong comment ]] local m = __require_table[1]()\n" in e.text

def test_a_require_over_several_lines_keeps_its_line_breaks() -> None:
    main = 'local m = require(\n  "m"\n)\nprint(m)'
    e = expand_luau(main, "main.luau", FakeResolver({"m.luau": "return 1"}))
    out = e.text.split("\n")
    i = out.index("print(m)")
    assert out[i - 2:i] == ["", ")"]
    assert e.origins[i] == Origin("main.luau", 4)

def test_crlf_sources_stay_crlf() -> None:
    main = 'local m = require("m")\r\nprint(m)\r\n'
    e = expand_luau(main, "main.luau", FakeResolver({"m.luau": "return 1\r\n"}))
    assert e.text.endswith('end)\r\n-- @line 1 "main.luau"\r\nlocal m = __require_table[1]()\r\nprint(m)\r\n'
                           "__require_table = nil :: any\r\n")
    assert "\nreturn 1\r\nend)\r\n" in e.text

def test_the_expansion_compiles() -> None:
    resolver = FakeResolver(
        {
            "lib/util.luau": 'local M = {}\nfunction M.greet(n)\n  return "hi " .. n\nend\nreturn M\n',
            "lib/log.luau": 'local util = require("util")\nreturn function(s) ll.OwnerSay(util.greet(s)) end\n',
        }
    )
    main = (
        '--!strict\nlocal util = require("lib/util")\nlocal log = require("lib/log")\n'
        'LLEvents:on("touch_start", function(events)\n  log(util.greet("x"))\nend)\n'
    )
    e = expand_luau(main, "main.luau", resolver)
    assert compile_source(main, "luau") == []
    assert compile_source(e.text, "luau") == []
