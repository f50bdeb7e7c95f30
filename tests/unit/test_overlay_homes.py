"""The local overlay kept by object identity (local/overlay_homes.py): which home a folder shows,
which home a re-rezzed object takes, the index on disk, and old by-name overlays moving over."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from slfs import event_types as ev
from slfs.local.overlay_homes import Home, Index, adoptable, id_name, prim_moves
from slfs.model.overlay import Overlay
from slfs.protocol import from_json
from slfs.protocol import types as t
from slfs.session.listener import SessionInfo
from slfs.world.tree import Folder, Tree

AGENT_A = "6c3b0a4e-2f1d-4c8e-9a7b-5d4e3f2a1b0c"
AGENT_B = "11111111-2222-4333-8444-555555555555"
T1, T2, T3, T4 = (f"0000000{n}-0000-4000-8000-000000000000" for n in "1234")
BOX, BOX2 = "0000000b-0000-4000-8000-000000000000", "0000000c-0000-4000-8000-000000000000"


def info(agent: str = AGENT_A, *, lists: bool = True) -> SessionInfo:
    return SessionInfo("Sim", "1", agent, "Tester", "", {}, "ws://x", lists)


def obj(oid: str, name: str, prims: dict[str, str] | None = None) -> t.PublishedObject:
    links = [{"link_id": pid, "link_name": link, "link_number": n + 2}
             for n, (pid, link) in enumerate((prims or {}).items())]
    return from_json(t.PublishedObject, {"object_id": oid, "object_name": name, "linked_objects": links})


class Mount:
    """A tree and its overlay, connected as the daemon connects them (session, events)."""

    def __init__(self, agent: str = AGENT_A) -> None:
        self.tree = Tree()
        self.session = info(agent)
        self.overlay = Overlay(self.tree, session=lambda: self.session)

    def connect(self, objects: list[t.PublishedObject], *, agent: str | None = None) -> None:
        self.overlay.on_event(ev.Disconnected(reason="test"))
        if agent is not None:
            self.session = info(agent)
        self.tree.replace_all(objects)
        self.overlay.on_event(ev.Connected(viewer="v", version="1", agent="a", objects=0))

    def folder(self, name: str) -> Folder:
        node = self.tree.root.entries[name]
        assert isinstance(node, Folder)
        return node

    def write(self, folder: Folder, name: str, text: str = "x") -> None:
        Path(self.overlay.ensure(folder), name).write_text(text)

    def local(self, folder: Folder) -> list[str]:
        where = self.overlay.folder_dir(folder)
        return sorted(os.listdir(where)) if where is not None and where.is_dir() else []


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    return tmp_path / "slfs" / "overlay"


def test_adoptable_takes_the_only_home_of_the_name_gone_unambiguously() -> None:
    homes = {"a": Home("Box", gone=True), "b": Home("Twin", gone=True, ambiguous=True), "c": Home("Lamp")}
    assert adoptable(homes, "Box", 0) == "a"
    assert adoptable(homes, "Box", 1) is None  # another Box is published now
    assert adoptable(homes, "Twin", 0) is None  # another Twin was published when it went away
    assert adoptable(homes, "Lamp", 0) is None  # its object is still published
    homes["d"] = Home("Box", gone=True)
    assert adoptable(homes, "Box", 0) is None  # two homes of the name wait: neither is taken


def test_prim_moves_by_unique_link_name() -> None:
    old = {"o1": "Leaf", "o2": "Door", "o3": "Door", "o4": "Gone"}
    new = {"n1": "Leaf", "n2": "Door", "n3": "Wheel"}
    assert prim_moves(old, new) == {"o1": "n1"}  # Door is two old prims: neither moves
    assert prim_moves({"o1": "Leaf", "o2": "Door"}, new, shared=["Door"]) == {"o1": "n1"}  # Door was two prims


def test_ids_never_reach_a_path_as_sent() -> None:
    assert id_name(T1) == T1.replace("-", "")
    for hostile in ("../../x", "a/b", "..", "\x1b]52;c;eA==\x07", "A" * 300):
        name = id_name(hostile)
        assert "/" not in name and ".." not in name and len(name) <= 64


def test_index_round_trip_and_a_damaged_one(tmp_path: Path) -> None:
    index = Index(tmp_path, 0o600)
    index.homes = {"a": Home("Box", gone=True, ambiguous=False, prims={"p": "Leaf"})}
    index.save()
    assert (tmp_path / "index.json").stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "index.json.tmp").exists()
    again = Index(tmp_path, 0o600)
    again.load()
    assert again.homes == index.homes
    (tmp_path / "index.json").write_text("{not json")
    again.load()
    assert again.homes == {}


def test_namesakes_never_share_local_files() -> None:
    m = Mount()
    m.connect([obj(T1, "Twin"), obj(T2, "Twin")])
    twin, other = m.folder("Twin"), m.folder("Twin@00000002")
    m.write(twin, ".gitignore")
    assert m.local(twin) == [".gitignore"] and m.local(other) == []
    m.tree.unpublish(T1)  # slfs close
    assert m.local(m.folder("Twin@00000002")) == []  # keeps its name, shows nothing of T1's
    assert m.overlay.index is not None and m.overlay.index.homes[id_name(T1)] == Home("Twin", True, True)
    m.tree.publish(obj(T1, "Twin"))  # published again: its own home
    assert m.local(m.folder("Twin")) == [".gitignore"]
    # A rename keeps the files where they are: the home is the object's, not its name's.
    m.tree.update(from_json(t.ObjectUpdate, {"object_id": T1, "object_name": "Renamed"}))
    assert m.local(m.folder("Renamed")) == [".gitignore"] and m.local(m.folder("Twin@00000002")) == []


def test_a_rerezzed_object_takes_its_home_back_with_its_prims() -> None:
    m = Mount()
    m.connect([obj(BOX, "Box", {T1: "Leaf", T2: "Door", T3: "Door"})])
    box = m.folder("Box")
    m.write(box, ".git")
    for pid in (T1, T2):
        m.write(box.prims[pid], ".local")
    m.tree.unpublish(BOX)  # taken into inventory
    m.tree.publish(obj(BOX2, "Box", {T4: "Leaf", "0000000e-0000-4000-8000-000000000000": "Door"}))
    box = m.folder("Box")
    assert box.uuid == BOX2 and m.local(box) == [".git"]
    assert m.local(box.prims[T4]) == [".local"]  # Leaf: one old, one new prim of that name
    assert m.local(box.prims["0000000e-0000-4000-8000-000000000000"]) == []  # Door was two old prims
    assert m.overlay.index is not None and set(m.overlay.index.homes) == {id_name(BOX2)}


def test_no_rerez_when_a_namesake_was_published() -> None:
    m = Mount()
    m.connect([obj(T1, "Twin"), obj(T2, "Twin")])
    m.write(m.folder("Twin"), ".git")
    m.tree.unpublish(T1)  # gone while T2 was published: ambiguous
    m.tree.unpublish(T2)
    m.tree.publish(obj(T3, "Twin"))
    assert m.local(m.folder("Twin")) == []
    # Nor while another of the name is published now.
    m.write(m.folder("Twin"), ".mine")
    m.tree.publish(obj(T4, "Twin"))
    m.tree.unpublish(T3)  # T3 goes while T4 is published
    assert m.local(m.folder("Twin@00000004")) == []


def test_another_agent_sees_nothing_of_the_first() -> None:
    m = Mount()
    m.connect([obj(BOX, "Box")])
    m.write(m.folder("Box"), ".git")
    other = Mount(AGENT_B)
    other.connect([obj(BOX, "Box")])  # the same object, shown to another agent
    assert other.local(other.folder("Box")) == []
    m.connect([obj(BOX2, "Box")], agent=AGENT_B)  # the viewer logs in as someone else
    assert m.local(m.folder("Box")) == []
    m.connect([obj(BOX, "Box")], agent=AGENT_A)
    assert m.local(m.folder("Box")) == [".git"]


def test_nothing_before_the_agent_is_known() -> None:
    m = Mount()
    m.tree.replace_all([obj(BOX, "Box")])
    assert m.overlay.folder_dir(m.folder("Box")) is None
    with pytest.raises(Exception) as exc:
        m.overlay.ensure(m.folder("Box"))
    assert getattr(exc.value, "errno", None) == 11  # EAGAIN, with the reason


def test_a_home_whose_object_left_unseen_is_gone_at_the_next_listing() -> None:
    m = Mount()
    m.connect([obj(BOX, "Box")])
    m.write(m.folder("Box"), ".git")
    later = Mount()  # the next mount (the first one crashed: no unpublish was seen)
    later.connect([obj(BOX2, "Box")])
    assert later.local(later.folder("Box")) == [".git"]


def test_old_by_name_overlays_move_to_homes(data_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    legacy = data_home / "objects"
    for rel in ("Box/.git/HEAD", "Box/Leaf@00000001/.x", "Twin@00000002/.y", "Lamp/.z", "Lamp/Arm@0000abcd/.w",
                "../root/.editorconfig"):
        (legacy / rel).parent.mkdir(parents=True, exist_ok=True)
        (legacy / rel).write_text("old")
    m = Mount()
    caplog.set_level("INFO", logger="slfs.model.overlay")
    m.connect([obj(BOX, "Box", {T1: "Leaf"}), obj(T3, "Twin"), obj(T2, "Twin")])
    box = m.folder("Box")
    assert m.local(box) == [".git"] and m.local(box.prims[T1]) == [".x"]
    # The tag names the object whatever it is shown as now.
    assert m.local(m.folder("Twin")) == [".y"] and m.local(m.folder("Twin@00000003")) == []
    assert not legacy.exists()
    assert m.local(m.tree.root) == [".editorconfig"] and not (data_home / "root").exists()
    assert "moved to the home of Box" in caplog.text and "waits for an object named 'Lamp'" in caplog.text
    # Lamp matched nothing: it waits as if gone unambiguously; a Lamp published later takes it.
    m.tree.publish(obj(T4, "Lamp", {BOX2: "Arm"}))
    lamp = m.folder("Lamp")
    assert m.local(lamp) == [".z"] and m.local(lamp.prims[BOX2]) == [".w"]
    index = json.loads((data_home / "agents" / AGENT_A / "index.json").read_text())
    assert set(index["objects"]) == {id_name(BOX), id_name(T2), id_name(T4)}


def test_old_overlays_wait_for_their_objects_on_a_viewer_without_a_listing(data_home: Path) -> None:
    """G1 lists nothing: each old overlay waits, a tagged one for its very object (its UUID's tag)."""
    legacy = data_home / "objects"
    for rel in ("Twin@00000002/.y", "Twin/.x"):
        (legacy / rel).parent.mkdir(parents=True, exist_ok=True)
        (legacy / rel).write_text("old")
    m = Mount()
    m.session = info(lists=False)
    m.connect([])
    m.tree.publish(obj(T2, "Twin"))  # explored first: the tagged overlay is its own
    assert m.local(m.folder("Twin")) == [".y"]
    m.tree.publish(obj(T3, "Twin"))  # another Twin is published: the plain one waits on
    assert m.local(m.folder("Twin@00000003")) == []
    m.tree.unpublish(T3)
    m.tree.unpublish(T2)  # now two homes named Twin wait: a new Twin takes neither
    m.tree.publish(obj(T4, "Twin"))
    assert m.local(m.folder("Twin")) == []


def test_an_old_plain_overlay_is_taken_by_the_first_object_of_its_name_alone(data_home: Path) -> None:
    (data_home / "objects" / "Twin").mkdir(parents=True)
    (data_home / "objects" / "Twin" / ".x").write_text("old")
    m = Mount()
    m.session = info(lists=False)
    m.connect([])
    m.tree.publish(obj(T4, "Twin"))
    assert m.local(m.folder("Twin")) == [".x"]


def test_an_index_that_cannot_be_written_is_reported(data_home: Path) -> None:
    errors: list[str] = []
    m = Mount()
    m.overlay = Overlay(m.tree, session=lambda: m.session, note_error=errors.append)
    m.connect([obj(BOX, "Box")])
    m.write(m.folder("Box"), ".git")
    index = data_home / "agents" / AGENT_A / "index.json"
    index.unlink()
    index.mkdir()  # os.replace onto a directory fails
    m.tree.unpublish(BOX)  # the tree goes on; the status says what was not kept
    assert BOX not in m.tree.objects
    assert len(errors) == 1 and "local overlay: the local files of 'Box'" in errors[0], errors


def test_a_home_removed_by_hand_no_longer_waits(data_home: Path) -> None:
    m = Mount()
    m.connect([obj(BOX, "Box")])
    m.write(m.folder("Box"), ".git")
    m.tree.unpublish(BOX)
    home = data_home / "agents" / AGENT_A / "objects" / id_name(BOX)
    (home / "own" / ".git").unlink()
    for d in (home / "own", home):
        d.rmdir()
    m.tree.publish(obj(BOX2, "Box"))
    assert m.local(m.folder("Box")) == []
    assert m.overlay.index is not None and m.overlay.index.homes == {}
