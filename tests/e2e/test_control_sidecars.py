"""Control surface, end to end: the per-file sidecars (.diag, .state, .log), the root diagnostics
(as vim's quickfix reads them), the events file under `tail -f`, and the syntax files."""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess

import pytest
import trio
from support.mount import Mount, require_tool
from support.texts import BAD_LSL, BAD_LUAU, GOOD_LSL, QF_LINE

from slfs.sim import syntax as sim_syntax

# G1 differs in ways tests/e2e/test_viewer_generations.py covers (no object.list, set_running or
# commands; notecards need copy+modify; runtime output only for live-sync subscribers).
pytestmark = pytest.mark.generations("G2", "G3", "G4")

CUBE = "Hello Cube"



def write_errno(path: str, data: bytes) -> int:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
    except OSError as exc:
        return exc.errno or 0
    finally:
        os.close(fd)
    return 0


def side(m: Mount, name: str, suffix: str) -> str:
    return str(m.path(CUBE, ".slfs", f"{name}.{suffix}"))


async def read(m: Mount, path: str) -> str:
    return (await m.run("cat", path)).stdout.decode()


async def save(m: Mount, name: str, text: str) -> None:
    """Save like a shell does; the save (and so the compile) is done when the write's close returns."""
    await m.run("sh", "-c", 'printf %s "$1" > "$2"', "sh", text, str(m.path(CUBE, name)))


async def wait_text(m: Mount, path: str, pred: object, what: str, timeout: float = 10.0) -> str:
    assert callable(pred)
    last = ""

    async def ok() -> bool:
        nonlocal last
        last = await read(m, path)
        return bool(pred(last))

    try:
        await m.wait_for(ok, timeout, what)
    except AssertionError:
        raise AssertionError(f"{what}; last content of {path}: {last!r}") from None
    return last


async def test_diag_sidecar_lifecycle(mounted: Mount) -> None:
    m = mounted
    diag = side(m, "Hello.lsl", "diag")
    # present and empty before the first compile
    assert (await m.out("stat", "-c", "%F", diag)).strip() in ("regular file", "regular empty file")
    assert await read(m, diag) == ""
    # a failing save: one quickfix line per diagnostic, with the absolute path of the file
    await save(m, "Hello.lsl", BAD_LSL)
    text = await wait_text(m, diag, lambda t: t.strip() != "", "diagnostics after a failing save")
    lines = text.splitlines()
    assert lines, text
    for line in lines:
        mt = QF_LINE.match(line)
        assert mt, line
        assert mt.group(1) == str(m.path(CUBE, "Hello.lsl"))
        assert mt.group(4) == "error"
    assert text.endswith("\n")
    assert "previously compiled" not in text  # said by the event and `slfs diag`, not here
    # a good save empties it again
    await save(m, "Hello.lsl", GOOD_LSL % "fixed")
    await wait_text(m, diag, lambda t: t == "", "empty diagnostics after a good save")
    # notecards have a .diag too (always empty), but no .state or .log
    assert await read(m, str(m.path(CUBE, ".slfs", "Notes\u2215Todo.diag"))) == ""
    res = await m.run("cat", str(m.path(CUBE, ".slfs", "Notes\u2215Todo.state")), check=False)
    assert res.returncode != 0


async def test_diag_luau_failing_save(mounted: Mount) -> None:
    m = mounted
    await save(m, "Counter.luau", BAD_LUAU)
    text = await wait_text(m, side(m, "Counter.luau", "diag"), lambda t: t.strip() != "", "luau diagnostics")
    mt = QF_LINE.match(text.splitlines()[0])
    assert mt and mt.group(1) == str(m.path(CUBE, "Counter.luau")) and mt.group(4) == "error", text


@pytest.mark.allow_log(r"WARNING slfs\.fs\.guarded: write: .*\.state: write run, stop or reset")
async def test_state_sidecar(mounted: Mount) -> None:
    m = mounted
    assert m.sim is not None
    state = side(m, "Hello.lsl", "state")
    assert await read(m, state) == "running\n"
    assert await read(m, side(m, "Faulty.lsl", "state")) == "stopped\n"
    await m.sh(f"echo stop > '{state}'")
    await wait_text(m, state, lambda t: t == "stopped\n", "stopped after echo stop")
    await m.sh(f"printf '  run \\n\\n' > '{state}'")  # surrounding whitespace is ignored
    await wait_text(m, state, lambda t: t == "running\n", "running after run")
    await m.sh(f"echo reset > '{state}'")
    assert await read(m, state) == "running\n"
    # any other word: EINVAL at write(), where the shell sees it (dash's echo says only "I/O error"
    # whatever the errno, so ask bash, and look at the errno itself)
    res = await m.run("bash", "-c", f"echo bogus > '{state}'", check=False)
    assert res.returncode != 0 and b"Invalid argument" in res.stderr, res
    assert await m.thread(write_errno, state, b"bogus\n") == errno.EINVAL
    assert await m.thread(write_errno, state, b"running\n") == errno.EINVAL  # what it reads is no command
    assert await read(m, state) == "running\n"
    # a script that hits a run-time error reads faulted, once the viewer says so
    faulty = side(m, "Faulty.lsl", "state")
    await m.sh(f"echo run > '{faulty}'")
    await wait_text(m, faulty, lambda t: t == "running\n", "Faulty running")
    await m.sh(f"echo reset > '{faulty}'")  # the sim runs it again: it hits its SIM_RUNTIME_ERROR line
    await wait_text(m, faulty, lambda t: t == "faulted\n", "faulted after a run-time error")


async def test_log_sidecar(mounted: Mount) -> None:
    m = mounted
    # G3 names no script for a plain line (viewer-source.md §4): its object's log holds it.
    log = str(m.path(CUBE, ".slfs", "log")) if m.generation == "G3" else side(m, "Hello.lsl", "log")
    before = await read(m, log)
    await save(m, "Hello.lsl", GOOD_LSL % "log-marker-1")
    text = await wait_text(m, log, lambda t: "log-marker-1" in t, "runtime.debug line in the log")
    line = next(ln for ln in text.splitlines() if "log-marker-1" in ln)
    assert re.search(r"(^|: )\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", line), line  # timestamped
    assert text.startswith(before)
    # a run-time error: its line number and text
    erring = ('default\n{\n    state_entry()\n    {\n        llOwnerSay("before-error");\n'
              '        integer x = 1 / 0; // SIM_RUNTIME_ERROR("Stack-Heap Collision")\n    }\n}\n')
    await save(m, "Hello.lsl", erring)
    text = await wait_text(m, log, lambda t: "Stack-Heap Collision" in t, "runtime.error line in the log")
    err = next(ln for ln in text.splitlines() if "Stack-Heap Collision" in ln)
    assert "error" in err and "line 6" in err, err
    assert "before-error" in text


@pytest.mark.own_mount("reads the mount's whole diagnostics file, which other tests' compiles add to")
async def test_root_diagnostics_as_vim_quickfix(mounted: Mount, tmp_path: object) -> None:
    m = mounted
    require_tool("vim")
    root = str(m.path(".slfs", "diagnostics"))
    assert await read(m, root) == ""  # the sample's Broken.lsl was never compiled in this session
    await save(m, "Hello.lsl", BAD_LSL)
    await save(m, "Counter.luau", BAD_LUAU)
    text = await wait_text(m, root, lambda t: len(t.splitlines()) >= 2, "two files in the root diagnostics")
    files = {QF_LINE.match(ln).group(1) for ln in text.splitlines()}  # type: ignore[union-attr]
    assert files == {str(m.path(CUBE, "Hello.lsl")), str(m.path(CUBE, "Counter.luau"))}
    # vim's own quickfix parser: every line is a valid entry pointing at the file
    out = f"{tmp_path}/qf.json"
    await m.run("vim", "-u", "NONE", "-i", "NONE", "-N", "-es", "-q", root,
                "-c", f"call writefile([json_encode(map(getqflist(), "
                      f"{{_, e -> [bufname(e.bufnr), e.lnum, e.col, e.valid, e.text]}}))], '{out}')",
                "-c", "qa!", timeout=30)
    with open(out) as f:
        entries = json.load(f)
    assert len(entries) == len(text.splitlines())
    for (name, lnum, col, valid, msg), line in zip(entries, text.splitlines(), strict=True):
        mt = QF_LINE.match(line)
        assert mt is not None
        assert valid == 1 and name == mt.group(1) and lnum == int(mt.group(2)) and col == int(mt.group(3)), entries
        assert mt.group(5) in msg
    # fixing one leaves only the other's
    await save(m, "Hello.lsl", GOOD_LSL % "ok")
    text = await wait_text(m, root, lambda t: "Hello.lsl" not in t, "Hello.lsl gone from the diagnostics")
    assert text and all("Counter.luau" in ln for ln in text.splitlines())


async def test_events_under_tail_f(mounted: Mount) -> None:
    m = mounted
    events = str(m.path(".slfs", "events"))
    first = [json.loads(ln) for ln in (await read(m, events)).splitlines()]
    assert first and first[0]["type"] == "connected"
    proc = await trio.lowlevel.open_process(["tail", "-n", "+1", "-f", events], stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    seen: list[dict[str, object]] = []
    buf = b""

    async def until(pred: object, timeout: float) -> None:
        nonlocal buf
        assert callable(pred)
        with trio.fail_after(timeout):
            while not any(pred(e) for e in seen):
                chunk = await proc.stdout.receive_some(65536)  # type: ignore[union-attr]
                assert chunk, "tail exited"
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    seen.append(json.loads(line))

    try:
        await until(lambda e: e["type"] == "connected", 10)
        # new events appear in the running tail: a state change and the script's output
        await m.sh(f"echo reset > '{side(m, 'Hello.lsl', 'state')}'")
        await until(lambda e: e["type"] == "runtime.debug" and e.get("message") == "Hello from the cube!", 10)
        # `tail -n +1` shows the kept events too: on a shared mount, earlier tests' compiles.
        before_save = int(seen[-1]["seq"])  # type: ignore[call-overload]
        await save(m, "Hello.lsl", BAD_LSL)

        def failed_compile(e: dict[str, object]) -> bool:
            return e["type"] == "compile" and e.get("compiled") is False and int(e["seq"]) > before_save  # type: ignore[call-overload]
        await until(failed_compile, 10)
        compile_event = next(e for e in seen if failed_compile(e))
        assert "previously compiled version keeps running" in str(compile_event.get("note"))
        seqs = [int(e["seq"]) for e in seen]  # type: ignore[call-overload]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    finally:
        proc.kill()
        with trio.move_on_after(5):
            await proc.wait()


async def test_syntax_dir_lists_the_viewers_files(mounted: Mount) -> None:
    m = mounted

    async def listed() -> bool:
        names = (await m.out("ls", m.path(".slfs", "syntax"))).split("\n")
        return sorted(n for n in names if n) == sorted(sim_syntax.CACHE_FILES)

    # The files are fetched in the background once the session is up.
    await m.wait_for(listed, 5, "the viewer's syntax files listed")
    for name, text in sim_syntax.CACHE_FILES.items():
        got = await read(m, str(m.path(".slfs", "syntax", name)))
        assert got == text, name
