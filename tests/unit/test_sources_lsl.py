"""The LSL expansion: pcpp's C step between Firestorm's own steps, with an origin per line."""

from __future__ import annotations

import datetime
import os
import time

import attrs
import pytest

from slfs.sources import AgentMacros, Expansion, Line, Origin, PreprocessError, Source, lsl
from slfs.sources.firestorm import multiline_strings
from slfs.sources.lsl import expand_lsl

MAIN = "/home/u/sl/Box/Main.lsl"
AGENT = AgentMacros(agent_id="2d5ffdca-cd6a-4d0b-9b1a-0e0f8c7d6e5f", agent_name="Jane Doe")
NOW = datetime.datetime(2024, 3, 5, 6, 7, 8, tzinfo=datetime.UTC)


@attrs.define
class FakeResolver:
    """`"x"` from `quoted` (under /home/u/sl/Box), `<x>` from `system` (under /inc); records calls."""

    quoted: dict[str, str] = attrs.field(factory=dict)
    system: dict[str, str] = attrs.field(factory=dict)
    calls: list[tuple[str, str, bool]] = attrs.field(factory=list)

    def find(self, name: str, including: str, angle: bool) -> Source | None:
        self.calls.append((name, including, angle))
        files, root = (self.system, "/inc") if angle else (self.quoted, "/home/u/sl/Box")
        text = files.get(name)
        return None if text is None else Source(f"{root}/{name}", text)

    def searched(self, name: str, including: str, angle: bool) -> list[str]:
        return ["/inc"] if angle else [os.path.dirname(including), "/home/u/lib", "/inc"]


def expand(source: str, resolver: FakeResolver | None = None, **kw: object) -> Expansion:
    kw.setdefault("lazy_lists", False)
    kw.setdefault("switch", False)
    kw.setdefault("now", NOW)
    return expand_lsl(source, MAIN, resolver or FakeResolver(), macros=AGENT, **kw)  # type: ignore[arg-type]


def rows(e: Expansion) -> list[tuple[str, str, int]]:
    lines = e.text.split("\n")
    assert len(lines) == len(e.origins)
    return [(t, o.path, o.row) for t, o in zip(lines, e.origins, strict=True)]


def code(e: Expansion) -> list[tuple[str, str, int]]:
    """The lines that are not empty."""
    return [r for r in rows(e) if r[0].strip()]


def fails(source: str, resolver: FakeResolver | None = None) -> PreprocessError:
    with pytest.raises(PreprocessError) as info:
        expand(source, resolver)
    return info.value


# -- Firestorm's multi-line string step ----------------------------------------------------------


def test_newlines_in_strings_become_escapes_and_follow_the_closing_quote() -> None:
    assert multiline_strings('a = "x\ny\nz"; b;\nc') == 'a = "x\\ny\\nz"\n\n; b;\nc'


def test_string_step_skips_comments_and_escapes() -> None:
    # a quote in a comment starts no string; an escaped quote ends none
    assert multiline_strings('// "\nx /* " */ y\n') == '// "\nx /* " */ y\n'
    assert multiline_strings('"a\\"b\nc"') == '"a\\"b\\nc"\n'
    # a backslash takes the next character as it is: a backslash-newline stays a line splice
    assert multiline_strings('"a\\\nb"') == '"a\\\nb"'
    # `/` then `"`: Firestorm's state machine takes the quote as code, not as a string's start
    assert multiline_strings('/"\n"') == '/"\n"'
    # an unterminated string: its newlines are not given back (as in Firestorm)
    assert multiline_strings('"a\nb') == '"a\\nb'


def test_multiline_string_keeps_the_rows_of_what_follows() -> None:
    e = expand('llOwnerSay("one\ntwo\nthree");\ninteger x = __LINE__;\n')
    assert rows(e) == [
        ('llOwnerSay("one\\ntwo\\nthree"', MAIN, 1),
        ("", MAIN, 2),
        (");", MAIN, 3),
        ("integer x = 4;", MAIN, 4),
    ]


def test_macros_are_not_expanded_inside_a_multiline_string() -> None:
    e = expand('#define two 2\ns = "one\ntwo";\n')
    assert code(e)[0][0] == 's = "one\\ntwo"'


# -- the C step ------------------------------------------------------------------------------------


def test_object_like_function_like_and_variadic_macros() -> None:
    e = expand(
        "#define N 5\n"
        "#define ADD(a, b) ((a) + (b))\n"
        "#define S(x) #x\n"
        "#define CAT(a, b) a ## b\n"
        "#define CALL(f, ...) f(__VA_ARGS__)\n"
        'x = ADD(N, 1); s = S(hi "q"); CAT(ll, Say)(0, ""); CALL(llOwnerSay,"a");\n'
    )
    assert code(e) == [('x = ((5) + (1)); s = "hi \\"q\\""; llSay(0, ""); llOwnerSay("a");', MAIN, 6)]


def test_conditionals_with_defined_elif_else_and_undef() -> None:
    e = expand(
        "#define X\n"
        "#if defined(X) && !defined(Y)\n"
        "a;\n"
        "#elif 1\n"
        "b;\n"
        "#else\n"
        "c;\n"
        "#endif\n"
        "#undef X\n"
        "#ifdef X\n"
        "d;\n"
        "#endif\n"
        "#ifndef X\n"
        "e;\n"
        "#endif\n"
        "#if 0\n"
        "f;\n"
        "#elif defined X\n"
        "g;\n"
        "#elif 2 > 1\n"
        "h;\n"
        "#endif\n"
    )
    assert code(e) == [("a;", MAIN, 3), ("e;", MAIN, 14), ("h;", MAIN, 21)]


def test_each_row_keeps_its_place_without_includes() -> None:
    source = "// comment\n#define A 1\n\n\n\n\n\n\n\n\n\nx = A; /* two\nrows */ y = 2;\n#if 0\nno;\n#endif\nz;\n"
    e = expand(source)
    lines = rows(e)
    assert [r[2] for r in lines] == list(range(1, 18))
    assert lines[11] == ("x = 1;   y = 2;", MAIN, 12)
    assert lines[16] == ("z;", MAIN, 17)
    assert all(t == "" for t, _, r in lines if r not in (12, 17))


def test_comments_are_not_kept() -> None:
    e = expand("a; // line\nb; /* block */ c;\n")
    assert "line" not in e.text and "block" not in e.text
    assert code(e) == [("a;", MAIN, 1), ("b;   c;", MAIN, 2)]


def test_trigraphs_are_left_alone() -> None:
    assert expand('s = "What??!"; t = "??=";\n').text == 's = "What??!"; t = "??=";'


def test_rows_count_newlines_only() -> None:
    e = expand('s = "a\rb\x0cc\u2028d";\nx = __LINE__;\n')
    assert rows(e) == [('s = "a\rb\x0cc\u2028d";', MAIN, 1), ("x = 2;", MAIN, 2)]


def test_pragma_once_and_unknown_pragmas() -> None:
    e = expand("#pragma\n#pragma foo bar\nx;\n")
    assert code(e) == [("#pragma foo bar", MAIN, 2), ("x;", MAIN, 3)]


def test_line_directive_renumbers_and_renames() -> None:
    e = expand('a;\n#line 100 "gen.lsl"\nb = __LINE__; f = __FILE__;\nc;\n#line 7\nd = __LINE__;\n')
    assert code(e) == [
        ("a;", MAIN, 1),
        ('b = 100; f = "gen.lsl";', "gen.lsl", 100),
        ("c;", "gen.lsl", 101),
        ("d = 7;", "gen.lsl", 7),
    ]


def test_line_directive_with_a_macro() -> None:
    e = expand("#define L 50\n#line L\nx = __LINE__;\n")
    assert code(e) == [("x = 50;", MAIN, 50)]


# -- Firestorm's macros ---------------------------------------------------------------------------


def test_agent_macros_quoted_and_bare() -> None:
    e = expand("a = __AGENTKEY__; b = __AGENTID__; c = __AGENTIDRAW__; d = __AGENTNAME__;\n")
    uuid = AGENT.agent_id
    assert e.text == f'a = "{uuid}"; b = "{uuid}"; c = {uuid}; d = "Jane Doe";'


def test_time_macros_come_from_now() -> None:
    e = expand("d = __DATE__; t = __TIME__; u = __UNIXTIME__;\n")
    assert e.text == f'd = "Mar  5 2024"; t = "06:07:08"; u = {int(NOW.timestamp())};'
    assert int(NOW.timestamp()) == 1709618828


def test_now_naive_is_utc_and_aware_is_converted() -> None:
    naive = expand("t = __TIME__; d = __DATE__;\n", now=datetime.datetime(2024, 12, 31, 23, 59, 1))
    assert naive.text == 't = "23:59:01"; d = "Dec 31 2024";'
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    aware = expand("t = __TIME__; u = __UNIXTIME__;\n", now=datetime.datetime(2024, 1, 1, 1, 0, 0, tzinfo=plus2))
    assert aware.text == 't = "23:00:00"; u = 1704063600;'


def test_now_defaults_to_the_current_time() -> None:
    before = int(time.time())
    e = expand("u = __UNIXTIME__;\n", now=None)
    assert before <= int(e.text.split("= ")[1].rstrip(";")) <= int(time.time())


def test_deterministic_for_the_same_now() -> None:
    source = "a = __DATE__ + __TIME__; b = __UNIXTIME__;\n"
    assert expand(source) == expand(source)
    later = expand(source, now=NOW + datetime.timedelta(seconds=1))
    assert later.text != expand(source).text


def test_file_line_and_shortfile() -> None:
    # __FILE__ is the in-world name (never the local path, which would show the user's home)
    e = expand("f = __FILE__; s = __SHORTFILE__;\nl = __LINE__;\n#define L __LINE__\nm = L;\n")
    assert code(e) == [
        ('f = "Main.lsl"; s = "Main.lsl";', MAIN, 1),
        ("l = 2;", MAIN, 2),
        ("m = 4;", MAIN, 4),
    ]


def test_casts() -> None:
    e = expand(
        "a = list(1, 2); b = float(x); c = integer(y); d = key(k); e = rotation(r); "
        "f = quaternion(q); g = string(s); h = vector(v);\n"
        "list l = []; string t = (string)1;\n"
    )
    assert code(e) == [
        (
            "a = ((list)(1, 2)); b = ((float)(x)); c = ((integer)(y)); d = ((key)(k)); "
            "e = ((rotation)(r)); f = ((quaternion)(q)); g = ((string)(s)); h = ((vector)(v));",
            MAIN,
            1,
        ),
        ("list l = []; string t = (string)1;", MAIN, 2),
    ]


def test_no_pcpp_macro() -> None:
    assert expand("x = __PCPP__;\n").text == "x = __PCPP__;"


# -- includes -------------------------------------------------------------------------------------


def test_nested_includes_map_to_their_files_and_rows() -> None:
    r = FakeResolver(
        quoted={
            "a.lsl": '// a\ninteger a = 1;\n#include "b.lsl"\ninteger a2 = __LINE__; string af = __SHORTFILE__;\n',
            "b.lsl": "\n\ninteger b = __LINE__; string f = __FILE__; string s = __SHORTFILE__;\n",
        }
    )
    e = expand('#include "a.lsl"\ndefault { state_entry() { llOwnerSay(__SHORTFILE__); } }\n', r)
    a, b = "/home/u/sl/Box/a.lsl", "/home/u/sl/Box/b.lsl"
    assert code(e) == [
        ("integer a = 1;", a, 2),
        ('integer b = 3; string f = "b.lsl"; string s = "b.lsl";', b, 3),
        ('integer a2 = 4; string af = "a.lsl";', a, 4),
        ('default { state_entry() { llOwnerSay("Main.lsl"); } }', MAIN, 2),
    ]
    assert e.includes == (a, b)
    # the includer is passed as the resolver's `including`
    assert r.calls == [("a.lsl", MAIN, False), ("b.lsl", a, False)]
    assert e.origin_of(1) == Origin(a, 1)


def test_angle_and_quoted_includes_search_their_places() -> None:
    r = FakeResolver(quoted={"x.lsl": "quoted;\n"}, system={"x.lsl": "system;\n"})
    e = expand('#include <x.lsl>\n#include "x.lsl"\n', r)
    assert code(e) == [("system;", "/inc/x.lsl", 1), ("quoted;", "/home/u/sl/Box/x.lsl", 1)]
    assert r.calls == [("x.lsl", MAIN, True), ("x.lsl", MAIN, False)]
    assert e.includes == ("/inc/x.lsl", "/home/u/sl/Box/x.lsl")


def test_include_by_macro() -> None:
    r = FakeResolver(quoted={"lib.lsl": "lib;\n"})
    assert code(expand('#define LIB "lib.lsl"\n#include LIB\n', r)) == [("lib;", "/home/u/sl/Box/lib.lsl", 1)]


def test_missing_include_names_the_places_searched() -> None:
    e = fails('x;\n  #include "nope.lsl"\n')
    assert (e.path, e.row, e.col) == (MAIN, 2, 3)
    assert e.message == 'include not found: "nope.lsl" (searched: /home/u/sl/Box, /home/u/lib, /inc)'
    angle = fails("#include <nope.lsl>\n")
    assert angle.message == "include not found: <nope.lsl> (searched: /inc)"


def test_missing_include_inside_an_include_is_reported_there() -> None:
    r = FakeResolver(quoted={"a.lsl": 'a;\n\n#include "gone.lsl"\n'})
    e = fails('#include "a.lsl"\n', r)
    assert (e.path, e.row, e.col) == ("/home/u/sl/Box/a.lsl", 3, 1)


def test_includes_never_come_from_the_file_system(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))
    with open("real.lsl", "w") as f:
        f.write("from disk;\n")
    e = fails('#include "real.lsl"\n')
    assert e.message.startswith('include not found: "real.lsl"')


def test_pragma_once_file_is_read_once() -> None:
    r = FakeResolver(quoted={"once.lsl": "#pragma once\nonce;\n"})
    e = expand('#include "once.lsl"\n#include "once.lsl"\nafter;\n', r)
    assert code(e) == [("once;", "/home/u/sl/Box/once.lsl", 2), ("after;", MAIN, 3)]
    assert e.includes == ("/home/u/sl/Box/once.lsl",)


def test_include_guard_is_read_once_and_leaves_no_blank_lines() -> None:
    r = FakeResolver(quoted={"g.lsl": "#ifndef G\n#define G\nguarded;\n#endif\n"})
    e = expand('#include "g.lsl"\n#include "g.lsl"\nafter;\n', r)
    g = "/home/u/sl/Box/g.lsl"
    assert rows(e) == [("", g, 1), ("", g, 2), ("guarded;", g, 3), ("", MAIN, 2), ("after;", MAIN, 3)]


def test_a_guard_undefined_again_lets_the_file_in_again() -> None:
    r = FakeResolver(quoted={"g.lsl": "#ifndef G\n#define G\nguarded;\n#endif\n"})
    e = expand('#include "g.lsl"\n#undef G\n#include "g.lsl"\n', r)
    assert [t for t, _, _ in code(e)] == ["guarded;", "guarded;"]


def test_an_include_of_only_definitions_keeps_the_main_rows() -> None:
    r = FakeResolver(quoted={"defs.lsl": "// defs\n#define ONE 1\n\n#define TWO 2\n"})
    e = expand('#include "defs.lsl"\nx = ONE + TWO;\n', r)
    assert rows(e) == [("", MAIN, 1), ("x = 1 + 2;", MAIN, 2)]
    assert e.includes == ("/home/u/sl/Box/defs.lsl",)


def test_guarded_mutual_includes_are_fine() -> None:
    r = FakeResolver(
        quoted={
            "a.lsl": '#ifndef A\n#define A\n#include "b.lsl"\na;\n#endif\n',
            "b.lsl": '#ifndef B\n#define B\n#include "a.lsl"\nb;\n#endif\n',
        }
    )
    e = expand('#include "a.lsl"\n', r)
    assert [(t, p) for t, p, _ in code(e)] == [("b;", "/home/u/sl/Box/b.lsl"), ("a;", "/home/u/sl/Box/a.lsl")]


def test_include_cycle_is_an_error_naming_it() -> None:
    r = FakeResolver(quoted={"a.lsl": '#include "b.lsl"\n', "b.lsl": 'b;\n#include "a.lsl"\n'})
    e = fails('#include "a.lsl"\n', r)
    a, b = "/home/u/sl/Box/a.lsl", "/home/u/sl/Box/b.lsl"
    assert (e.path, e.row) == (b, 2)
    assert e.message == f"include cycle: {a} -> {b} -> {a}"


def test_self_include_is_a_cycle() -> None:
    r = FakeResolver(quoted={"s.lsl": 's;\n#include "s.lsl"\n'})
    e = fails('#include "s.lsl"\n', r)
    assert e.message == "include cycle: /home/u/sl/Box/s.lsl -> /home/u/sl/Box/s.lsl"


def test_include_inside_a_false_conditional_is_not_resolved() -> None:
    r = FakeResolver()
    assert code(expand('#if 0\n#include "nope.lsl"\n#foo\n#endif\nok;\n', r)) == [("ok;", MAIN, 5)]
    assert r.calls == []


# -- errors ---------------------------------------------------------------------------------------


def test_error_directive_location_and_message() -> None:
    e = fails('x;\n  #error stop "here"\n')
    assert (e.path, e.row, e.col, e.message) == (MAIN, 2, 3, '#error stop "here"')


def test_error_in_an_include_is_reported_there() -> None:
    r = FakeResolver(quoted={"a.lsl": "a;\n#if 1\n#error in a\n#endif\n"})
    e = fails('#include "a.lsl"\n', r)
    assert (e.path, e.row, e.message) == ("/home/u/sl/Box/a.lsl", 3, "#error in a")


def test_error_after_line_directive_names_the_given_place() -> None:
    e = fails('#line 40 "gen.lsl"\n\n#error x\n')
    assert (e.path, e.row) == ("gen.lsl", 41)


def test_warning_is_an_error_as_in_firestorm() -> None:
    e = fails("#warning careful\n")
    assert (e.row, e.message) == (1, "#warning careful")


def test_error_in_false_branch_is_ignored() -> None:
    assert expand("#if 0\n#error no\n#endif\nok;\n").text.strip() == "ok;"


@pytest.mark.parametrize(
    ("source", "row", "message"),
    [
        ("#if 1\nx\n", 1, "Unterminated #if 1"),
        ("x\n#endif\n", 2, "Misplaced #endif"),
        ("#else\n", 1, "Misplaced #else"),
        ("#elif 1\n", 1, "Misplaced #elif"),
        ("#foo bar\n", 1, "unknown directive #foo"),
        ("#ifdef\n#endif\n", 1, "#ifdef needs one macro name"),
        ("#ifndef A B\n#endif\n", 1, "#ifndef needs one macro name"),
        ("#if\n#endif\n", 1, "#if needs an expression"),
        ("\n#define\n", 2, "#define needs a macro name"),
        ("#define 3 x\n", 1, "a macro name must be an identifier"),
        ("#undef\n", 1, "#undef needs a macro name"),
        ("#include\n", 1, '#include needs "file" or <file>'),
        ("#include nope\n", 1, '#include needs "file" or <file>'),
        ("#include <nope\n", 1, '#include needs "file" or <file>'),
        ("#line x\n", 1, '#line needs a line number and an optional "file name"'),
        ("#line 5 6\n", 1, '#line needs a line number and an optional "file name"'),
        ("#define F(a, b) a\nF(1)\n", 2, "Macro F requires 2 arguments but was passed 1"),
        ("#define F(a, b) a\nx = F(1,\n", 2, "unterminated argument list of a macro call"),
        ("#if 1 +\n#endif\n", 1, "Could not evaluate expression"),
    ],
)
def test_malformed_directives(source: str, row: int, message: str) -> None:
    e = fails(source)
    assert (e.path, e.row) == (MAIN, row)
    assert e.message.startswith(message)


# -- Firestorm's steps after the C step -----------------------------------------------------------


@attrs.define
class FakeFirestorm:
    calls: list[str] = attrs.field(factory=list)

    def lazy_lists(self, lines: list[Line]) -> list[Line]:
        self.calls.append("lazy_lists")
        return [*lines, Line("// lazy", lines[-1].origin)]

    def switches(self, lines: list[Line]) -> list[Line]:
        self.calls.append("switches")
        return [*lines, Line("// switch", lines[-1].origin)]


@pytest.fixture
def firestorm(monkeypatch: pytest.MonkeyPatch) -> FakeFirestorm:
    fake = FakeFirestorm()
    monkeypatch.setattr(lsl, "_firestorm", lambda: fake)
    return fake


def test_lazy_lists_then_switches_on_the_c_steps_lines(firestorm: FakeFirestorm) -> None:
    e = expand("#define A 1\nx = A;\n", lazy_lists=True, switch=True)
    assert firestorm.calls == ["lazy_lists", "switches"]
    assert rows(e) == [("", MAIN, 1), ("x = 1;", MAIN, 2), ("// lazy", MAIN, 2), ("// switch", MAIN, 2)]


def test_steps_off(firestorm: FakeFirestorm) -> None:
    expand("x;\n", lazy_lists=False, switch=False)
    assert firestorm.calls == []


@pytest.mark.parametrize(
    ("define", "calls"),
    [("USE_LAZY_LISTS", ["lazy_lists"]), ("USE_SWITCHES", ["switches"])],
)
def test_a_script_define_turns_a_step_on(firestorm: FakeFirestorm, define: str, calls: list[str]) -> None:
    expand(f"#define {define}\nx;\n", lazy_lists=False, switch=False)
    assert firestorm.calls == calls


def test_a_define_seen_at_any_point_counts(firestorm: FakeFirestorm) -> None:
    expand("#define USE_SWITCHES\nx;\n#undef USE_SWITCHES\ny;\n", lazy_lists=False, switch=False)
    assert firestorm.calls == ["switches"]


def test_a_define_in_an_include_counts(firestorm: FakeFirestorm) -> None:
    r = FakeResolver(quoted={"opts.lsl": "#define USE_LAZY_LISTS\n"})
    expand('#include "opts.lsl"\nx;\n', r, lazy_lists=False, switch=False)
    assert firestorm.calls == ["lazy_lists"]


def test_a_define_cannot_turn_a_step_off(firestorm: FakeFirestorm) -> None:
    expand("#undef USE_LAZY_LISTS\nx;\n", lazy_lists=True, switch=True)
    assert firestorm.calls == ["lazy_lists", "switches"]


def test_defaults_run_the_real_firestorm_steps() -> None:
    source = "list l;\ndefault { state_entry() {\n    l[2] = 5;\n    switch (1) { case 1: break; }\n} }\n"
    e = expand_lsl(source, MAIN, FakeResolver(), macros=AGENT, now=NOW)
    assert "lazy_list_set(l,2,[5])" in e.text.replace(" ", "")
    assert "switch" not in e.text and "jump" in e.text
    assert len(e.origins) == len(e.text.split("\n"))
    assert all(o.path == MAIN for o in e.origins)
    assert Origin(MAIN, 1) in e.origins and Origin(MAIN, 5) in e.origins
