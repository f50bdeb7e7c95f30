"""The local overlay's inodes: one per path, one per disk file for hard links (no mount)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slfs.model.overlay import Overlay
from slfs.world.tree import OverlayNode, Tree


@pytest.fixture
def ov(tmp_path: Path) -> tuple[Overlay, OverlayNode]:
    tree = Tree()
    overlay = Overlay(tree)
    top = overlay.node(tree.root, ".top", str(tmp_path))  # an overlay directory as the parent
    return overlay, top


def test_paths_have_inodes_of_their_own(ov: tuple[Overlay, OverlayNode], tmp_path: Path) -> None:
    overlay, top = ov
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    a, b = overlay.find(top, "a"), overlay.find(top, "b")
    assert a is not None and b is not None and a.inode != b.inode
    assert overlay.find(top, "a") is a
    assert overlay.find(top, "missing") is None


def test_hard_links_share_the_inode_and_survive_either_name(ov: tuple[Overlay, OverlayNode], tmp_path: Path) -> None:
    overlay, top = ov
    (tmp_path / "a").write_text("data")
    a = overlay.find(top, "a")
    assert a is not None
    os.link(tmp_path / "a", tmp_path / "b")
    b = overlay.node(top, "b", str(tmp_path / "b"))  # what the link handler does
    assert b is a and a.path == str(tmp_path / "b")  # it works through the name last looked up
    assert overlay.find(top, "a") is a and a.path == str(tmp_path / "a")
    # rm a (as the unlink handler: look up, unlink that path, then removed)
    node = overlay.find(top, "a")
    assert node is a
    os.unlink(node.path)
    overlay.removed(node)
    assert a.path == str(tmp_path / "b") and a.name == "b"
    assert overlay.find(top, "b") is a
    # A new file at the removed name is another file, with another inode.
    (tmp_path / "a").write_text("new")
    fresh = overlay.find(top, "a")
    assert fresh is not None and fresh.inode != a.inode


def test_renamed_name_of_a_hard_link(ov: tuple[Overlay, OverlayNode], tmp_path: Path) -> None:
    overlay, top = ov
    (tmp_path / "a").write_text("data")
    os.link(tmp_path / "a", tmp_path / "b")
    a = overlay.find(top, "a")
    b = overlay.find(top, "b")
    assert a is b and a is not None
    os.rename(tmp_path / "b", tmp_path / "c")  # as the rename handler: the looked-up path moves
    overlay.moved(str(tmp_path / "b"), str(tmp_path / "c"))
    assert a.path == str(tmp_path / "c")
    assert overlay.find(top, "c") is a
    node = overlay.find(top, "a")
    assert node is a
    os.unlink(node.path)
    overlay.removed(node)
    assert a.path == str(tmp_path / "c")  # never the removed path
    assert overlay.find(top, "b") is None


def test_links_found_on_disk_share_an_inode(ov: tuple[Overlay, OverlayNode], tmp_path: Path) -> None:
    overlay, top = ov
    (tmp_path / "d").mkdir()
    (tmp_path / "a").write_text("data")
    os.link(tmp_path / "a", tmp_path / "d" / "b")
    a = overlay.find(top, "a")
    d = overlay.find(top, "d")
    assert a is not None and d is not None
    assert overlay.find(d, "b") is a
    # the last name removed: nothing left pointing at it
    for name, parent in (("a", top), ("b", d)):
        node = overlay.find(parent, name)
        assert node is a
        os.unlink(node.path)
        overlay.removed(node)
    (tmp_path / "a").write_text("new")
    again = overlay.find(top, "a")
    assert again is not None and again.inode != a.inode
