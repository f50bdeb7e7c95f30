"""The control socket's request records (control/requests.py): structured strictly, refused with
EINVAL naming the field."""

from __future__ import annotations

import errno
from typing import Any

import pytest

from slfs.control.requests import (
    CONFIRM_TIMEOUT,
    DiagParams,
    EventsParams,
    NoParams,
    OpenParams,
    StateParams,
    ViewerCommandParams,
    structure,
)
from slfs.world.fs_errors import FsError


def test_a_frame_becomes_its_record_and_unknown_keys_are_ignored() -> None:
    frame = {"id": 7, "type": "run", "path": "Box/A.lsl", "timeout": 3, "colour": "blue"}
    assert structure(frame, StateParams, "run") == StateParams(path="Box/A.lsl", timeout=3.0)
    assert structure({"type": "run"}, StateParams, "run") == StateParams(path=None, timeout=CONFIRM_TIMEOUT)
    assert structure({"type": "status", "path": 5}, NoParams, "status") == NoParams()
    assert structure({"wait": 1.5, "path": None}, DiagParams, "diag") == DiagParams(wait=1.5)
    assert structure({"since": 4}, EventsParams, "events") == EventsParams(since=4)
    vc = structure({"command": "say", "params": {"text": "hi"}}, ViewerCommandParams, "viewer_command")
    assert vc.params == {"text": "hi"}


@pytest.mark.parametrize(("params", "frame", "words"), [
    (StateParams, {"timeout": "soon"}, "expected a number, got str @ run.timeout"),
    (StateParams, {"timeout": True}, "expected a number, got bool @ run.timeout"),
    (StateParams, {"timeout": -1}, "timeout must be a number of seconds"),
    (StateParams, {"timeout": float("inf")}, "timeout must be a number of seconds"),
    (StateParams, {"path": 5}, "expected a string, got int @ run.path"),
    (StateParams, {"path": ["a"]}, "expected a string, got list"),
    (EventsParams, {"since": "3"}, "expected an integer, got str"),
    (EventsParams, {"since": 2.5}, "expected an integer, got float"),
    (OpenParams, {"object_id": 12}, "expected a string, got int"),
    (ViewerCommandParams, {"params": [1]}, "expected a JSON object, got list"),
])
def test_a_bad_field_is_einval_naming_it(params: type, frame: dict[str, Any], words: str) -> None:
    with pytest.raises(FsError) as info:
        structure(frame, params, "run")
    assert info.value.errno == errno.EINVAL and words in info.value.message
    assert info.value.message.startswith("bad run request: ")
