"""The status as `key: value` lines, as `.slfs/status` shows it and `slfs status` prints it. Most
values are one line; `unsent` (model/unsent.py) is a list, one line per file (`unsent: none` when
there is none), so `grep '^unsent:'` lists them."""

from __future__ import annotations

from typing import Any


def describe_unsent(entry: dict[str, Any]) -> str:
    """One file whose text is not in-world: its state, path, errno, recovery copy and reason."""
    line = f"{entry.get('state')} {entry.get('path')}"
    if entry.get("code"):
        line += f" ({entry['code']})"
    if entry.get("recovery"):
        line += f", copy {entry['recovery']}"
    if entry.get("inworld_changed"):
        line += ", changed in-world since"
    return line + (f": {entry['reason']}" if entry.get("reason") else "")


def status_values(key: str, value: Any) -> list[str]:
    """The values of the lines `key` has: one, or one per file of a list."""
    if isinstance(value, list):
        return [describe_unsent(v) if isinstance(v, dict) else str(v) for v in value] or ["none"]
    return [str(value)]
