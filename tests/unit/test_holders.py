"""Finding the processes that hold a mount busy (slfs/holders.py), on real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from slfs.holders import Holder, command_of, mount_holders


def test_a_working_directory_an_open_file_and_nothing(tmp_path: Path) -> None:
    inside = tmp_path / "mnt"
    (inside / "sub").mkdir(parents=True)
    (inside / "f.txt").write_text("x")
    (tmp_path / "mnt2").mkdir()  # a sibling whose name starts like the mountpoint is not in it
    procs = [
        subprocess.Popen(["sleep", "60"], cwd=inside / "sub"),
        subprocess.Popen([sys.executable, "-c", "import sys,time; f=open(sys.argv[1]); time.sleep(60)",
                          str(inside / "f.txt")]),
        subprocess.Popen(["sleep", "61"], cwd=tmp_path / "mnt2"),
    ]
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the python one has opened its file
            found = mount_holders(str(inside))
            if len(found) == 2:
                break
            time.sleep(0.02)
        assert [h.pid for h in found] == sorted(p.pid for p in procs[:2])
        assert found[0 if procs[0].pid < procs[1].pid else 1] == Holder(procs[0].pid, "sleep 60")
        assert mount_holders(str(inside), exclude=frozenset({procs[0].pid})) == [
            h for h in found if h.pid != procs[0].pid]
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert mount_holders(str(inside)) == []


def test_command_of_is_bounded_and_printable() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "\x1b[31mred\n" + "y" * 300])
    try:
        deadline = time.monotonic() + 10
        while "sleep" not in command_of(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        text = command_of(proc.pid)
        assert text.isprintable() and "\x1b" not in text and len(text) <= 120 and text.endswith("...")
    finally:
        proc.kill()
        proc.wait()
    assert command_of(2**22 + 12345) == "?"
    assert str(Holder(7, "vim a.lsl")) == "7 (vim a.lsl)"
    assert os.getpid() not in [h.pid for h in mount_holders("/nonexistent-mount")]
