"""A save goes down the layers: following the call chain of one script save (open, write, release,
the viewer's answer), no slfs module is entered again, after the chain left it for another, more
than twice. Measured from the frames themselves (sys.setprofile), so a callback hidden behind a
function passed down counts like a direct call."""

from __future__ import annotations

import collections
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from support.inproc import fs_against_sim
from support.writes import MAIN, MAIN_TEXT, write_world

MAX_RETURNS = 2


def chain_of(frame: FrameType | None) -> list[str]:
    """The slfs modules of the call chain ending at `frame` (outermost first), runs of one module
    counted once. The simulator is the viewer, not slfs: it ends the chain like the network does."""
    out: list[str] = []
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        ours = module.startswith("slfs.") and not module.startswith("slfs.sim")
        if ours and (not out or out[-1] != module):
            out.append(module)
        frame = frame.f_back
    return out[::-1]


def returns_in(chain: list[str]) -> dict[str, int]:
    """How often each module is entered again after the chain left it."""
    seen = collections.Counter(chain)
    return {module: n - 1 for module, n in seen.items() if n > 1}


class ChainRecorder:
    def __init__(self) -> None:
        self.worst: dict[str, tuple[int, list[str]]] = {}
        self.calls = 0
        # (caller's module, callee's module) -> calls: how often the save hands over and back
        self.edges: collections.Counter[tuple[str, str]] = collections.Counter()

    def __call__(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call" or not frame.f_globals.get("__name__", "").startswith("slfs."):
            return
        self.calls += 1
        chain = chain_of(frame)
        if len(chain) >= 2:
            self.edges[(chain[-2], chain[-1])] += 1
        for module, n in returns_in(chain).items():
            if n > self.worst.get(module, (0, []))[0]:
                self.worst[module] = (n, chain)


def test_returns_in_counts_reentry() -> None:
    assert returns_in(["a", "b", "c"]) == {}
    assert returns_in(["fs.ops", "model.writes", "model.save", "model.workspace", "model.save",
                       "model.content", "model.save"]) == {"model.save": 2}


async def test_a_script_save_goes_down_the_layers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  viewer_version: int) -> None:
    async with fs_against_sim(tmp_path, monkeypatch, write_world(), viewer_version=viewer_version) as fs:
        await fs.read_file("Box/Main.lsl")  # the text is known: what is measured is the save
        recorder = ChainRecorder()
        sys.setprofile(recorder)
        try:
            await fs.write_file("Box/Main.lsl", MAIN_TEXT.replace("one", "saved").encode())
        finally:
            sys.setprofile(None)
        assert fs.sim.item(MAIN).content == MAIN_TEXT.replace("one", "saved")
        assert recorder.calls > 100  # the profile saw the save
        worst = {module: n for module, (n, _chain) in recorder.worst.items()}
        over = {module: " -> ".join(chain) for module, (n, chain) in recorder.worst.items() if n > MAX_RETURNS}
        print(f"{recorder.calls} calls; entered again: {worst}")
        for (caller, callee), n in sorted(recorder.edges.items(), key=lambda kv: -kv[1]):
            print(f"  {n:4d} {caller} -> {callee}")
        assert not over, over
