"""Input refused without a crash or a hang (issue 33): JSON nested too deeply (or too big) is a parse
error at every reader, deep but parseable values structure without recursion, an answer that cannot
be encoded is a failed answer; `slfs mcp`'s arguments checked against the declared schemas;
Windows paths translated without a look into the daemon's own mount, and the blocking work bounded."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from slfs import jsontext, registry
from slfs.cli.verbs import parse_params
from slfs.control.requests import MAX_DEPTH, ViewerCommandParams, depth, structure
from slfs.control.server import encode_frame
from slfs.event_types import SlfsEvent
from slfs.mcp.arguments import closed, problems
from slfs.model import editor_commands
from slfs.model.options import Options
from slfs.protocol import codec
from slfs.protocol import types as payloads
from slfs.protocol.jsonrpc import parse_message, parse_message_steps
from slfs.protocol.rpc_errors import ProtocolError
from slfs.session import incoming
from slfs.session.challenge import ChallengeError, read_challenge
from slfs.sim.world import load_world
from slfs.winpaths import PathMapper, PathTranslator, match_case, within
from slfs.world.fs_errors import FsError

DEEP = 100_000


def deep_array(levels: int) -> str:
    return "[" * levels + "]" * levels


def deep_value(levels: int) -> list[Any]:
    """A list nested `levels` deep, built without a parse (deeper than json.loads would take)."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


# --- JSON too deep or too big -----------------------------------------------------------------------

def test_jsontext_refuses_depth_and_size_as_a_value_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        jsontext.loads(deep_array(DEEP))
    with pytest.raises(ValueError, match="Expecting value"):
        jsontext.loads("[1,")
    assert jsontext.loads(b'{"a": [1]}') == {"a": [1]}

    def no_memory(_text: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(jsontext.json, "loads", no_memory)
    with pytest.raises(jsontext.Refused, match="too large to decode"):
        jsontext.loads("[]")


def test_protocol_frames_too_deep_are_protocol_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for frame in (deep_array(DEEP), '{"jsonrpc":"2.0","method":"x","params":' + deep_array(DEEP) + "}"):
        with pytest.raises(ProtocolError, match=r"invalid JSON \(nested too deeply\)"):
            parse_message(frame)
        steps = parse_message_steps(frame, step_chars=64)
        with pytest.raises(ProtocolError, match="nested too deeply"):
            while True:
                next(steps)

    def no_memory(_text: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr("slfs.protocol.jsonrpc.json.loads", no_memory)
    with pytest.raises(ProtocolError, match="too large to decode"):
        parse_message('{"jsonrpc":"2.0","method":"x"}')


def test_the_cli_and_the_registry_read_deep_json_as_not_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = deep_array(DEEP)
    assert parse_params([f"k={text}"]) == {"k": text}  # not JSON it can decode: kept as the text it is
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    (tmp_path / "slfs").mkdir(mode=0o700)
    folder = tmp_path / "slfs" / "mounts"
    folder.mkdir(mode=0o700)
    (folder / "x.json").write_text(text)
    assert registry.read_registry() == []


def _payload_classes() -> list[type]:
    return [c for c in vars(payloads).values() if isinstance(c, type) and attrs.has(c)]


def test_deep_values_structure_without_recursion() -> None:
    """cattrs structures a payload by its schema: a deep value in any field (or an unknown one)
    is taken whole or refused as that field's ProtocolError, never a RecursionError."""
    deep = deep_value(5000)
    classes = _payload_classes()
    assert len(classes) > 20
    for cls in classes:
        required = {f.name: None for f in attrs.fields(cls) if f.default is attrs.NOTHING}
        for field in [*attrs.fields(cls), None]:
            data = {**required, (field.name if field is not None else "unknown_field"): deep}
            try:
                codec.from_json(cls, data)
            except ProtocolError:
                pass


def test_control_params_are_bounded_in_depth() -> None:
    assert depth(1) == 0 and depth({"a": [1, {"b": []}]}) == 4
    assert depth(deep_value(5000)) == 5000  # a walk, no recursion
    ok = {"a": deep_value(MAX_DEPTH - 1)}
    assert structure({"params": ok}, ViewerCommandParams, "viewer_command").params == ok
    with pytest.raises(FsError, match=f"nested deeper than {MAX_DEPTH} levels @ viewer_command.params"):
        structure({"params": {"a": deep_value(MAX_DEPTH)}}, ViewerCommandParams, "viewer_command")


def test_an_answer_too_deep_to_encode_is_a_failed_answer() -> None:
    frame = {"type": "response", "id": 4, "command": "commands", "success": True,
             "data": deep_value(5000)}
    line = encode_frame(frame)
    assert line.endswith(b"\n")
    answer = json.loads(line)
    assert answer == {"type": "response", "id": 4, "command": "commands", "success": False, "code": "EIO",
                      "error": "the answer could not be encoded: nested too deeply"}
    assert json.loads(encode_frame({"type": "event", "event": {"a": 1}})) == {"type": "event", "event": {"a": 1}}
    event = {"type": "event", "event": {"seq": 9, "type": "viewer.x", "odd": deep_value(5000)}}
    assert json.loads(encode_frame(event)) == {"type": "event", "event": {"seq": 9, "type": "viewer.x",
                                                                            "unencodable": "nested too deeply"}}


# --- slfs mcp's arguments ------------------------------------------------------------------------------

SCHEMA = closed({"type": "object", "required": ["path", "on"], "properties": {
    "path": {"type": "string"}, "on": {"type": "boolean"},
    "tail_s": {"type": "number", "minimum": 0, "maximum": 10}, "since": {"type": "integer", "minimum": 0},
    "params": {"anyOf": [{"type": "object"}, {"type": "null"}]}}})


@pytest.mark.parametrize(("arguments", "want"), [
    ({"path": "a", "on": True}, []),
    ({"path": "a", "on": False, "tail_s": 0, "since": 3, "params": None}, []),
    ({"path": "a", "on": "yes"}, ["argument 'on' must be true or false, not string"]),
    ({"path": "a", "on": 1}, ["argument 'on' must be true or false, not integer"]),
    ({"path": "a", "on": True, "tail_s": "0"}, ["argument 'tail_s' must be a number, not string"]),
    ({"path": "a", "on": True, "tail_s": True}, ["argument 'tail_s' must be a number, not boolean"]),
    ({"path": "a", "on": True, "tail_s": 11}, ["argument 'tail_s' must be at most 10"]),
    ({"path": "a", "on": True, "since": 1.5}, ["argument 'since' must be an integer, not number"]),
    ({"path": "a", "on": True, "since": -1}, ["argument 'since' must be at least 0"]),
    ({"path": "a", "on": True, "params": "x" * 100_000},
     ["argument 'params' must be a JSON object or null, not string"]),
    ({"path": 5}, ["missing argument 'on'", "argument 'path' must be a string, not integer"]),
    ({"path": "a", "on": True, "recurse": 1, "zz": 2},
     ["unknown argument 'recurse', 'zz' (it takes: on, params, path, since, tail_s)"]),
])
def test_tool_arguments_are_checked_strictly(arguments: dict[str, Any], want: list[str]) -> None:
    assert problems(SCHEMA, arguments) == want


# --- Windows paths and the daemon's own mount ---------------------------------------------------------

@pytest.fixture
def wine_home(tmp_path: Path) -> dict[str, Path]:
    """A Wine prefix (Z: is tmp_path/root, D: is the mount itself) and a mount point under it."""
    root = tmp_path / "root"
    mount = root / "home" / "me" / "sl"
    mount.mkdir(parents=True)
    prefix = tmp_path / "wine"
    (prefix / "dosdevices").mkdir(parents=True)
    os.symlink(str(root), prefix / "dosdevices" / "z:")
    os.symlink(str(mount), prefix / "dosdevices" / "d:")
    return {"root": root, "mount": mount, "prefix": prefix}


@pytest.fixture
def looks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path winpaths looks at (lexists, scandir, isdir)."""
    seen: list[str] = []
    real_lexists, real_scandir, real_isdir = os.path.lexists, os.scandir, os.path.isdir

    def lexists(p: Any) -> bool:
        seen.append(str(p))
        return real_lexists(p)

    def scandir(p: Any) -> Any:
        seen.append(str(p))
        return real_scandir(p)

    def isdir(p: Any) -> bool:
        seen.append(str(p))
        return real_isdir(p)

    monkeypatch.setattr("slfs.winpaths.os.path.lexists", lexists)
    monkeypatch.setattr("slfs.winpaths.os.scandir", scandir)
    monkeypatch.setattr("slfs.winpaths.os.path.isdir", isdir)
    return seen


def test_a_windows_path_into_the_mount_is_never_looked_up_in_it(wine_home: dict[str, Path], looks: list[str]) -> None:
    mount = str(wine_home["mount"])
    paths = PathTranslator(PathMapper(mode="wine", wine_prefix=str(wine_home["prefix"])), mount)
    # through Z:, the mount's own name in another case: kept as given below it
    assert paths.to_local(r"Z:\HOME\me\SL\Hello Cube\hello.LSL") == f"{mount}/Hello Cube/hello.LSL"
    assert paths.to_local(r"Z:\home\me\sl") == mount
    # a drive whose link is the mount
    assert paths.to_local(r"D:\Box\readme") == f"{mount}/Box/readme"
    assert looks and not [p for p in looks if within(p, mount)], looks
    # outside the mount, case is still matched against the directories there
    assert paths.to_local(r"Z:\HOME\ME\other") == f"{wine_home['root']}/home/me/other"
    assert paths.in_mount(f"{mount}/x") and paths.in_mount(mount) and not paths.in_mount(f"{mount}x")
    # without a mountpoint given, the walk goes on as before (the mount's folder is an ordinary one)
    plain = PathTranslator(PathMapper(mode="wine", wine_prefix=str(wine_home["prefix"])))
    assert plain.to_local(r"Z:\home\me\SL") == mount


def test_match_case_inside_the_mount(tmp_path: Path) -> None:
    (tmp_path / "Hello Cube").mkdir()
    (tmp_path / "Hello Cube" / "Hello.lsl").write_text("x")
    assert match_case(str(tmp_path), "HELLO CUBE/hello.LSL") == f"{tmp_path}/Hello Cube/Hello.lsl"
    assert match_case(str(tmp_path), "nope/x") == f"{tmp_path}/nope/x"


def test_a_challenge_inside_the_mount_is_refused_unread(wine_home: dict[str, Path], looks: list[str]) -> None:
    mount = str(wine_home["mount"])
    paths = PathTranslator(PathMapper(mode="wine", wine_prefix=str(wine_home["prefix"])), mount)
    for path in (r"D:\sl_script_challenge_1.tmp", r"Z:\home\me\sl\Box\sl_script_challenge_2.tmp",
                 f"{mount}/sl_script_challenge_3.tmp"):
        with pytest.raises(ChallengeError, match=f"is inside this mount \\({mount}\\)"):
            read_challenge(path, paths.to_local, mountpoint=mount)
    assert not [p for p in looks if within(p, mount)], looks


async def test_a_challenge_read_that_hangs_is_abandoned(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    class Host:
        def read_challenge(self, path: str) -> str:
            release.wait(30)  # a file system that does not answer
            return "never"

    monkeypatch.setattr(incoming, "CHALLENGE_TIMEOUT", 0.2)
    try:
        with trio.fail_after(5), pytest.raises(ChallengeError, match=r"not read within 0\.2 s"):
            await incoming._read_challenge(Host(), "/x/sl_script_challenge.tmp")  # type: ignore[arg-type]
    finally:
        release.set()


async def test_open_file_resolves_off_the_loop_under_a_bound(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    release = threading.Event()
    loop_thread = threading.get_ident()
    threads: list[int] = []

    class Stuck(PathTranslator):
        def to_local(self, path: str) -> str:
            threads.append(threading.get_ident())
            release.wait(30)
            return path

    @attrs.define
    class Host:
        mountpoint: str
        options: Options = attrs.field(factory=Options)
        paths: PathTranslator = attrs.field(factory=lambda: Stuck(PathMapper(mode="wine", wine_prefix="/w"), "/m"))
        live: Any = attrs.field(factory=lambda: type("L", (), {"by_id": {}})())
        events: list[dict[str, Any]] = attrs.field(factory=list)
        errors: list[str] = attrs.field(factory=list)
        nursery: Any = None

        def spawn(self, fn: Any, *args: Any) -> None:
            self.nursery.start_soon(fn, *args)

        def emit(self, event: SlfsEvent) -> None:
            self.events.append({k: v for k, v in event.to_json().items() if k != "type"})

        def note_error(self, message: str) -> None:
            self.errors.append(message)

    monkeypatch.setattr(editor_commands, "RESOLVE_TIMEOUT", 0.2)
    host = Host(str(tmp_path))
    try:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                host.nursery = nursery
                assert editor_commands.EditorCommands(host).on_command("editor.open_file", {"path": r"Z:\m\x.lsl"})
    finally:
        release.set()
    assert threads and loop_thread not in threads
    assert host.errors == [r"editor.open_file Z:\m\x.lsl: refused: not resolved within 0.2 s"]


def test_a_sim_world_file_too_deep_is_not_a_world(tmp_path: Path) -> None:
    path = tmp_path / "world.json"
    path.write_text(deep_array(DEEP))
    with pytest.raises(ValueError, match=r"--world .*world.json: not a world file \(nested too deeply\)"):
        load_world(path)
