"""Scripts as sources through the fs operations object (no mount): envelopes shown as sources,
builds through includes found in the model, diagnostics mapped back, `slfs build`."""

from __future__ import annotations

import errno
import itertools
import os
from pathlib import Path

import pytest
import trio
from support.inproc import CTX, Driver, fails, fs_against_sim
from support.sources_world import (
    FIRESTORM_TEXT,
    FS_SCRIPT,
    HELPER,
    LIB_TEXT,
    PLAIN,
    PLAIN_TEXT,
    SOURCE,
    TOOL,
    sources_world,
)
from support.worlds import u

from slfs.model.options import Options
from slfs.sources import envelope
from slfs.world.tree import Item


def saves(fs: Driver, item_id: str) -> list[str]:
    return [p["content"] for m, p in fs.sim.calls if m == "object.content.save" and p.get("item_id") == item_id]


def recovery(tmp_path: Path) -> list[bytes]:
    d = tmp_path / "xdg_state_home" / "slfs" / "recovery"
    return [p.read_bytes() for p in sorted(d.iterdir())] if d.is_dir() else []


async def xattr(fs: Driver, path: str, name: str) -> str | None:
    try:
        return (await fs.ops.getxattr(await fs.lookup(path), f"user.sl.{name}".encode(), CTX)).decode()
    except Exception as exc:  # FUSEError(ENODATA)
        assert getattr(exc, "errno", None) == errno.ENODATA
        return None


def item_of(fs: Driver, item_id: str) -> Item:
    node = fs.ws.tree.by_uuid[item_id]
    assert isinstance(node, Item)
    return node


async def test_a_firestorm_script_shows_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        assert await fs.read_file("Box/Greeter.lsl") == SOURCE.encode()
        assert (await fs.stat("Box/Greeter.lsl")).st_size == len(SOURCE.encode())
        assert await fs.read_file("Box/.slfs/Greeter.lsl.inworld") == FIRESTORM_TEXT.encode()
        assert await xattr(fs, "Box/Greeter.lsl", "preprocessed") == "1"
        # Everything else is shown as it is.
        assert await fs.read_file("Box/Plain.lsl") == PLAIN_TEXT.encode()
        assert await xattr(fs, "Box/Plain.lsl", "preprocessed") is None
        assert await fs.read_file("Box/.slfs/Plain.lsl.inworld") == PLAIN_TEXT.encode()
        assert await fs.read_file("Box/.slfs/lib.lsl.inworld") == LIB_TEXT.encode()


async def test_writing_the_shown_source_back_sends_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        await fs.write_file("Box/Greeter.lsl", SOURCE.encode())
        assert saves(fs, FS_SCRIPT) == []
        assert fs.sim.item(FS_SCRIPT).content == FIRESTORM_TEXT


async def test_an_edit_is_saved_as_a_new_envelope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        edited = SOURCE.replace('"hello"', '"hello again"')
        await fs.write_file("Box/Greeter.lsl", edited.encode())
        [stored] = saves(fs, FS_SCRIPT)
        got = envelope.unwrap(stored)
        assert got is not None and got.source == edited and got.target == "mono"
        assert 'llOwnerSay("hello again");' in got.expansion and "GREETING" not in got.expansion
        assert "\n//program_version slfs 1.0\n//last_compiled " in stored
        assert await fs.read_file("Box/Greeter.lsl") == edited.encode()
        assert await fs.read_file("Box/.slfs/Greeter.lsl.inworld") == stored.encode()
        assert fs.ws.compiles[FS_SCRIPT].compiled


async def test_a_plain_script_that_includes_a_notecard_is_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        arm = next(n for n in await fs.entries("Box") if n.startswith("Arm"))
        body = PLAIN_TEXT.replace('llOwnerSay("plain")', 'say("x")')
        source = f'#include "lib.lsl"\n#include "{arm}/arm.lsl"\n' + body
        await fs.write_file("Box/Plain.lsl", source.encode())
        [stored] = saves(fs, PLAIN)
        got = envelope.unwrap(stored)
        assert got is not None and got.source == source and got.target == "lsl2"  # the item's VM
        assert "llOwnerSay(s);" in got.expansion and "integer ARM = 2;" in got.expansion
        assert await fs.read_file("Box/Plain.lsl") == source.encode()
        assert await xattr(fs, "Box/Plain.lsl", "preprocessed") == "1"
        report = fs.ws.compiles[PLAIN]
        assert report.compiled and report.preprocessed
        assert report.includes == (f"{fs.ws.mountpoint}/Box/lib.lsl", f"{fs.ws.mountpoint}/Box/{arm}/arm.lsl")


async def test_plain_text_and_preprocessor_off_are_saved_verbatim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        text = PLAIN_TEXT.replace("plain", "still plain")
        await fs.write_file("Box/Plain.lsl", text.encode())
        off = "//fspreprocessor off\n" + PLAIN_TEXT
        await fs.write_file("Box/Plain.lsl", off.encode())
        assert saves(fs, PLAIN) == [text, off]


async def test_a_missing_include_fails_with_its_place_and_search_path(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      viewer_version: int) -> None:
    include_dir = tmp_path / "include"
    include_dir.mkdir()
    opts = Options(delete_grace=0.2, include=(str(include_dir),))
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version,
                              options=opts) as fs:
        source = 'default\n{\n#include "nowhere.lsl"\n}\n'
        fh = await fs.open("Box/Plain.lsl", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, source.encode())
        assert await fails(fs.ops.flush(fh)) == errno.EIO
        await fs.ops.release(fh)
        assert saves(fs, PLAIN) == []
        assert recovery(tmp_path) == [source.encode()]
        diag = (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode()
        mnt = fs.ws.mountpoint
        assert diag.startswith(f"{mnt}/Box/Plain.lsl:3:")
        assert 'include not found: "nowhere.lsl"' in diag and f"{mnt}/Box" in diag and str(include_dir) in diag
        assert fs.sim.item(PLAIN).content == PLAIN_TEXT


async def test_a_compile_error_maps_to_the_include_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        viewer_version: int) -> None:
    include_dir = tmp_path / "include"
    include_dir.mkdir()
    (include_dir / "broken.lsl").write_text("ok()\n{\n}\nbad() { llOwnerSay(\"x\" @); }\n")
    opts = Options(delete_grace=0.2, include=(str(include_dir),))
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version,
                              options=opts) as fs:
        source = "// top\n#include <broken.lsl>\n" + PLAIN_TEXT
        await fs.write_file("Box/Plain.lsl", source.encode())  # stored; the compile fails
        diag = (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode()
        assert diag.startswith(f"{include_dir / 'broken.lsl'}:4:"), diag
        root = (await fs.read_file(".slfs/diagnostics")).decode()
        assert root == diag


async def test_angle_includes_search_only_the_include_directories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        fh = await fs.open("Box/Plain.lsl", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, b"#include <lib.lsl>\n" + PLAIN_TEXT.encode())
        assert await fails(fs.ops.flush(fh)) == errno.EIO  # lib.lsl is in the prim, not an include dir
        await fs.ops.release(fh)


async def test_an_in_world_text_over_the_limit_is_efbig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        # A source under the limit whose envelope + expansion is over it.
        source = "#define X " + "x" * 10 + "\n" + ("X\n" * 40_000) + PLAIN_TEXT
        assert len(source) < 262_144
        fh = await fs.open("Box/Plain.lsl", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, source.encode())
        assert await fails(fs.ops.flush(fh)) == errno.EFBIG
        await fs.ops.release(fh)
        assert saves(fs, PLAIN) == []
        diag = (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode()
        assert "bytes" in diag and "262144" in diag


async def test_build_saves_only_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        writer = fs.svc.writer
        source = '#include "lib.lsl"\n' + PLAIN_TEXT
        await fs.write_file("Box/Plain.lsl", source.encode())
        assert len(saves(fs, PLAIN)) == 1
        assert await writer.rebuild(item_of(fs, PLAIN)) == "unchanged"
        # Firestorm's own build may lay the expansion out differently: rebuilt once, then settled.
        assert await writer.rebuild(item_of(fs, FS_SCRIPT)) in ("saved", "unchanged")
        assert await writer.rebuild(item_of(fs, FS_SCRIPT)) == "unchanged"
        assert await writer.rebuild(item_of(fs, TOOL)) == "plain"
        assert len(saves(fs, PLAIN)) == 1
        await fs.write_file("Box/lib.lsl", LIB_TEXT.replace("s)", "s + \"!\")").encode())
        assert await writer.rebuild(item_of(fs, PLAIN)) == "saved"
        [_, stored] = saves(fs, PLAIN)
        got = envelope.unwrap(stored)
        assert got is not None and got.source == source and 'llOwnerSay(s + "!");' in got.expansion


async def test_luau_require_is_inlined_in_alchemys_envelope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        source = 'local h = require("helper")\nprint(h.n)\n'
        await fs.write_file("Box/Tool.luau", source.encode())
        [stored] = saves(fs, TOOL)
        assert stored.startswith("--start_unprocessed_text\n--[")
        got = envelope.unwrap(stored)
        assert got is not None and got.source == source and got.target == "luau"
        assert "return { n = 42 }" in got.expansion and 'require("helper")' not in got.expansion
        assert await fs.read_file("Box/Tool.luau") == source.encode()
        # A require of nothing the mount has, in a script not kept in an envelope: saved verbatim.
        plain = 'local x = require("nothing")\nreturn x\n'
        await fs.write_file("Box/helper.luau", plain.encode())
        assert saves(fs, HELPER) == [plain]


async def test_the_viewers_own_compile_of_our_build_maps_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Newer viewers broadcast script.compiled for a save made in the viewer: when what it
    compiled is our build, its rows map to the sources as our own save's do."""
    include_dir = tmp_path / "include"
    include_dir.mkdir()
    (include_dir / "broken.lsl").write_text("ok()\n{\n}\nbad() { llOwnerSay(\"x\" @); }\n")
    opts = Options(delete_grace=0.2, include=(str(include_dir),))
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=2, options=opts) as fs:
        await fs.write_file("Box/Plain.lsl", ("#include <broken.lsl>\n" + PLAIN_TEXT).encode())
        ours = (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode()
        assert ours.startswith(f"{include_dir / 'broken.lsl'}:4:")
        node = item_of(fs, PLAIN)
        await fs.sim.viewer_save(PLAIN, fs.sim.item(PLAIN).content)  # the viewer's Save, no change
        assert await fs.ws.wait_for_world(lambda: fs.ws.compiles[PLAIN].source == "viewer", 5)
        assert (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode() == ours
        assert node.cache.inworld_places is not None
        # A text the viewer changed is no longer our build: its rows are its own.
        seen = node.cache.generation
        await fs.sim.viewer_save(PLAIN, "default { bad @ }\n")
        assert await fs.ws.wait_for_world(lambda: node.cache.generation != seen, 5)
        assert await fs.read_file("Box/Plain.lsl") == b"default { bad @ }\n"
        assert node.cache.inworld_places is None and node.cache.inworld is None
        diag = (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode()
        assert diag.startswith(f"{fs.ws.mountpoint}/Box/Plain.lsl:1:")


TRICKY_SOURCES = [
    '#define A 1\r\ndefault\r\n{\r\n    state_entry() { llOwnerSay("crlf"); }\r\n}\r\n',
    '#define A 1\ndefault { state_entry() { llOwnerSay("*/ /* // | /|/ *|/ ]==]"); } }  // */ /* |\n',
    "/* a comment */ #define A 1\n#define B /* */ 2\ndefault { state_entry() { } }",  # no final newline
    '#define NAME "h\u00e9llo \u2603"\ndefault { state_entry() { llOwnerSay(NAME); } } // \ud83d\ude00 ends with *',
    "#define A 1\ndefault { state_entry() { } }\n/",
]


@pytest.mark.parametrize("source", TRICKY_SOURCES)
async def test_what_the_mount_shows_after_a_save_is_the_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               source: str) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=2) as fs:
        data = source.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode()
        await fs.write_file("Box/Plain.lsl", data)
        assert await fs.read_file("Box/Plain.lsl") == data
        got = envelope.unwrap(fs.sim.item(PLAIN).content)
        assert got is not None and got.source.encode() == data
        node = item_of(fs, PLAIN)
        node.cache.content_valid = False  # as after a reconnect: what the viewer holds is read again
        assert await fs.read_file("Box/Plain.lsl") == data


async def test_luau_sources_round_trip_through_the_long_bracket(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=1) as fs:
        source = 'local h = require("helper")\r\nlocal s = [==[ ]] ]=] ]==] ]===]\r\nprint(h.n, s)\r\n'
        await fs.write_file("Box/Tool.luau", source.encode())
        assert envelope.unwrap(fs.sim.item(TOOL).content) is not None
        item_of(fs, TOOL).cache.content_valid = False
        assert await fs.read_file("Box/Tool.luau") == source.encode()


async def test_agent_macros_come_from_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        source = ("#define X 1\ndefault { state_entry() { llOwnerSay(__AGENTNAME__); "
                  "llOwnerSay(__AGENTKEY__); key k = __AGENTIDRAW__; } }\n")
        await fs.write_file("Box/Plain.lsl", source.encode())
        got = envelope.unwrap(saves(fs, PLAIN)[-1])
        assert got is not None
        agent = u(99, "e")
        assert f'llOwnerSay("Tester Resident"); llOwnerSay("{agent}"); key k = {agent};' in got.expansion


async def test_a_plain_script_written_unchanged_is_not_saved(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             viewer_version: int) -> None:
    """Plain scripts skip an unchanged save as built ones do: a save would recompile and reset the
    script (its state lost) for nothing. One changed byte is saved."""
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        shown = await fs.read_file("Box/Tool.luau")
        await fs.write_file("Box/Tool.luau", shown)
        await fs.write_file("Box/Plain.lsl", PLAIN_TEXT.encode())
        assert saves(fs, TOOL) == [] and saves(fs, PLAIN) == []
        await fs.write_file("Box/Plain.lsl", PLAIN_TEXT.encode() + b"\n")
        assert saves(fs, PLAIN) == [PLAIN_TEXT + "\n"]


async def test_includes_never_reach_outside_their_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         viewer_version: int) -> None:
    """A source can be a peer's (an enveloped script the viewer sent): no include of it may pull
    another file of the user's in-world - absolute names, names climbing out of the include
    directory or the overlay, symlinks out, another object's scripts."""
    include_dir = tmp_path / "include"
    include_dir.mkdir()
    secret = tmp_path / "secret.lsl"
    secret.write_text("string SECRET = \"do not send\";\n")
    (include_dir / "link.lsl").symlink_to(secret)
    opts = Options(delete_grace=0.2, include=(str(include_dir),))
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version,
                              options=opts) as fs:
        for name in (f'"{secret}"', f"<{secret}>", '"../secret.lsl"', "<../secret.lsl>", '"link.lsl"',
                     '"../Box/lib.lsl"', '"../../secret.lsl"'):
            fh = await fs.open("Box/Plain.lsl", os.O_WRONLY | os.O_TRUNC)
            await fs.ops.write(fh, 0, f"#include {name}\n{PLAIN_TEXT}".encode())
            assert await fails(fs.ops.flush(fh)) == errno.EIO, name
            await fs.ops.release(fh)
        assert saves(fs, PLAIN) == []
        assert all("do not send" not in c for _m, p in fs.sim.calls for c in [str(p)])


def _bomb(levels: int = 40, leaf: str = "x" * 1000) -> str:
    """`#define M0 M1 M1`, ... 2**levels copies of `leaf`: past the in-world size at once."""
    names = [f"M{i}" for i in range(levels)] + [leaf]
    defines = "".join(f"#define {a} {b} {b}\n" for a, b in itertools.pairwise(names))
    return defines + "default { state_entry() { M0; } }\n"


async def test_a_macro_bomb_is_efbig_and_leaves_the_daemon_answering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        with trio.fail_after(25):  # generous: each bomb stops after a few hundred tokens
            for attempt in range(10):
                fh = await fs.open("Box/Plain.lsl", os.O_WRONLY | os.O_TRUNC)
                await fs.ops.write(fh, 0, _bomb(leaf="x" * (1000 + attempt)).encode())
                assert await fails(fs.ops.flush(fh)) == errno.EFBIG
                await fs.ops.release(fh)
            diag = (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode()
            # where it was hit: the definition whose expansion went over
            assert diag.startswith(f"{fs.ws.mountpoint}/Box/Plain.lsl:32:"), diag
            assert "262144" in diag and "in-world limit" in diag
            # No worker thread is left behind: the next save is built and stored at once.
            assert trio.to_thread.current_default_thread_limiter().borrowed_tokens == 0
            await fs.write_file("Box/Plain.lsl", ("#define W 1\n" + PLAIN_TEXT).encode())
        assert saves(fs, PLAIN) != [] and "plain" in saves(fs, PLAIN)[-1]


async def test_a_work_bomb_is_efbig_with_the_limit_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version) as fs:
        # White space only, 2**40 times: little output, the work limit stops it.
        fh = await fs.open("Box/Plain.lsl", os.O_WRONLY | os.O_TRUNC)
        await fs.ops.write(fh, 0, ("#define E\n" + _bomb(levels=40, leaf="E")).encode())
        with trio.fail_after(25):
            assert await fails(fs.ops.flush(fh)) == errno.EFBIG
        await fs.ops.release(fh)
        diag = (await fs.read_file("Box/.slfs/Plain.lsl.diag")).decode()
        assert "work limit" in diag
        assert trio.to_thread.current_default_thread_limiter().borrowed_tokens == 0


async def test_the_in_world_text_names_no_local_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     viewer_version: int) -> None:
    include_dir = tmp_path / "include"
    include_dir.mkdir()
    (include_dir / "where.lsl").write_text('string INC = __FILE__;\n')
    opts = Options(delete_grace=0.2, include=(str(include_dir),))
    async with fs_against_sim(tmp_path, monkeypatch, sources_world(), viewer_version=viewer_version,
                              options=opts) as fs:
        source = '#include <where.lsl>\n#include "lib.lsl"\nstring MAIN = __FILE__;\n' + PLAIN_TEXT
        await fs.write_file("Box/Plain.lsl", source.encode())
        [stored] = saves(fs, PLAIN)
        got = envelope.unwrap(stored)
        assert got is not None
        assert 'string INC = "where.lsl";' in got.expansion
        assert 'string MAIN = "Box/Plain.lsl";' in got.expansion
        for local in (str(tmp_path), "/root", "/home", "/tmp"):
            assert local not in stored
        # Luau: the bundle's line markers name the modules as the mount does.
        await fs.write_file("Box/Tool.luau", b'local h = require("helper")\nprint(h.n)\n')
        [luau] = saves(fs, TOOL)
        assert '-- @line 1 "Box/helper.luau"' in luau and '"Box/Tool.luau"' in luau
        for local in (str(tmp_path), "/root", "/home", "/tmp"):
            assert local not in luau
