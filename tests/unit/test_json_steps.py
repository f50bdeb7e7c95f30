"""json.loads in steps (protocol.jsonrpc.loads_steps): exactly what json.loads gives or raises, for
any text, however the steps fall; parse_message_steps exactly as parse_message."""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slfs.protocol import ProtocolError, encode, parse_message
from slfs.protocol.jsonrpc import loads_steps, parse_message_steps

scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=12)
           | st.floats(allow_nan=False))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=30,
)
layouts = st.sampled_from([
    {"separators": (",", ":")}, {}, {"indent": 1}, {"indent": "\t"}, {"indent": 0},
    {"separators": (" ,\r\n ", " : ")}, {"ensure_ascii": False},
])


def run(gen: Generator[None, None, Any]) -> tuple[Any, int]:
    steps = 0
    while True:
        try:
            next(gen)
        except StopIteration as done:
            return done.value, steps
        steps += 1


def outcome(fn: Any) -> Any:
    """(value, its exact JSON) or (exception type, message)."""
    try:
        value = fn()
    except (ValueError, RecursionError) as exc:
        return type(exc), str(exc)
    return value, json.dumps(value, allow_nan=True)


def same(text: str, step_chars: int) -> None:
    want = outcome(lambda: json.loads(text))
    got = outcome(lambda: run(loads_steps(text, step_chars))[0])
    if isinstance(want[0], type):
        assert got == want
    else:
        assert got[1] == want[1]  # ints stay ints, floats floats, key order kept
        assert got[0] == want[0] or (isinstance(want[0], float) and math.isnan(want[0]))


@settings(max_examples=400)
@given(values, layouts, st.integers(1, 64), st.sampled_from(["", " ", "\n\t "]))
def test_any_json_text_gives_what_json_loads_gives(value: Any, layout: dict[str, Any], step_chars: int,
                                                   pad: str) -> None:
    same(pad + json.dumps(value, **layout) + pad, step_chars)


@settings(max_examples=600)
@given(values, layouts, st.data())
def test_any_damaged_text_raises_what_json_loads_raises(value: Any, layout: dict[str, Any], data: Any) -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"objects": [value, value]}}, **layout)
    at = data.draw(st.integers(0, len(text)))
    how = data.draw(st.sampled_from(["cut", "drop", "insert"]))
    if how == "cut":
        text = text[:at]
    elif how == "drop":
        text = text[:at] + text[at + 1:]
    else:
        text = text[:at] + data.draw(st.sampled_from(list('{}[],:" \\x0-1eE.\ufeff\x00'))) + text[at:]
    same(text, data.draw(st.integers(1, 64)))


@settings(max_examples=300)
@given(st.text(alphabet='{}[],:"\\ \t\nabtrufenl0123456789-+.eE', max_size=40), st.integers(1, 8))
def test_any_text_at_all(text: str, step_chars: int) -> None:
    same(text, step_chars)


@pytest.mark.parametrize("text", [
    '{"a":1,"a":2}', '{"a":NaN,"b":[Infinity,-Infinity]}', '\ufeff{}', '{"a":1} x', '{"a":1}}',
    '{"a":[1,]}', '{"a":{"b":}}', '{"a\\ud800":"\\udfff"}', '{"\x01":1}', '[' * 5000 + ']' * 5000,
    '{"a":' + '[' * 5000 + ']' * 5000 + '}', '{"a":1e400}', '{"a":' + "9" * 5000 + "}", "  ", "",
])
def test_edge_cases(text: str) -> None:
    same(text, 1)


def test_an_object_list_answer_is_parsed_in_steps() -> None:
    objects = [{"object_id": f"o{i}", "inventory": [{"item_id": f"i{i}.{j}", "name": "x" * 50} for j in range(20)]}
               for i in range(200)]
    text = json.dumps({"jsonrpc": "2.0", "id": 3, "result": {"objects": objects}})
    value, steps = run(loads_steps(text, 4096))
    assert value == json.loads(text)
    assert steps >= len(text) // (2 * 4096)  # a step once about 4 KiB (whole elements) is parsed


@settings(max_examples=300)
@given(st.sampled_from([
    '{"jsonrpc":"2.0","id":1,"result":%s}', '{"jsonrpc":"2.0","method":"m","params":[%s]}',
    '{"jsonrpc":"2.0","id":"rpc_1","method":"m","params":{"a":%s}}', '{"id":1,"result":%s}',
    '{"jsonrpc":"2.0","id":1,"error":{"code":%s,"message":"m"}}', '[%s]', '%s',
]), values)
def test_parse_message_steps_is_parse_message(shape: str, value: Any) -> None:
    text = shape % json.dumps(value)

    def of(fn: Any) -> Any:
        try:
            msg = fn()
        except ProtocolError as exc:
            return str(exc)
        return type(msg), encode(msg)

    assert of(lambda: run(parse_message_steps(text, 8))[0]) == of(lambda: parse_message(text))
