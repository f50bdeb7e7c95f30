"""Which generation of the viewer's code a session looks like, from what it told us.

viewer-source.md §1: G0/G1 announce `live_sync` and `compilation` (G1 later `syntax_cache` too) and
have neither `commands` nor `unified_diagnostics`; G2, G3 and G4 announce the same five features,
so they are told apart only by behaviour, which slfs never branches on. The answer is for people
and agents reading the status (what to expect of compile errors, commands, runtime output), never
for slfs's own decisions: those follow what each message holds.
"""

from __future__ import annotations

from collections.abc import Mapping

# The handshake features any generation sends (viewer-source.md §1: "the five above are the complete set").
KNOWN_FEATURES = ("live_sync", "compilation", "syntax_cache", "commands", "unified_diagnostics")


def features_shown(features: Mapping[str, object]) -> str:
    """The known features the viewer announced, in a fixed order; others counted, not named (they
    are the peer's text)."""
    on = [name for name in KNOWN_FEATURES if features.get(name) is True]
    unknown = sum(1 for name in features if name not in KNOWN_FEATURES)
    shown = ", ".join(on) or "none"
    return f"{shown} (+{unknown} unknown)" if unknown else shown


def generation_of(features: Mapping[str, object], *, lists_objects: bool) -> str:
    if features.get("commands") is not True or features.get("unified_diagnostics") is not True or not lists_objects:
        return "G0/G1 (no commands, raw compile errors; runtime output only for live-sync scripts)"
    return "G2-G4 (these announce the same features)"
