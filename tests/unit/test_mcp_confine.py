"""slfs mcp without a mount: path confinement, result shaping, error words, the verb's parsing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slfs import cli
from slfs.client import ClientError
from slfs.client.files import check_text, concerns
from slfs.mcp.confine import confine, relative
from slfs.mcp.results import fail, relativize


def refused(mnt: Path, path: str, **kw: bool) -> str:
    with pytest.raises(ClientError) as info:
        confine(str(mnt), path, **kw)
    assert info.value.code == "EPERM" or info.value.code == "EINVAL"
    return info.value.message


def test_confine(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    (mnt / "Obj" / ".slfs").mkdir(parents=True)
    (mnt / "Obj" / "A.lsl").write_text("x")
    assert confine(str(mnt), "") == str(mnt)
    assert confine(str(mnt), "Obj/A.lsl") == str(mnt / "Obj" / "A.lsl")
    assert confine(str(mnt), "./Obj//A.lsl") == str(mnt / "Obj" / "A.lsl")
    assert confine(str(mnt), "Obj/New.lsl", write=True) == str(mnt / "Obj" / "New.lsl")
    assert "relative to the mount" in refused(mnt, "/etc/passwd")
    assert "relative to the mount" in refused(mnt, str(mnt / "Obj"))
    assert "'..'" in refused(mnt, "Obj/../../x")
    assert "NUL" in refused(mnt, "Obj/A\x00.lsl")
    assert "control files" in refused(mnt, "Obj/.slfs/A.lsl.state", write=True)
    assert confine(str(mnt), ".slfs/live/A.lsl", write=True) == str(mnt / ".slfs" / "live" / "A.lsl")
    assert confine(str(mnt), "Obj/.slfs/A.lsl.log") == str(mnt / "Obj" / ".slfs" / "A.lsl.log")
    # links: refused wherever they point, but the mount's own by-id links
    os.symlink(str(tmp_path), mnt / "Obj" / ".out")
    os.symlink("A.lsl", mnt / "Obj" / ".in")
    assert "symbolic link" in refused(mnt, "Obj/.out/secret")
    assert "symbolic link" in refused(mnt, "Obj/.in")
    (mnt / ".slfs" / "by-id").mkdir(parents=True)
    os.symlink("../../Obj", mnt / ".slfs" / "by-id" / "u1")
    os.symlink("../../..", mnt / ".slfs" / "by-id" / "u2")
    assert confine(str(mnt), ".slfs/by-id/u1/A.lsl") == str(mnt / "Obj" / "A.lsl")
    assert "outside the mount" in refused(mnt, ".slfs/by-id/u2")
    assert relative(str(mnt), str(mnt / "Obj" / "A.lsl")) == "Obj/A.lsl"
    assert relative(str(mnt), str(mnt)) == ""
    assert relative(str(mnt), "/elsewhere/x") == "/elsewhere/x"


def test_texts_and_results() -> None:
    assert check_text("O/A.lsl", "é") == "é".encode()
    for text, code in (("x" * 262145, "EFBIG"), ("é" * 131073, "EFBIG"), ("a\x00", "EINVAL"), ("\ud800", "EILSEQ")):
        with pytest.raises(ClientError) as info:
            check_text("O/A.lsl", text)
        assert info.value.code == code
    with pytest.raises(ClientError):
        check_text("O/Notes", "n" * 65537)
    data = relativize("/m", {"path": "/m/O/A.lsl", "includes": ["/m/O/lib.lsl"], "notes": ["/m/O/A.lsl: failed"],
                             "message": "/m/O/x stays"})
    assert data == {"path": "O/A.lsl", "includes": ["O/lib.lsl"], "notes": ["O/A.lsl: failed"],
                    "message": "/m/O/x stays"}
    err = str(fail(ClientError("/m/O/A.lsl: changed in-world", "ESTALE"), "/m"))
    assert err == "O/A.lsl: changed in-world [ESTALE: changed in-world since you read it; re-read first]"
    assert "\x1b" not in str(fail(ClientError("evil \x1b]0;title\x07", "EIO")))


def test_a_permission_error_on_a_notecard_does_not_speak_of_scripts() -> None:
    notecard = str(fail(ClientError("/m/Box/Read Me: no modify permission", "EACCES"), "/m"))
    assert notecard.startswith("Box/Read Me: no modify permission [EACCES: ") and "script" not in notecard
    g1_read = str(fail(ClientError("/m/Box/Notes.txt: read: Insufficient permissions", "EACCES"), "/m"))
    assert "script" not in g1_read
    script = str(fail(ClientError("/m/Box/Hidden.lsl: script is not readable", "EACCES"), "/m"))
    assert "a script needs copy and modify permission to be read" in script


def test_which_events_concern_a_path() -> None:
    item = {"type": "runtime.debug", "scope": "item", "path": "O/A.lsl"}
    plain = {"type": "runtime.debug", "scope": "object", "path": "O"}
    loose = {"type": "runtime.debug", "scope": "mount"}
    assert concerns(item, "O/A.lsl") and concerns(item, "O") and concerns(item, "")
    assert not concerns(item, "O/B.lsl") and not concerns(item, "Other")
    assert concerns(plain, "O/A.lsl") and concerns(plain, "O") and not concerns(plain, "P/A.lsl")
    assert concerns(loose, "") and not concerns(loose, "O/A.lsl")


def test_mcp_verb_parses() -> None:
    parser = cli.build_parser()
    ns = parser.parse_args(["mcp", "--mount", "~/sl", "--auto-mount"])
    assert ns.command == "mcp" and ns.mount == "~/sl" and ns.auto_mount
    assert parser.parse_args(["mcp"]).mount is None


def test_list_request_structuring() -> None:
    from slfs.control.requests import ListParams, structure
    from slfs.world.fs_errors import FsError

    assert structure({"path": "O", "recursive": True}, ListParams, "list") == ListParams(path="O", recursive=True)
    assert structure({}, ListParams, "list") == ListParams()
    for bad in ("yes", 1, None):
        with pytest.raises(FsError, match=r"list\.recursive"):
            structure({"recursive": bad}, ListParams, "list")
