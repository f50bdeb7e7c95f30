"""Firestorm's lazy lists and `switch` rewriting (slfs.sources.firestorm): exact output texts, origins."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from slfs.sim.compiler import compile_source
from slfs.sources import Line, Origin, PreprocessError, lines_of
from slfs.sources.firestorm import HELPER, lazy_lists, switches

Step = Callable[[list[Line]], list[Line]]


def run(step: Step, text: str) -> str:
    return "\n".join(line.text for line in step(lines_of(text, "m.lsl")))


def rows(step: Step, text: str) -> list[tuple[int, str]]:
    return [(line.origin.row, line.text) for line in step(lines_of(text, "m.lsl"))]


HELPER_TEXT = "\n".join(HELPER) + "\n"


# --- lazy lists: assignments ---------------------------------------------------------------------


def test_assignment_rewritten_on_its_line_with_the_helper_in_front() -> None:
    assert run(lazy_lists, "list a;\nf() { a[i] = v; }") == (HELPER_TEXT + "list a;\nf() { a=lazy_list_set(a,i,[v]); }")


def test_assignment_keeps_index_and_value_as_written() -> None:
    # Firestorm drops the blanks around `[`, `]` and `=`, keeps those inside the index and before `;`
    assert run(lazy_lists, 'l [ 1 + j ] = "x" ;').endswith('l=lazy_list_set(l, 1 + j ,["x" ]);')
    assert run(lazy_lists, "l[llList2Integer(m, 0)] = [1, 2];").endswith(
        "l=lazy_list_set(l,llList2Integer(m, 0),[[1, 2]]);"
    )
    assert run(lazy_lists, "l[i] = f(x, (y + 1));").endswith("l=lazy_list_set(l,i,[f(x, (y + 1))]);")


def test_assignment_ended_by_a_parenthesis() -> None:
    assert run(lazy_lists, "for (i = 0; i < 3; l[i] = i) ;").endswith("for (i = 0; i < 3; l=lazy_list_set(l,i,[i])) ;")


def test_not_assignments() -> None:
    for text in (
        "if (l[0] == 1) x();",
        "if (l[0] != 1) x();",
        "l[0] += 1;",
        "l[0] <= 1;",
        "return[1] = 2;",
        "l[] = 1;",
        "l[0][1] = 2;",
        "l[0] = 1",  # no `;` or `)` after the value
    ):
        assert run(lazy_lists, text) == text, text


def test_else_and_do_are_no_list_names() -> None:
    assert run(lazy_lists, "if (c) x(); else l[0] = 1;").endswith("else l=lazy_list_set(l,0,[1]);")
    assert run(lazy_lists, "do l[i] = 0; while (++i < 3);").endswith("do l=lazy_list_set(l,i,[0]); while (++i < 3);")


def test_strings_are_never_rewritten() -> None:
    text = 'string s = "a[1] = 2;"; string t = "\\"b[0] = (integer)c[1];\\""; string u = "[]";'
    assert run(lazy_lists, text) == text


def test_value_and_index_inside_strings_are_one_token() -> None:
    assert run(lazy_lists, 'l["k;)"] = "v;)";').endswith('l=lazy_list_set(l,"k;)",["v;)"]);')


def test_a_value_is_not_searched_for_further_assignments() -> None:
    # one pass, as in Firestorm: the inner `b[j] = 3` is part of the value
    assert run(lazy_lists, "a[i] = b[j] = 3;").endswith("a=lazy_list_set(a,i,[b[j] = 3]);")


def test_line_breaks_dropped_by_firestorm_are_kept() -> None:
    out = rows(lazy_lists, "x();\nl\n[0] =\n    5;\ny();")
    assert out[len(HELPER) :] == [(1, "x();"), (2, "l=lazy_list_set(l,"), (3, "0,"), (4, "[5]);"), (5, "y();")]


def test_helper_once_with_the_origin_of_the_first_assignment() -> None:
    lines = [Line("f() {", Origin("main.lsl", 1)), Line("}", Origin("main.lsl", 2))]
    lines[1:1] = [Line("a[0] = 1;", Origin("inc.lsl", 7)), Line("b[0] = 2;", Origin("inc.lsl", 8))]
    out = lazy_lists(lines)
    assert [line.text for line in out] == [
        *HELPER,
        "f() {",
        "a=lazy_list_set(a,0,[1]);",
        "b=lazy_list_set(b,0,[2]);",
        "}",
    ]
    assert [line.origin for line in out] == [Origin("inc.lsl", 7)] * len(HELPER) + [line.origin for line in lines]


def test_no_helper_without_assignments_or_when_the_script_has_one() -> None:
    assert run(lazy_lists, "x = (integer)l[0];") == "x = llList2Integer(l,0);"
    own = "list lazy_list_set(list l, integer i, list v) { return l; }\nf() { a[0] = 1; }"
    assert run(lazy_lists, own) == (
        "list lazy_list_set(list l, integer i, list v) { return l; }\nf() { a=lazy_list_set(a,0,[1]); }"
    )


def test_nothing_to_do() -> None:
    assert lazy_lists([]) == []
    lines = lines_of('default { state_entry() { llSay(0, "l[0] = 1;"); } }', "m.lsl")
    assert lazy_lists(lines) == lines


# --- lazy lists: typed references ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("cast", "function"),
    [
        ("integer", "llList2Integer"),
        ("float", "llList2Float"),
        ("string", "llList2String"),
        ("key", "llList2Key"),
        ("vector", "llList2Vector"),
        ("rotation", "llList2Rot"),
        ("quaternion", "llList2Rot"),
        ("list", "llList2List"),  # two arguments, as Firestorm writes it (the compiler rejects it)
    ],
)
def test_typed_references(cast: str, function: str) -> None:
    assert run(lazy_lists, f"x = ({cast})l[i + 1];") == f"x = {function}(l,i + 1);"
    assert run(lazy_lists, f"x = ( {cast} ) l [ 2 ];") == f"x = {function}(l, 2 );"


def test_typed_reference_in_parentheses() -> None:
    assert run(lazy_lists, "x = (integer)(l[0]) + 1;") == "x = (llList2Integer(l,0)) + 1;"
    assert run(lazy_lists, "x = (integer)( l[0]);") == "x = (llList2Integer(l,0));"
    # anything between `]` and `)`: Firestorm leaves the whole of it alone
    for text in ("x = (integer)(l[0] + 1);", "x = (integer)(l[0] );", "x = (integer)l;", "x = (foo)l[0];"):
        assert run(lazy_lists, text) == text


def test_typed_references_nest_and_combine_with_assignments() -> None:
    assert run(lazy_lists, "x = (integer)a[(integer)b[(float)c[0]]];") == (
        "x = llList2Integer(a,llList2Integer(b,llList2Float(c,0)));"
    )
    assert run(lazy_lists, "a[(integer)i[0]] = (string)b[1];").endswith(
        "a=lazy_list_set(a,llList2Integer(i,0),[llList2String(b,1)]);"
    )


def test_typed_reference_keeps_line_count() -> None:
    assert rows(lazy_lists, "x = (integer)\n  l\n  [0];") == [(1, "x = llList2Integer(l,"), (2, ""), (3, "0);")]


def test_lazy_list_output_compiles() -> None:
    text = (
        "list l;\ndefault\n{\n    state_entry()\n    {\n        l[3] = 1;\n"
        "        integer i = (integer)l[3];\n        llOwnerSay((string)(l[0]));\n    }\n}"
    )
    out = run(lazy_lists, text)
    assert "llList2String(l,0)" in out
    assert compile_source(out, "lsl") == []


# --- switch --------------------------------------------------------------------------------------

BASIC = """\
f(integer x)
{
    switch (x)
    {
        case 1:
            a();
        case 2:
            b();
            break;
        default:
            c();
    }
}"""


def test_switch_with_fallthrough_and_default() -> None:
    assert rows(switches, BASIC) == [
        (1, "f(integer x)"),
        (2, "{"),
        (3, "    {"),
        (5, "        if((x) == (1))jump sw1_case1;"),
        (7, "        if((x) == (2))jump sw1_case2;"),
        (3, "        jump sw1_default;"),
        (4, ""),
        (5, "        @sw1_case1;"),
        (6, "            a();"),
        (7, "        @sw1_case2;"),
        (8, "            b();"),
        (9, "            jump sw1_end;"),
        (10, "        @sw1_default;"),
        (11, "            c();"),
        (3, "        @sw1_end;"),
        (12, "    }"),
        (13, "}"),
    ]


def test_switch_without_default_jumps_to_its_end() -> None:
    text = "f() {\n    switch (llGetKey()) {\n        case K:\n            a();\n    }\n}"
    assert rows(switches, text) == [
        (1, "f() {"),
        (2, "    {"),
        (3, "        if((llGetKey()) == (K))jump sw1_case1;"),
        (2, "        jump sw1_end;"),
        (3, "        @sw1_case1;"),
        (4, "            a();"),
        (2, "        @sw1_end;"),
        (5, "    }"),
        (6, "}"),
    ]


def test_no_end_label_when_nothing_jumps_there() -> None:
    text = "switch (x) {\n    case 1:\n        a();\n    default:\n        b();\n}"
    assert run(switches, text) == (
        "{\n    if((x) == (1))jump sw1_case1;\n    jump sw1_default;\n"
        "    @sw1_case1;\n        a();\n    @sw1_default;\n        b();\n}"
    )


def test_case_values_as_written() -> None:
    out = run(switches, 'switch (s) { case "a:b" : x(); case (1 + 2) * 3: y(); }')
    assert 'if((s) == ("a:b" ))jump sw1_case1;' in out
    assert "if((s) == ((1 + 2) * 3))jump sw1_case2;" in out


def test_one_line_switch_continues_on_a_line_of_its_own() -> None:
    assert rows(switches, "switch (x) { case 1: a(); break; default: b(); }") == [
        (1, "{"),
        (1, "    if((x) == (1))jump sw1_case1;"),
        (1, "    jump sw1_default;"),
        (1, " @sw1_case1; a(); jump sw1_end; @sw1_default; b(); @sw1_end;}"),
    ]


def test_case_and_default_with_braces() -> None:
    text = "switch (x) {\n    case 1 {\n        a();\n    }\n    default {\n        b();\n    }\n}"
    assert run(switches, text) == (
        "{\n    if((x) == (1 ))jump sw1_case1;\n    jump sw1_default;\n"
        "    @sw1_case1; {\n        a();\n    }\n    @sw1_default; {\n        b();\n    }\n}"
    )


def test_nested_switch() -> None:
    text = """\
switch (a) {
    case 1:
        switch (b) {
            case 2:
                break;
            default:
                x();
        }
        break;
}"""
    assert rows(switches, text) == [
        (1, "{"),
        (2, "    if((a) == (1))jump sw1_case1;"),
        (1, "    jump sw1_end;"),
        (2, "    @sw1_case1;"),
        (3, "        {"),
        (4, "            if((b) == (2))jump sw2_case1;"),
        (3, "            jump sw2_default;"),
        (4, "            @sw2_case1;"),
        (5, "                jump sw2_end;"),
        (6, "            @sw2_default;"),
        (7, "                x();"),
        (3, "            @sw2_end;"),
        (8, "        }"),
        (9, "        jump sw1_end;"),
        (1, "    @sw1_end;"),
        (10, "}"),
    ]


def test_break_in_a_loop_inside_a_switch_leaves_the_switch() -> None:
    # as in Firestorm: every `break;` of the body jumps to the switch's end (LSL has no break)
    text = "switch (x) {\n    case 1:\n        while (y) { if (z) break; }\n        w();\n}"
    assert run(switches, text) == (
        "{\n    if((x) == (1))jump sw1_case1;\n    jump sw1_end;\n"
        "    @sw1_case1;\n        while (y) { if (z) jump sw1_end; }\n        w();\n    @sw1_end;\n}"
    )


def test_strings_and_identifiers_that_look_like_switch_code() -> None:
    text = (
        'string s = "switch (q) { case 1: break; default: }";\n'
        "integer case = 1;\nbreak;\ncase = 2;\nswitch = 3;\n"
        'switch (x) { case "case 2:": llSay(0, "break; }"); break; }'
    )
    out = run(switches, text).split("\n")
    assert out[:5] == text.split("\n")[:5]
    assert out[5:] == [
        "{",
        '    if((x) == ("case 2:"))jump sw1_case1;',
        "    jump sw1_end;",
        ' @sw1_case1; llSay(0, "break; }"); jump sw1_end; @sw1_end;}',
    ]


def test_switch_head_over_lines_keeps_them() -> None:
    text = "switch (\n    x\n)\n{\n    case 1: a();\n}"
    assert rows(switches, text) == [
        (1, "{"),
        (5, "    if((\n    x\n) == (1))jump sw1_case1;".replace("\n", " ")),
        (1, "    jump sw1_end;"),
        (2, ""),
        (3, ""),
        (4, ""),
        (5, "    @sw1_case1; a();"),
        (1, "    @sw1_end;"),
        (6, "}"),
    ]


def test_labels_do_not_take_the_scripts_names() -> None:
    out = run(switches, "integer sw1_end;\nswitch (x) { case 1: break; }")
    assert "jump sw1_end_;" in out
    assert "@sw1_end_;" in out


def test_origins_follow_the_input_lines() -> None:
    lines = [
        Line("f() {", Origin("main.lsl", 1)),
        Line("switch (x) {", Origin("inc.lsl", 10)),
        Line("case 1: break;", Origin("inc.lsl", 11)),
        Line("}", Origin("inc.lsl", 12)),
        Line("}", Origin("main.lsl", 3)),
    ]
    assert [(line.origin, line.text) for line in switches(lines)] == [
        (Origin("main.lsl", 1), "f() {"),
        (Origin("inc.lsl", 10), "{"),
        (Origin("inc.lsl", 11), "    if((x) == (1))jump sw1_case1;"),
        (Origin("inc.lsl", 10), "    jump sw1_end;"),
        (Origin("inc.lsl", 11), "@sw1_case1; jump sw1_end;"),
        (Origin("inc.lsl", 10), "    @sw1_end;"),
        (Origin("inc.lsl", 12), "}"),
        (Origin("main.lsl", 3), "}"),
    ]


def test_no_switch_no_change() -> None:
    assert switches([]) == []
    lines = lines_of("default { state_entry() { integer case; } }", "m.lsl")
    assert switches(lines) == lines


@pytest.mark.parametrize(
    ("text", "row", "col", "message"),
    [
        ("f() {\n  case 1: x();\n}", 2, 3, "case outside a switch"),
        ("f() {\n  default: x();\n}", 2, 3, "default outside a switch"),
        ("switch (x) {\n  case 1: x();\n", 1, 12, "unbalanced braces: the switch's body is not closed"),
        ("f() { switch (x { } }", 1, 14, "unbalanced parentheses after switch"),
        ("switch (x) case 1: y();", 1, 1, "switch (...) without a body in braces"),
        ("switch (x) {\n  case 1 x(); }", 2, 3, "case without a ':'"),
        ("switch (x) {\n  case : x(); }", 2, 3, "case without a value"),
        ("switch (x) {\n default: a();\n default: b(); }", 3, 2, "a second default in the switch"),
    ],
)
def test_malformed_switches(text: str, row: int, col: int, message: str) -> None:
    with pytest.raises(PreprocessError) as err:
        switches(lines_of(text, "m.lsl"))
    assert (err.value.path, err.value.row, err.value.col, err.value.message) == ("m.lsl", row, col, message)


def test_lazy_lists_then_switches() -> None:
    # Firestorm's order: lazy lists first, then switch
    text = "switch ((integer)l[0]) {\n    case 1:\n        l[1] = 2;\n        break;\n}"
    out = run(switches, run(lazy_lists, text))
    assert out == HELPER_TEXT + (
        "{\n    if((llList2Integer(l,0)) == (1))jump sw1_case1;\n    jump sw1_end;\n"
        "    @sw1_case1;\n        l=lazy_list_set(l,1,[2]);\n        jump sw1_end;\n    @sw1_end;\n}"
    )
