"""The overlay routing rule (model/routing.py): where a name made in the mount goes."""

from __future__ import annotations

import pytest

from slfs.model.routing import Destination, destination, goes_local
from slfs.world.nodes import Folder, OverlayNode

FOLDER = Folder(inode=2, uuid="p", name="Box", link_name="Box")
OVERLAY_DIR = OverlayNode(inode=3, uuid="", name=".git", path="/tmp/x/.git", overlay_parent=FOLDER)


@pytest.mark.parametrize("name", [".git", ".Note.swp", "Note~", "4913", "sedAb12Cd", "x.orig"])
def test_local_names_in_a_folder_go_to_the_overlay(name: str) -> None:
    assert destination(FOLDER, name) is Destination.LOCAL and goes_local(FOLDER, name)


@pytest.mark.parametrize("name", ["Note", "Main.lsl", "Tool.luau", "README"])
def test_other_names_in_a_folder_go_in_world(name: str) -> None:
    assert destination(FOLDER, name) is Destination.IN_WORLD and not goes_local(FOLDER, name)


@pytest.mark.parametrize("name", ["Note", "Main.lsl", ".git", "HEAD"])
def test_everything_in_an_overlay_directory_is_local(name: str) -> None:
    assert destination(OVERLAY_DIR, name) is Destination.LOCAL
