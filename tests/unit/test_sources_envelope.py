"""The envelope both ways (slfs/sources/envelope.py) and the detection rule (detect.py)."""

from __future__ import annotations

import datetime

from hypothesis import given
from hypothesis import strategies as st

from slfs.sources import detect, envelope

WHEN = datetime.datetime(2018, 6, 4, 4, 51, 39, tzinfo=datetime.UTC)
# Characters that matter to the escaping and the brackets, and some that do not.
TRICKY = st.text(alphabet=st.sampled_from(list("/*|]=[-\r\n \tab#\"'")) | st.characters(), max_size=80)

# What Firestorm writes, typed out from the research page (not made by slfs's encoder).
FIRESTORM = (
    "//start_unprocessed_text\n"
    "/*#include \"lib.lsl\"\n"
    "/|/ a comment *|/ here\n"
    "default { state_entry() { hello(); } }*/\n"
    "//end_unprocessed_text\n"
    "//nfo_preprocessor_version 0\n"
    "//program_version Firestorm-Releasex64 5.0.11.53634 - Some Avatar\n"
    "//last_compiled 06/04/2018 04:51:39\n"
    "//mono\n"
    "\n"
    "\n"
    "hello() { }\n"
    "default { state_entry() { hello(); } }\n"
)


def test_firestorm_envelope_is_read() -> None:
    got = envelope.unwrap(FIRESTORM)
    assert got is not None
    assert got.source == '#include "lib.lsl"\n// a comment */ here\ndefault { state_entry() { hello(); } }'
    assert got.target == "mono"
    assert got.expansion == "hello() { }\ndefault { state_entry() { hello(); } }\n"
    assert FIRESTORM.split("\n")[got.expansion_row - 1] == "hello() { }"


def test_written_envelope_is_firestorms_form_byte_for_byte() -> None:
    text = envelope.wrap_lsl("a */ b // c\n", "x();", program="slfs 1.0", when=WHEN, target="lsl2")
    assert text == ("//start_unprocessed_text\n/*a *|/ b /|/ c\n*/\n//end_unprocessed_text\n"
                    "//nfo_preprocessor_version 0\n//program_version slfs 1.0\n//last_compiled 06/04/2018 04:51:39\n"
                    "//lsl2\n\n\nx();")


def test_alchemy_lenient_forms_are_read() -> None:
    crlf = "//start_unprocessed_text\r\n/*src*/\r\n//end_unprocessed_text\r\n//mono\r\ncode\r\n"
    got = envelope.unwrap(crlf)
    assert got is not None and got.source == "src" and got.target == "mono" and got.expansion == "code\r\n"
    bare = "//start_unprocessed_text\n/*src*/\n//end_unprocessed_text\ncode"
    got = envelope.unwrap(bare)
    assert got is not None and got.source == "src" and got.expansion == "code" and got.expansion_row == 4
    luau = "--start_unprocessed_text\n--[==[local x = a[b[1]]]==]\n--end_unprocessed_text\n--luau\nprint(1)\n"
    got = envelope.unwrap(luau)
    assert got is not None and got.source == "local x = a[b[1]]" and got.target == "luau"
    assert got.expansion == "print(1)\n" and got.expansion_row == 5


def test_plain_text_and_near_misses_are_not_envelopes() -> None:
    assert envelope.unwrap("default { }") is None
    assert envelope.unwrap(" //start_unprocessed_text\n/*x*/\n//end_unprocessed_text\n") is None
    assert envelope.unwrap("//start_unprocessed_text\n/*never closed\n") is None
    assert envelope.unwrap("//start_unprocessed_text\n/*x*/ //end_unprocessed_text\n") is None


@given(TRICKY, TRICKY, st.sampled_from(envelope.TARGETS))
def test_lsl_round_trip(source: str, expansion: str, target: str) -> None:
    text = envelope.wrap_lsl(source, expansion, program="slfs 0", when=WHEN, target=target)
    got = envelope.unwrap(text)
    assert got is not None
    assert (got.source, got.expansion, got.target) == (source, expansion, target)
    assert text.split("\n")[got.expansion_row - 1:] == expansion.split("\n")
    assert envelope.escape(source).count("\n") == source.count("\n")
    assert "*/" not in envelope.escape(source)


@given(TRICKY, TRICKY)
def test_luau_round_trip(source: str, expansion: str) -> None:
    text = envelope.wrap_luau(source, expansion, program="slfs 0", when=WHEN)
    got = envelope.unwrap(text)
    assert got is not None
    assert (got.source, got.expansion, got.target) == (source, expansion, "luau")
    assert text.split("\n")[got.expansion_row - 1:] == expansion.split("\n")


def test_long_bracket_level_avoids_the_source_and_its_end() -> None:
    assert envelope.long_bracket_level("x") == 0
    assert envelope.long_bracket_level("a[b[1]]") == 1
    assert envelope.long_bracket_level("]]]=]") == 2
    assert envelope.long_bracket_level("ends with ]") == 1  # "]" + the close "]]" would end early


def test_detection() -> None:
    assert detect.has_directive('#include "x"\n')
    assert detect.has_directive("  #  define X 1\n")
    assert detect.has_directive("x\n#endif\n")
    assert not detect.has_directive("#includes\n")
    assert not detect.has_directive('llSay(0, "#include");\n')
    assert not detect.has_directive("// #define in a comment? no: not at the start\n")
    assert not detect.has_directive("x = 1; #define\n")
    assert detect.preprocessor_off("#define X\n//fspreprocessor off\n")
    assert not detect.preprocessor_off("// //fspreprocessor off\n")


class _NoIncludes:
    def find(self, name: str, including: str, angle: bool) -> None:
        return None

    def searched(self, name: str, including: str, angle: bool) -> list[str]:
        return []


@given(TRICKY)
def test_a_built_source_round_trips_through_its_envelope(body: str) -> None:
    """What the mount shows after saving S is S: any source the preprocessor accepts comes back
    from the in-world text byte for byte."""
    from slfs.sources import AgentMacros, PreprocessError
    from slfs.sources.lsl import expand_lsl

    source = "#define A 1\n" + body
    try:
        expansion = expand_lsl(source, "/m/Box/Main.lsl", _NoIncludes(), macros=AgentMacros(), now=WHEN)
    except PreprocessError:
        return  # not a source it can build: never saved, nothing to round-trip
    text = envelope.wrap_lsl(source, expansion.text, program="slfs 1.0", when=WHEN, target="mono")
    got = envelope.unwrap(text)
    assert got is not None and got.source == source and got.expansion == expansion.text
