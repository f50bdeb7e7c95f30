"""The viewer generation a session looks like (world/generations.py, after viewer-source.md §1)."""

from __future__ import annotations

from slfs.world.generations import features_shown, generation_of

FIVE = dict.fromkeys(("live_sync", "compilation", "syntax_cache", "commands", "unified_diagnostics"), True)


def test_the_generations_by_their_handshake_features() -> None:
    assert generation_of({"live_sync": True, "compilation": True}, lists_objects=False).startswith("G0/G1")
    assert generation_of({**dict.fromkeys(("live_sync", "compilation", "syntax_cache"), True)},
                         lists_objects=True).startswith("G0/G1")
    assert generation_of(FIVE, lists_objects=True).startswith("G2-G4")
    assert generation_of({**FIVE, "commands": "yes"}, lists_objects=True).startswith("G0/G1")  # not a bool
    assert generation_of(FIVE, lists_objects=False).startswith("G0/G1")  # no object.list: G1's explorer


def test_features_are_shown_in_order_and_unknown_ones_only_counted() -> None:
    assert features_shown(FIVE) == "live_sync, compilation, syntax_cache, commands, unified_diagnostics"
    assert features_shown({}) == "none"
    hostile = {"compilation": True, "\x1b]0;owned\x07": True, "x" * 10_000: True, "live_sync": False}
    assert features_shown(hostile) == "compilation (+2 unknown)"
