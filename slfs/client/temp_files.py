"""Live sync seen from the client: which of the viewer's temp files a launch URI's `script=` means."""

from __future__ import annotations

import hashlib
import os

from ..protocol import constants
from ..protocol.constants import NULL_UUID


def find_temp_file(temp_dir: str, script_id: str) -> str | None:
    """The viewer's temp file of `script_id` in `temp_dir` (sl_script_*_ID.lsl|.luau or
    sl_script_ID.lsl|.luau, the ID compared in any case), the newest when several; else None."""
    want = script_id.lower()
    hits: list[tuple[float, str]] = []
    try:
        names = os.listdir(temp_dir)
    except OSError:
        return None
    for name in names:
        parsed = constants.parse_temp_name(name)
        if parsed is None or parsed[1] != want:
            continue
        path = os.path.join(temp_dir, name)
        try:
            hits.append((os.stat(path).st_mtime, path))
        except OSError:
            continue
    return max(hits)[1] if hits else None


def live_ids(script: str, object_id: str | None) -> list[str]:
    """The script_ids a launch URI's `script=` may mean: the value itself, and, for an item UUID,
    the MD5 of `<prim uuid>_<item uuid>` the viewer names its temp file by (the null prim for an
    inventory script)."""
    script = script.lower()
    if len(script) != 36:
        return [script]
    prims = [object_id.lower()] if object_id else []
    return [script, *(hashlib.md5(f"{prim}_{script}".encode()).hexdigest() for prim in [*prims, NULL_UUID])]
