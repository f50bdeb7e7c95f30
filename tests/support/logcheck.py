"""Every end-to-end daemon's log is checked when its test ends (S3QL's `pytest_checklogs.py`): a
WARNING, ERROR or CRITICAL record, or a traceback, that the test did not declare fails the test.

A test declares what it expects with a mark (regexes searched in "LEVEL logger: message"):

    @pytest.mark.allow_log(r"WARNING slfs\\.session\\.session: viewer sent .* unknown")

A module may set it for all its tests with `pytestmark`. `ALWAYS` lists what any test may log,
each with the reason it is not a fault of slfs or the test.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

import pytest

# A record starts with the time (slfs/cli/__init__.py: "%(asctime)s %(levelname)s %(name)s: %(message)s").
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<rest>(?P<level>[A-Z]+) .*)$")
CHECKED = {"WARNING", "ERROR", "CRITICAL"}

ALWAYS: tuple[tuple[str, str], ...] = (
    # G1 has no object.list (viewer-source.md §2): every G1 mount says so once, as it should.
    (r"^WARNING slfs\.session\.session: viewer has no object\.list", "a G1 viewer, by design"),
)


def allowed_patterns(node: pytest.Item) -> list[re.Pattern[str]]:
    patterns = [re.compile(p) for p, _why in ALWAYS]
    for mark in node.iter_markers("allow_log"):
        patterns += [re.compile(p) for p in mark.args]
    return patterns


def unexpected(text: str, allowed: Iterable[re.Pattern[str]], allow_traceback: bool = False) -> list[str]:
    """The records of `text` at WARNING or above (and tracebacks) that no pattern allows."""
    allowed = list(allowed)
    out: list[str] = []
    record: str | None = None  # the first line of the current record, if it is checked
    for line in text.splitlines():
        m = RECORD.match(line)
        if m is not None:
            record = m["rest"] if m["level"] in CHECKED else None
            if record is not None and not any(p.search(record) for p in allowed):
                out.append(record)
            continue
        if line.startswith("Traceback") and not (
                allow_traceback or (record is not None and any(p.search(record) for p in allowed))):
            out.append(f"traceback after: {record or '(a record below WARNING, or none)'}")
    return out


def check(text: str, node: pytest.Item, what: str, allow_traceback: bool = False) -> list[str]:
    """Problems to fail the test with: one line per unexpected record, then the whole log."""
    bad = unexpected(text, allowed_patterns(node), allow_traceback)
    if not bad:
        return []
    listed = "\n".join(f"  {b}" for b in bad)
    return [f"{what} logged what the test did not declare (@pytest.mark.allow_log):\n{listed}\n--- log ---\n{text}"]


def report(text: str, node: pytest.Item, what: str, allow_traceback: bool = False) -> list[str]:
    """check(), or with `$SLFS_TEST_LOG_REPORT` set, append the unexpected records to that file (one
    `nodeid<TAB>record` line each) and fail nothing: to survey a whole run's logs at once."""
    survey = os.environ.get("SLFS_TEST_LOG_REPORT")
    if not survey:
        return check(text, node, what, allow_traceback)
    bad = unexpected(text, allowed_patterns(node), allow_traceback)
    if bad:
        with open(survey, "a", encoding="utf-8") as f:
            f.writelines(f"{node.nodeid}\t{b}\n" for b in bad)
    return []
