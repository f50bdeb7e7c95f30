"""The suite's file order (tests/support/order.py SLOWEST_FILES) names files that exist: a renamed file
would otherwise lose its place silently and end the run on one worker again."""

from __future__ import annotations

from pathlib import Path

from support.order import SLOWEST_FILES


def test_the_slowest_files_exist() -> None:
    tests_dir = Path(__file__).resolve().parents[1]
    missing = [name for name in SLOWEST_FILES if not (tests_dir / name).is_file()]
    assert missing == []
    assert len(set(SLOWEST_FILES)) == len(SLOWEST_FILES)
