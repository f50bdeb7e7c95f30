"""Constants of the viewer's world that every layer (and the simulator) names: one copy each.

This module imports nothing beyond `re`, so a CLI verb pays nothing for it.
"""

from __future__ import annotations

import re

# The viewer's default JSON-RPC port (viewer-external-editor-json-rpc.md, "Connection").
DEFAULT_PORT = 9020

# The null key: an inventory script's prim in live sync, an absent owner, a placeholder item.
NULL_UUID = "00000000-0000-0000-0000-000000000000"

# viewer.script.recompile_all's `target` values (newer-viewers.md, "Viewer commands").
RECOMPILE_TARGETS = ("luau", "lsl2", "mono", "auto")

# How the viewer names a live-synced script's temp file (llpreviewscript.cpp; live-sync.md):
# `sl_script_<name>_<id>.<ext>`, and `sl_script_<id>.<ext>` when the named file cannot be written.
# The id is the MD5 of `<prim uuid>_<item uuid>` (32 hex digits); forks that name it by the item's
# UUID write the 36-character form. Both forms are accepted by both patterns, in any case.
_TEMP_ID = r"[0-9a-fA-F]{32}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
TEMP_NAME = re.compile(rf"^sl_script_(.+)_({_TEMP_ID})\.(luau|lsl)$")
TEMP_NAME_BARE = re.compile(rf"^sl_script_({_TEMP_ID})\.(luau|lsl)$")


def parse_temp_name(base: str) -> tuple[str | None, str, str] | None:
    """(script name, or None for the bare fallback name; id in lower case; extension) of a viewer
    temp file's base name; None when it is not one."""
    m = TEMP_NAME_BARE.match(base)
    if m is not None:
        return None, m.group(1).lower(), m.group(2)
    m = TEMP_NAME.match(base)
    if m is not None:
        return m.group(1), m.group(2).lower(), m.group(3)
    return None
