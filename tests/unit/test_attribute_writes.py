"""Setting user.sl.* attributes (slfs/model/attribute_writes.py): what rsync -aX and cp -a
--preserve=xattr set is accepted when it is what the file has, refused with the reason otherwise."""

from __future__ import annotations

import errno

import pytest

from slfs.model.attribute_writes import MAX_KEPT, check_rename, refusal, refusal_of_all, remove_attribute, set_attribute
from slfs.world.fs_errors import FsError, Refused
from slfs.world.nodes import NewFile, OverlayNode

CURRENT = {"user.sl.item_id": b"50f550c1-7f14-5ac6-be04-f121557806dc", "user.sl.description": b"",
           "user.sl.revision": b"7", "user.sl.running": b"1"}


def test_the_current_value_is_accepted_another_refused_with_the_reason() -> None:
    for name, value in CURRENT.items():
        assert refusal("Cube/A.lsl", CURRENT, name, value) is None
    why = refusal("Cube/A.lsl", CURRENT, "user.sl.running", b"0")
    assert why == ("Cube/A.lsl: user.sl.running is '1', not '0'; the user.sl.* attributes are the viewer's "
                   "and read-only (only their current values can be set)")
    assert "has no attribute user.sl.vm" in (refusal("Cube/A.lsl", CURRENT, "user.sl.vm", b"mono") or "")
    assert "\x1b" not in (refusal("Cube/A.lsl", CURRENT, "user.sl.description", b"\x1b]0;x\x07") or "")


def test_an_earlier_revision_is_what_a_copy_taken_before_a_save_holds() -> None:
    for earlier in (b"0", b"1", b"6", b"7"):
        assert refusal("A", CURRENT, "user.sl.revision", earlier) is None
    for other in (b"8", b"-1", b"x", b"", b"\xff"):
        assert refusal("A", CURRENT, "user.sl.revision", other) is not None, other


def test_several_at_a_rename_say_the_first_and_how_many_more() -> None:
    assert refusal_of_all("A", CURRENT, dict(CURRENT)) is None
    why = refusal_of_all("A", CURRENT, {**CURRENT, "user.sl.running": b"0", "user.sl.item_id": b"other"})
    assert why is not None and why.startswith("A: user.sl.item_id is")
    assert why.endswith("(and 1 more attribute(s) differ)")


def test_an_overlay_file_keeps_them_for_its_rename_a_new_file_drops_them() -> None:
    temp = OverlayNode(inode=100, uuid="k", name=".A.lsl.XyZ123")
    set_attribute(temp, ".A.lsl.XyZ123", {}, "user.sl.running", b"0")
    assert temp.sl_attributes == {"user.sl.running": b"0"}
    with pytest.raises(Refused) as refused:
        check_rename(temp, ".A.lsl.XyZ123", "A.lsl", "Cube/A.lsl", CURRENT)
    assert refused.value.errno == errno.EPERM and refused.value.explain
    assert refused.value.message.startswith(".A.lsl.XyZ123 -> A.lsl: Cube/A.lsl: user.sl.running is '1'")
    temp.sl_attributes["user.sl.running"] = b"1"
    check_rename(temp, ".A.lsl.XyZ123", "A.lsl", "Cube/A.lsl", CURRENT)
    set_attribute(NewFile(inode=101, uuid="", name="B.lsl"), "Cube/B.lsl", {}, "user.sl.item_id", b"x")
    with pytest.raises(Refused) as refused:
        set_attribute(object(), "Cube/A.lsl", CURRENT, "user.sl.running", b"0")
    assert refused.value.errno == errno.ENOTSUP
    set_attribute(object(), "Cube/A.lsl", CURRENT, "user.sl.running", b"1")


def test_removing_one_is_refused_with_the_reason_one_not_there_is_enodata() -> None:
    with pytest.raises(Refused) as refused:
        remove_attribute(object(), "Cube/A.lsl", CURRENT, "user.sl.running")
    assert refused.value.errno == errno.ENOTSUP and "user.sl.running cannot be removed" in refused.value.message
    with pytest.raises(FsError) as absent:
        remove_attribute(object(), "Cube/A.lsl", CURRENT, "user.sl.nope")
    assert absent.value.errno == errno.ENODATA and not absent.value.explain
    temp = OverlayNode(inode=100, uuid="k", name=".A.lsl.XyZ123", sl_attributes={"user.sl.running": b"1"})
    remove_attribute(temp, ".A.lsl.XyZ123", {}, "user.sl.running")
    assert temp.sl_attributes == {}


def test_an_overlay_file_keeps_a_bounded_number_of_them() -> None:
    temp = OverlayNode(inode=102, uuid="k2", name=".C.lsl.AbC123")
    for i in range(MAX_KEPT):
        set_attribute(temp, ".C.lsl.AbC123", {}, f"user.sl.made_up_{i}", b"x")
    set_attribute(temp, ".C.lsl.AbC123", {}, "user.sl.made_up_0", b"y")  # a kept one may change
    with pytest.raises(Refused) as refused:
        set_attribute(temp, ".C.lsl.AbC123", {}, "user.sl.one_more", b"x")
    assert refused.value.errno == errno.ENOSPC and len(temp.sl_attributes) == MAX_KEPT
