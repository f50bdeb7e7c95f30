"""Live sync from the command line: `slfs edit`, `slfs live`, `slfs diag --wait` and `open-uri`
with `script=`, against a fake control client; the editors are tiny scripts in tmp_path."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from slfs import cli
from slfs.cli.edit import TERMINALS, editor_argv, parse_temp_name, terminal_editor_refusal
from slfs.cli.output import VerbError
from slfs.client import ClientError, NoMount, mounts
from slfs.client.temp_files import find_temp_file
from slfs.world.open_cmd import check_template

MD5 = "0123456789abcdef0123456789abcdef"
OBJ = "edb64ade-4edb-5ab6-9b00-726ed29bc790"
ITEM = "50f550c1-7f14-5ac6-be04-f121557806dc"
MOUNT = "/m"
ENTRY = {"pid": 1, "mountpoint": MOUNT, "endpoint": "127.0.0.1:9020", "socket": "/m.sock"}


class FakeClient:
    """Answers requests from `handlers` (kind -> callable(params) -> data); records every call."""

    def __init__(self, handlers: dict[str, Callable[[dict[str, Any]], Any]], calls: list[tuple[str, dict[str, Any]]]):
        self.handlers = handlers
        self.calls = calls

    def request(self, kind: str, /, _timeout: float | None = 60.0, **params: Any) -> Any:
        self.calls.append((kind, params))
        if kind not in self.handlers:
            raise ClientError(f"unknown command {kind!r}", "EINVAL")
        return self.handlers[kind](params)

    def __enter__(self) -> FakeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def daemon(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """A fake running mount: (handlers to fill, calls made). edit.log goes under tmp_path/state."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for var in ("VISUAL", "EDITOR"):
        monkeypatch.delenv(var, raising=False)
    handlers: dict[str, Any] = {"status": lambda p: {"state": "connected"}}
    calls: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(mounts, "find_mount", lambda mount=None, path=None, entries=None: ENTRY)
    monkeypatch.setattr(mounts, "connect", lambda entry, **kw: FakeClient(handlers, calls))
    return handlers, calls


def edit_log(tmp_path: Path) -> str:
    log = tmp_path / "state" / "slfs" / "edit.log"
    return log.read_text() if log.exists() else ""


def editor(tmp_path: Path, body: str, name: str = "ed") -> Path:
    """An editor script: Python, `argv` and `out` (a file of its own) in scope."""
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\nimport json, os, sys, time\nargv = sys.argv[1:]\n"
                    f"out = {str(tmp_path / (name + '.out'))!r}\n{body}\n")
    path.chmod(0o755)
    return path


RECORD = "open(out, 'w').write(json.dumps({'argv': argv, 'sid': os.getsid(0) == os.getpid()}))"


def recorded(tmp_path: Path, name: str = "ed", timeout: float = 5.0) -> dict[str, Any]:
    out = tmp_path / f"{name}.out"
    deadline = time.monotonic() + timeout
    while not out.exists() or not out.read_text():
        assert time.monotonic() < deadline, "the editor never ran"
        time.sleep(0.02)
    return dict(json.loads(out.read_text()))


def temp_file(tmp_path: Path, name: str = f"sl_script_My Script_{MD5}.luau") -> Path:
    d = tmp_path / "viewer-tmp"
    d.mkdir(exist_ok=True)
    f = d / name
    f.write_text("print('hi')\n")
    return f


def subscribed(live_path: str, open_cmd: str | None = None) -> Callable[[dict[str, Any]], Any]:
    def answer(params: dict[str, Any]) -> dict[str, Any]:
        return {"path": live_path, "script_id": MD5, "name": "My Script", "temp_path": params["temp_path"],
                "open_cmd": open_cmd}
    return answer


# --- names and editor choice ---------------------------------------------------------------------


def test_parse_temp_name() -> None:
    assert parse_temp_name(f"/tmp/sl_script_My_Script_{MD5}.lsl") == ("My_Script", MD5, "lsl")
    assert parse_temp_name(f"sl_script_x_{MD5.upper()}.luau") == ("x", MD5, "luau")
    assert parse_temp_name(f"sl_script_x_{OBJ}.luau") == ("x", OBJ, "luau")
    assert parse_temp_name(f"/tmp/sl_script_{MD5}.lsl") == (None, MD5, "lsl")  # the fallback name
    for bad in ("main.lsl", f"sl_script_x_{MD5}.txt", f"sl_script_x_{MD5[:-1]}.lsl", f"sl_script__{MD5}.lsl",
                f"xsl_script_x_{MD5}.lsl", f"sl_script_{MD5}.lsl.bak", f"sl_script_x_{MD5}g.lsl"):
        with pytest.raises(VerbError) as info:
            parse_temp_name(bad)
        assert info.value.status == 2


def test_edit_bad_name_exits_2_and_is_logged(daemon: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _handlers, calls = daemon
    assert cli.main(["edit", str(tmp_path / "main.lsl")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "not a temp file of the viewer's script editor" in err and 'slfs edit "%s"' in err
    assert "not a temp file" in edit_log(tmp_path)
    assert calls == []  # nothing asked of the daemon


def test_editor_choice_order() -> None:
    p = "/m/.slfs/live/a b; rm x {line}.lsl"
    env = {"VISUAL": "gvim -f", "EDITOR": "nano"}
    assert editor_argv(p, "code -g {path}:{line}", env) == (["code", "-g", f"{p}:1"], "open_cmd")
    assert editor_argv(p, "'my editor' --new", env) == (["my editor", "--new", p], "open_cmd")  # appended
    assert editor_argv(p, None, env) == (["gvim", "-f", p], "$VISUAL")
    assert editor_argv(p, "  ", env) == (["gvim", "-f", p], "$VISUAL")
    assert editor_argv(p, None, {"VISUAL": "", "EDITOR": "emacsclient -c"}) == (["emacsclient", "-c", p], "$EDITOR")
    assert editor_argv(p, None, {}) == (["xdg-open", p], "xdg-open")
    with pytest.raises(VerbError, match="EDITOR"):
        editor_argv(p, None, {"EDITOR": "vim 'unbalanced"})


# --- slfs edit ------------------------------------------------------------------------------------


def test_edit_argv_is_never_a_shell(daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    handlers, calls = daemon
    live = str(tmp_path / "a b; touch PWNED $(touch PWNED2).luau")
    ed = editor(tmp_path, RECORD)
    handlers["live_subscribe"] = subscribed(live, open_cmd=f"{ed} --line={{line}}")
    monkeypatch.setenv("VISUAL", "false")  # open_cmd wins
    monkeypatch.chdir(tmp_path)
    temp = temp_file(tmp_path)
    assert cli.main(["edit", "--wait", str(temp)]) == 0
    out, err = capsys.readouterr()
    assert out == live + "\n"
    assert recorded(tmp_path)["argv"] == ["--line=1", live]
    assert not (tmp_path / "PWNED").exists() and not (tmp_path / "PWNED2").exists()
    assert ("live_subscribe", {"temp_path": str(temp)}) in calls
    assert "starting the editor (open_cmd)" in err and "starting the editor (open_cmd)" in edit_log(tmp_path)


def test_edit_uses_visual_then_editor(daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handlers, _calls = daemon
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/x.luau")
    monkeypatch.setenv("EDITOR", str(editor(tmp_path, RECORD, "editor")))
    monkeypatch.setenv("VISUAL", f"{editor(tmp_path, RECORD, 'visual')} -f")
    assert cli.main(["edit", "--wait", str(temp_file(tmp_path))]) == 0
    assert recorded(tmp_path, "visual")["argv"] == ["-f", "/m/.slfs/live/x.luau"]
    assert not (tmp_path / "editor.out").exists()
    monkeypatch.delenv("VISUAL")
    assert cli.main(["edit", "--wait", str(temp_file(tmp_path))]) == 0
    assert recorded(tmp_path, "editor")["argv"] == ["/m/.slfs/live/x.luau"]


def test_edit_falls_back_to_xdg_open(daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handlers, _calls = daemon
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/x.luau")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    editor(bindir, RECORD, "xdg-open")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    assert cli.main(["edit", "--wait", str(temp_file(tmp_path))]) == 0
    assert recorded(bindir, "xdg-open")["argv"] == ["/m/.slfs/live/x.luau"]


def test_edit_detaches(daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    handlers, _calls = daemon
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/x.luau")
    ed = editor(tmp_path, f"print('editor output'); time.sleep(1.5); {RECORD}")
    monkeypatch.setenv("VISUAL", str(ed))
    start = time.monotonic()
    assert cli.main(["edit", "--json", str(temp_file(tmp_path))]) == 0
    assert time.monotonic() - start < 1.4  # returned before the editor ended
    out, _err = capsys.readouterr()
    data = json.loads(out)
    assert data["path"] == "/m/.slfs/live/x.luau" and data["mount"] == MOUNT and data["script_id"] == MD5
    assert data["editor"]["argv"] == [str(ed), "/m/.slfs/live/x.luau"] and data["editor"]["source"] == "$VISUAL"
    got = recorded(tmp_path)
    assert got["sid"] is True  # its own session: it outlives slfs edit and the viewer's process group
    assert "editor output" in edit_log(tmp_path)  # its output goes to the log


def test_edit_failing_editor_is_logged(daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    handlers, _calls = daemon
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/x.luau")
    monkeypatch.setenv("VISUAL", str(editor(tmp_path, "sys.stderr.write('cannot open display\\n'); sys.exit(3)")))
    assert cli.main(["edit", str(temp_file(tmp_path))]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "exited with status 3 at once" in err and "cannot open display" in err
    log = edit_log(tmp_path)
    assert "starting the editor ($VISUAL)" in log and "exited with status 3 at once" in log
    assert "slfs edit " in log  # the invocation itself

    monkeypatch.setenv("VISUAL", str(tmp_path / "no-such-editor"))
    assert cli.main(["edit", str(temp_file(tmp_path))]) == 1
    _out, err = capsys.readouterr()
    assert "could not be started" in err and "no-such-editor" in err
    assert "could not be started" in edit_log(tmp_path)


def test_edit_wait_returns_the_editor_status(daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    handlers, _calls = daemon
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/x.luau")
    monkeypatch.setenv("EDITOR", str(editor(tmp_path, "time.sleep(0.7); sys.exit(5)")))
    start = time.monotonic()
    assert cli.main(["edit", "--wait", "--json", str(temp_file(tmp_path))]) == 5
    assert time.monotonic() - start >= 0.7
    out, _err = capsys.readouterr()
    assert json.loads(out)["editor"]["status"] == 5
    assert "exited with status 5" in edit_log(tmp_path)


def test_edit_refused(daemon: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    handlers, _calls = daemon

    def refuse(params: dict[str, Any]) -> Any:
        raise ClientError("the viewer refused: script is already subscribed (status 3)", "EREFUSED")

    handlers["live_subscribe"] = refuse
    assert cli.main(["edit", str(temp_file(tmp_path))]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "the viewer refused: script is already subscribed (status 3)" in err
    assert "the viewer refused" in edit_log(tmp_path)


def test_edit_mounts_when_none_runs(daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    handlers, _calls = daemon
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/x.luau")
    monkeypatch.setenv("VISUAL", str(editor(tmp_path, RECORD)))
    monkeypatch.delenv("SLFS_PORT", raising=False)

    def none_running(mount: Any = None, path: Any = None, entries: Any = None) -> Any:
        raise NoMount("no slfs mount is running", "ENOENT")

    started: list[int] = []
    waited: list[dict[str, Any]] = []
    monkeypatch.setattr(mounts, "find_mount", none_running)
    monkeypatch.setattr(mounts, "mount_for_port", lambda port: None)
    monkeypatch.setattr(mounts, "start_mount", lambda port, **kw: started.append(port) or ENTRY)
    monkeypatch.setattr(mounts, "wait_connected", lambda entry, timeout: waited.append(entry))
    assert cli.main(["edit", "--wait", str(temp_file(tmp_path))]) == 0
    assert started == [9020] and waited == [ENTRY]


# --- slfs live, slfs diag --wait -------------------------------------------------------------------


def test_live_lists(daemon: Any, capsys: pytest.CaptureFixture[str]) -> None:
    handlers, _calls = daemon
    scripts = [
        {"name": "a.luau", "path": "/m/.slfs/live/a.luau", "script_id": MD5, "temp_path": "/tmp/x",
         "item": "/m/Lamp/a.luau", "compiled": True, "at": 1.0, "errors": 0},
        {"name": "b.lsl", "path": "/m/.slfs/live/b.lsl", "script_id": "f" * 32, "temp_path": "/tmp/y",
         "item": None, "compiled": False, "at": 2.0, "errors": 2},
        {"name": "c.lsl", "path": "/m/.slfs/live/c.lsl", "script_id": "e" * 32, "temp_path": "/tmp/z",
         "item": None, "compiled": None, "at": None, "errors": 0},
    ]
    handlers["live_list"] = lambda p: {"scripts": scripts}
    assert cli.main(["live"]) == 0
    out, _err = capsys.readouterr()
    assert out.splitlines() == [
        f"/m/.slfs/live/a.luau  {MD5}  item /m/Lamp/a.luau  last compile: ok",
        f"/m/.slfs/live/b.lsl  {'f' * 32}  last compile: failed (2 errors)",
        f"/m/.slfs/live/c.lsl  {'e' * 32}  last compile: none",
    ]
    assert cli.main(["live", "--json"]) == 0
    out, _err = capsys.readouterr()
    assert json.loads(out) == {"scripts": scripts}


def test_diag_wait(daemon: Any, capsys: pytest.CaptureFixture[str]) -> None:
    handlers, calls = daemon
    result: dict[str, Any] = {"diagnostics": [], "files": [{"path": "/m/.slfs/live/a.luau", "compiled": True}],
                              "waited": True}
    handlers["diag"] = lambda p: result
    assert cli.main(["diag", "--wait", "/m/.slfs/live/a.luau"]) == 0
    assert calls[-1] == ("diag", {"path": "/m/.slfs/live/a.luau", "wait": 70.0})
    result["waited"] = False
    assert cli.main(["diag", "--wait", "/m/.slfs/live/a.luau"]) == 1
    _out, err = capsys.readouterr()
    assert "no compile result for its last save within 70 s" in err
    result.update(waited=True, diagnostics=[{"path": "/m/.slfs/live/a.luau", "row": 1, "column": 0,
                                             "level": "error", "message": "bad"}])
    assert cli.main(["diag", "--wait", "/m/.slfs/live/a.luau"]) == 1
    assert cli.main(["diag", "--wait"]) == 2  # which file?
    assert cli.main(["diag", "/m/x"]) == 1 and "wait" not in calls[-1][1]


# --- open-uri script= -------------------------------------------------------------------------------


def test_find_temp_file(tmp_path: Path) -> None:
    a = temp_file(tmp_path, f"sl_script_a_{MD5}.lsl")
    assert find_temp_file(str(a.parent), MD5.upper()) == str(a)
    os.utime(a, (1, 1))
    b = temp_file(tmp_path, f"sl_script_{MD5}.luau")
    assert find_temp_file(str(a.parent), MD5) == str(b)  # the newest
    temp_file(tmp_path, f"sl_script_a_{'f' * 32}.lsl")
    assert find_temp_file(str(a.parent), "e" * 32) is None
    assert find_temp_file(str(tmp_path / "missing"), MD5) is None


def uri(**fields: str) -> str:
    return "vscode://lindenlab.sl-vscode-plugin/connect?port=9020&" + "&".join(f"{k}={v}" for k, v in fields.items())


@pytest.fixture
def uri_daemon(daemon: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(mounts, "mount_for_port", lambda port: ENTRY)
    monkeypatch.setattr(mounts, "wait_connected", lambda entry, timeout: None)
    return daemon


def test_open_uri_live_script(uri_daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    handlers, calls = uri_daemon
    temp = temp_file(tmp_path, f"sl_script_Main_{MD5}.luau")
    temp_file(tmp_path, f"sl_script_Other_{'f' * 32}.luau")
    handlers["script_list"] = lambda p: {"temp_dir": str(temp.parent), "script_ids": ["F" * 32, MD5.upper()]}
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/Main.luau", open_cmd=str(editor(tmp_path, RECORD)))
    assert cli.main(["open-uri", uri(script=MD5)]) == 0
    out, _err = capsys.readouterr()
    assert out == "/m/.slfs/live/Main.luau\n"
    assert ("live_subscribe", {"temp_path": str(temp)}) in calls
    assert not any(kind in ("find", "open") for kind, _ in calls)
    assert recorded(tmp_path)["argv"] == ["/m/.slfs/live/Main.luau"]


def test_open_uri_live_script_by_item_uuid(uri_daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """script= an item UUID: its script_id is the MD5 of `<prim>_<item>` (the null prim in inventory)."""
    handlers, calls = uri_daemon
    sid = hashlib.md5(f"{OBJ}_{ITEM}".encode()).hexdigest()
    temp = temp_file(tmp_path, f"sl_script_Main_{sid}.lsl")
    handlers["script_list"] = lambda p: {"temp_dir": str(temp.parent), "script_ids": [sid]}
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/Main.lsl", open_cmd=str(editor(tmp_path, RECORD)))
    assert cli.main(["open-uri", "--json", uri(object=OBJ, script=ITEM)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["path"] == "/m/.slfs/live/Main.lsl" and data["live"]["temp_path"] == str(temp)
    assert ("live_subscribe", {"temp_path": str(temp)}) in calls


def test_open_uri_script_not_live_finds_the_item(uri_daemon: Any, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    handlers, calls = uri_daemon
    handlers["script_list"] = lambda p: {"temp_dir": str(tmp_path), "script_ids": ["f" * 32]}
    handlers["find"] = lambda p: {"path": f"/m/Lamp/{p['uuid']}.luau", "uuid": p["uuid"]}
    assert cli.main(["open-uri", uri(object=OBJ, script=ITEM)]) == 0
    assert capsys.readouterr().out == f"/m/Lamp/{ITEM}.luau\n"
    assert not any(kind == "live_subscribe" for kind, _ in calls)
    # a daemon without script_list: the published objects only, as before
    del handlers["script_list"]
    assert cli.main(["open-uri", uri(script=ITEM)]) == 0
    assert capsys.readouterr().out == f"/m/Lamp/{ITEM}.luau\n"


# --- a Windows viewer (under Wine, or on Windows with slfs in WSL2) --------------------------------


def test_parse_temp_name_of_a_windows_path() -> None:
    assert parse_temp_name(rf"C:\users\R\AppData\Local\Temp\sl_script_My Script_{MD5}.lsl") == (
        "My Script", MD5, "lsl")
    assert parse_temp_name(f"C:/users/R/Temp/sl_script_{MD5}.luau") == (None, MD5, "luau")
    with pytest.raises(VerbError):
        parse_temp_name(r"C:\users\R\Temp\main.lsl")


def test_edit_hands_a_windows_path_to_the_daemon_as_the_viewer_gave_it(
        daemon: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The viewer runs `slfs edit "%s"` with its own Windows path: it is not made absolute here (it
    would become CWD/C:\\...); the daemon translates it with the mount's -o windows_paths options,
    as it does the challenge, and answers with the local temp path."""
    handlers, calls = daemon
    viewer_path = rf"C:\users\Resident\AppData\Local\Temp\sl_script_My Script_{MD5}.luau"
    local = "/home/u/.wine/drive_c/users/Resident/AppData/Local/Temp/" + viewer_path.rsplit("\\", 1)[1]

    def subscribe(params: dict[str, Any]) -> dict[str, Any]:
        assert params["temp_path"] == viewer_path
        return {"path": "/m/.slfs/live/My Script.luau", "script_id": MD5, "name": "My Script.luau",
                "temp_path": local, "open_cmd": None}

    handlers["live_subscribe"] = subscribe
    monkeypatch.setenv("VISUAL", str(editor(tmp_path, RECORD)))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["edit", "--json", viewer_path]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["temp_path"] == local and data["path"] == "/m/.slfs/live/My Script.luau"
    assert [c for c in calls if c[0] == "live_subscribe"] == [("live_subscribe", {"temp_path": viewer_path})]
    assert recorded(tmp_path)["argv"] == ["/m/.slfs/live/My Script.luau"]


def test_edit_of_an_untranslatable_windows_path_says_which_option(daemon: Any, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    handlers, _calls = daemon

    def refuse(params: dict[str, Any]) -> Any:  # what the daemon answers (LiveScripts.local_path)
        raise ClientError(f"{params['temp_path']!r} is a Windows path, and -o windows_paths=off does not "
                           "translate them: set -o windows_paths=wine ...", "EINVAL")

    handlers["live_subscribe"] = refuse
    assert cli.main(["edit", rf"C:\Temp\sl_script_x_{MD5}.lsl"]) == 1
    _out, err = capsys.readouterr()
    assert "set -o windows_paths=wine" in err and "set -o windows_paths=wine" in edit_log(tmp_path)


def test_open_uri_says_why_a_windows_temp_dir_is_not_used(uri_daemon: Any, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    handlers, _calls = uri_daemon

    def script_list(params: dict[str, Any]) -> Any:
        raise ClientError(r"'Q:\Temp': drive Q: has no link in /w/dosdevices; ... set -o wine_prefix=DIR", "EINVAL")

    handlers["script_list"] = script_list
    handlers["find"] = lambda p: {"path": "/m/Box/Main.lsl"}
    assert cli.main(["open-uri", uri(script=MD5)]) == 0
    out, err = capsys.readouterr()
    assert out == "/m/Box/Main.lsl\n" and "set -o wine_prefix=DIR" in err


def test_a_terminal_editor_without_a_terminal_says_to_set_open_cmd(daemon: Any, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The viewer starts `slfs edit` without a terminal: vim there would hang unseen. It is not
    started; the message says to set open_cmd and gives one that runs the same editor in a window."""
    handlers, _calls = daemon
    handlers["live_subscribe"] = subscribed("/m/.slfs/live/x.luau")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    started = tmp_path / "vim-started"
    vim = bin_dir / "vim"
    vim.write_text(f"#!/bin/sh\ntouch {started}\n")
    vim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", "vim -u NONE")
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # no terminal, as the viewer runs it
    for argv in (["edit", str(temp_file(tmp_path))], ["edit", "--wait", str(temp_file(tmp_path))]):
        assert cli.main(argv) == 1
        err = capsys.readouterr().err
        assert "$EDITOR is 'vim -u NONE'" not in err and "$EDITOR is vim -u NONE, a terminal editor" in err, err
        example = re.search(r"slfs mount -o open_cmd=('[^']*') (\S+)", err)
        assert example and example[2] == MOUNT, err
        words = shlex.split(example[1])[0].split()
        assert words[-4:] == ["vim", "-u", "NONE", "{path}"] and words[0] in {t for t, _r in TERMINALS}, words
        assert check_template(shlex.split(example[1])[0]) == words  # the mount takes it as it is
        assert "open_cmd" in edit_log(tmp_path)
    assert not started.exists()
    # A window editor, or open_cmd, is started as before.
    assert terminal_editor_refusal(["gvim", "-f", "/p"], "$EDITOR", MOUNT, wait=False) is None
    assert terminal_editor_refusal(["vim", "/p"], "open_cmd", MOUNT, wait=False) is None
    assert terminal_editor_refusal(["emacs", "/p"], "$VISUAL", MOUNT, wait=False) is None
    assert terminal_editor_refusal(["emacs", "-nw", "/p"], "$VISUAL", MOUNT, wait=False) is not None
