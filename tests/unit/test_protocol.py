"""Protocol layer: framing round trips, payload parsing, and garbage never raising anything but
the protocol's own error."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slfs.protocol import (
    Notification,
    ProtocolError,
    Request,
    Response,
    RpcError,
    encode,
    from_json,
    parse_message,
    to_json,
)
from slfs.protocol import command_types as ct
from slfs.protocol import rpc_errors as codes
from slfs.protocol import types as t

json_scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ids = st.integers(0, 2**31 - 1) | st.text(min_size=1, max_size=12)
params = st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=4)


@given(ids, st.text(min_size=1, max_size=30), params)
def test_request_round_trip(rid: Any, method: str, p: Any) -> None:
    msg = Request(rid, method, p)
    assert parse_message(encode(msg)) == msg


@given(st.text(min_size=1, max_size=30), params)
def test_notification_round_trip(method: str, p: Any) -> None:
    msg = Notification(method, p)
    assert parse_message(encode(msg)) == msg


@given(ids, json_values)
def test_result_round_trip(rid: Any, result: Any) -> None:
    back = parse_message(encode(Response(rid, result)))
    assert isinstance(back, Response) and back.ok and back.id == rid and back.result == result


@given(ids, st.integers(-32768, 32767), st.text(max_size=40))
def test_error_round_trip(rid: Any, code: int, message: str) -> None:
    back = parse_message(encode(Response(rid, None, RpcError(code, message))))
    assert isinstance(back, Response) and back.error is not None
    assert (back.error.code, back.error.message) == (code, message)


def test_response_without_result_is_null_result() -> None:
    # Newer viewers omit `result` when the handler returned nothing.
    msg = parse_message('{"jsonrpc":"2.0","id":7}')
    assert msg == Response(7, None)


def test_string_ids_and_null_id_requests() -> None:
    ping = '{"jsonrpc":"2.0","id":"rpc_1000","method":"system.ping"}'
    assert parse_message(ping) == Request("rpc_1000", "system.ping")
    assert parse_message('{"jsonrpc":"2.0","id":null,"method":"x"}') == Request(None, "x")


@pytest.mark.parametrize("text", [
    "", "{", "[]", "[1]", "null", "3", '"x"', '{"jsonrpc":"1.0","id":1,"method":"m"}',
    '{"jsonrpc":"2.0","method":5}', '{"jsonrpc":"2.0","method":"m","params":3}',
    '{"jsonrpc":"2.0","result":1}', '{"jsonrpc":"2.0","id":true,"result":1}',
    '{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}',
    '{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}',
])
def test_malformed_frames_raise_protocol_error(text: str) -> None:
    with pytest.raises(ProtocolError):
        parse_message(text)


@settings(max_examples=300)
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_garbage_only_raises_protocol_error(data: Any) -> None:
    try:
        parse_message(data)
    except ProtocolError:
        pass


@settings(max_examples=300)
@given(json_values)
def test_any_json_only_raises_protocol_error(value: Any) -> None:
    try:
        parse_message(json.dumps(value))
    except ProtocolError:
        pass


PAYLOADS = [t.PublishedObject, t.ObjectUpdate, t.ObjectUnpublish, t.ContentGetResponse, t.ContentSaveResponse,
            t.ItemCreateResponse, t.SessionHandshake, t.SessionOk, t.RuntimeDebug, t.RuntimeError_,
            ct.CommandListResponse, t.ObjectListResponse, t.SystemPingResponse, t.CompilationResult]


@settings(max_examples=200)
@given(st.sampled_from(PAYLOADS), json_values)
def test_payload_garbage_only_raises_protocol_error(cls: type, value: Any) -> None:
    try:
        from_json(cls, value)
    except ProtocolError:
        pass


def test_publish_keeps_unknown_fields_and_v2_revision() -> None:
    data = {"object": {"object_id": "o", "object_name": "Box", "zz_new": [1],
                       "inventory": [{"item_id": "i", "name": "n", "type": "script", "subtype": 1,
                                      "revision": 12, "future": True}]}}
    msg = from_json(t.ObjectPublish, data)
    assert msg.object.inventory[0].revision == 12
    assert msg.object.inventory[0].is_luau
    assert to_json(msg) == data


def test_malformed_payload_names_the_field() -> None:
    with pytest.raises(ProtocolError) as info:
        from_json(t.ObjectPublish, {"object": {"object_id": "o", "inventory": [{"item_id": "i", "name": 3,
                                                                               "type": "script"}]}})
    assert "object.inventory[0].name" in str(info.value)
    with pytest.raises(ProtocolError) as info:
        from_json(t.ObjectPublish, {"object": {"object_name": "x"}})
    assert "object.object_id" in str(info.value)


def test_missing_optional_fields_are_accepted() -> None:
    item = from_json(t.InventoryItem, {"item_id": "i", "name": "n", "type": "notecard"})
    assert item.permissions is None and item.running is None
    ok = from_json(t.SessionOk, None)
    assert ok.agent_id is None
    v2 = from_json(t.SessionOk, {"agent_id": "a", "agent_name": "Resident"})
    assert v2.agent_name == "Resident"
    got = from_json(t.ContentGetResponse, {"success": True, "content": "x", "encoding": "utf-8",
                                           "embedded_items": 2})
    assert got.encoding == "utf-8" and got.embedded_items == 2


def test_rpc_error_labels() -> None:
    err = RpcError.standard(codes.INVALID_PARAMS, "Prim not found")
    assert err.message == "Invalid params: Prim not found"
    assert err.detail == "Prim not found"
    assert RpcError(codes.ACCESS_DENIED, "Object is not published").detail == "Object is not published"


def test_params_objects_encode_like_the_dicts_they_replace() -> None:
    from slfs.protocol.codec import encode_params

    assert to_json(t.SetRunningParams(prim_id="p", item_id="i", running=False)) == {
        "prim_id": "p", "item_id": "i", "running": False}
    assert to_json(t.ObjectModifyParams(prim_id="p", permissions=t.NextOwnerPermissions(next_owner=0))) == {
        "prim_id": "p", "permissions": {"next_owner": 0}}
    assert to_json(ct.CommandExecuteParams(command="c", params={})) == {"command": "c", "params": {}}
    assert to_json(t.SessionDisconnect(reason=1, extra={"why": "x"})) == {"reason": 1, "message": "", "why": "x"}
    assert encode_params(t.ItemAddress(item_id="i")) == {"item_id": "i"}
    assert encode_params({"a": None}) == {"a": None}
    assert encode_params(None) is None
