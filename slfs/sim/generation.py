"""Which viewer the sim plays: the behaviour switches of each protocol document and viewer generation.

`profile_for(viewer_version, generation)` gives the frozen `Generation` profile the mixins consult
(`sim.profile`), so that a generation's behaviour reads as a set of named switches rather than
`if generation == "G1"` checks spread through the code.

* `"V1"` / `"V2"` (no generation): what the sim did before generations existed, following the older
  protocol document (V1) and the newer one plus `newer-viewers.md` (V2). Unchanged, as other tests
  (tests/e2e, tests/session) rely on them.
* `"G1"`-`"G4"`: the four generations of the viewer's shipped C++ that research
  `viewer-source.md` describes. G1-G3 build on V1, G4 on V2 (it "matches the newer doc",
  viewer-source.md §1); each switch below says where its value comes from (§n = that page's section).
"""

from __future__ import annotations

import attrs

GENERATIONS = ("G1", "G2", "G3", "G4")

# viewer-source.md §1: every generation's handshake `features`, the complete set.
FEATURES_G1 = ("live_sync", "compilation", "syntax_cache")  # syntax_cache since 84e806f7 (the explorer era)
FEATURES_ALL = ("live_sync", "compilation", "syntax_cache", "commands", "unified_diagnostics")

# viewer-source.md §2 "Dispatch": the methods each generation handles synchronously; any other
# method sent as a notification gets -32600 "Method X cannot be called as a notification".
SYNC_G1 = frozenset(
    {
        "language.syntax.id",
        "language.syntax",
        "language.syntax.cache",
        "language.syntax.get",
        "script.subscribe",
        "script.unsubscribe",
        "script.list",
        "object.unpublish",
        "object.item.delete",
    }
)
SYNC_G2 = frozenset(
    {
        "language.syntax.id",
        "language.syntax",
        "language.syntax.cache",
        "language.syntax.get",
        "script.list",
        "command.list",
    }
)
SYNC_G3 = frozenset({"command.list"})
SYNC_G4: frozenset[str] = frozenset()
# V1/V2 (the documents): only these are asynchronous.
DOC_ASYNC_METHODS = frozenset({"object.content.get", "object.content.save", "object.item.create"})
# viewer-source.md §2: methods G1 does not have (the JSON-RPC layer answers -32601).
G1_MISSING_METHODS = frozenset(
    {"command.list", "command.execute", "object.list", "object.script.set_running", "object.script.reset"}
)


@attrs.frozen
class Generation:
    """The behaviour switches of one viewer. `name`: "V1", "V2" or "G1".."G4"."""

    name: str
    # --- handshake (viewer-source.md §2 session.handshake, §6) ---
    features: tuple[str, ...] = FEATURES_ALL
    agent_in_handshake: bool = True  # agent_id / agent_name in session.handshake
    agent_in_session_ok: bool = False  # {agent_id, agent_name} as session.ok params
    # None: wait for the handshake answer for ever (G1/G2, "handshake 30 s (G3/G4; none before)", §5);
    # "default": the handshake_timeout argument (30 s unless given)
    handshake_timeout: str | None = "default"
    # "mkstemp": sl_script_challenge_<random>.tmp, 0600 (V1/V2, viewer-behaviour.md);
    # "fixed": sl_script_challenge.tmp, default permissions (G1); "secret": sl_script_challenge_<secret>.tmp,
    # default permissions (G2); "uuid": sl_script_challenge_<another uuid>.tmp, exclusive, 0600 (G3/G4)
    challenge_naming: str = "mkstemp"
    # challenge file deleted whatever happens (True) or only when a result answer arrives (G1/G2: §6
    # "deleted when the answer (or error/timeout, G3+) arrives")
    challenge_always_deleted: bool = True
    # an error answer to session.handshake: {2, "Handshake failed"} (True) or treated as a wrong answer
    handshake_failed_on_error: bool = False
    # challenge file cannot be written: "refuse" = {4, "Unable to issue a challenge"} (G3/G4),
    # "open" = no challenge sent, any answer accepted (G2; G1 assumed alike), "raise" = V1/V2 (none said)
    unwritable_challenge: str = "raise"
    # --- JSON-RPC layer (§2, §5) ---
    auth_gate: bool = True  # -32002 before session.ok, broadcasts only to authenticated connections
    batches: str = "refuse"  # "refuse" (-32600) or "each" (G1: every element on its own, §5)
    # methods that may be sent as notifications; None: V1/V2 (the documents' DOC_ASYNC_METHODS rule)
    sync_methods: frozenset[str] | None = None
    async_notification: str = "answer"  # V1 / G*: -32600 with id null; "drop": V2 (neither run nor answered)
    internal_error_detail: bool = True  # "Internal error: <exception>" (G1/G2) or bare "Internal error" (G3, §3)
    missing_methods: frozenset[str] = frozenset()
    # --- object explorer (§2) ---
    revision: bool = False  # items carry `revision` (G4 / V2)
    content_encoding: bool = False  # content.get adds encoding "utf-8" (G2+ / V2)
    notecard_read_needs_copy_modify: bool = False  # G1
    empty_content_rejected: bool = False  # G1-G3: -32602 "content is required" for "" first
    save_running: str = "keep"  # "keep" (G2+) or "stop" (G1: uploaded with running false unless given)
    failed_save_shape: str = "diagnostics"  # "errors" (G1: raw compiler lines) or "diagnostics"
    # "doc": the compiler's diagnostics as is (V1/V2); "parsed": converted from the raw lines by
    # the §3 rules (G2-G4: an unparsed line has no `format` in content.save)
    save_diagnostics: str = "doc"
    deferred_properties: bool = False  # placeholders until the properties arrive (V2, G2-G4)
    name_fallback: str = "placeholder"  # unknown name: "placeholder" ("Object"/"Link #n": V2, G3) or "uuid" (G2/G4)
    suppress_identical_inventory: bool = False  # G4 / V2
    newer_doc_errors: bool = False  # V2/G4: -32005, vm check, notecard cap and embedded items
    # --- live sync (§3) ---
    compiled_shape: str = "diagnostics"  # "errors" (G1) or "diagnostics" (only when errors exist)
    compiled_diagnostics_always: bool = False  # G4: `diagnostics` on success too (empty)
    compiled_ids_and_broadcast: bool = False  # V2/G4: object_id/prim_id/item_id, broadcast if nobody holds it
    editor_closed_disconnect: bool = True  # V1/G1: session.disconnect {1, "Editor closed"}
    # --- runtime output (§4) ---
    # "doc" (V1/V2 as before), "g1" (to the prim's live-sync subscriber only), "workspace"
    # (G2/G4 Alchemy), "aggregator" (G3 LL: plain lines carry no script)
    runtime_shape: str = "doc"
    # --- commands (§5) ---
    has_commands: bool = True
    command_answers: str = "doc"  # "doc" (V1/V2 as before) or "source" (G2+, §5)
    teleport_needs_published: bool = False  # V2/G4

    @property
    def is_generation(self) -> bool:
        return self.name in GENERATIONS


V1 = Generation(name="V1", async_notification="answer")
V2 = Generation(
    name="V2",
    agent_in_handshake=False,
    agent_in_session_ok=True,
    handshake_failed_on_error=True,
    async_notification="drop",
    revision=True,
    content_encoding=True,
    deferred_properties=True,
    suppress_identical_inventory=True,
    newer_doc_errors=True,
    compiled_ids_and_broadcast=True,
    editor_closed_disconnect=False,
    teleport_needs_published=True,
)

G1 = attrs.evolve(
    V1,
    name="G1",
    features=FEATURES_G1,
    handshake_timeout=None,
    challenge_naming="fixed",
    challenge_always_deleted=False,
    unwritable_challenge="open",
    auth_gate=False,
    batches="each",
    sync_methods=SYNC_G1,
    missing_methods=G1_MISSING_METHODS,
    notecard_read_needs_copy_modify=True,
    empty_content_rejected=True,
    save_running="stop",
    failed_save_shape="errors",
    compiled_shape="errors",
    runtime_shape="g1",
    has_commands=False,
)
G2 = attrs.evolve(
    V1,
    name="G2",
    handshake_timeout=None,
    challenge_naming="secret",
    challenge_always_deleted=False,
    unwritable_challenge="open",
    auth_gate=False,
    sync_methods=SYNC_G2,
    content_encoding=True,
    empty_content_rejected=True,
    save_diagnostics="parsed",
    deferred_properties=True,
    name_fallback="uuid",
    editor_closed_disconnect=False,
    runtime_shape="workspace",
    command_answers="source",
)
G3 = attrs.evolve(
    G2,
    name="G3",
    handshake_timeout="default",
    challenge_naming="uuid",
    challenge_always_deleted=True,
    handshake_failed_on_error=True,
    unwritable_challenge="refuse",
    auth_gate=True,
    sync_methods=SYNC_G3,
    internal_error_detail=False,
    name_fallback="placeholder",
    runtime_shape="aggregator",
)
G4 = attrs.evolve(
    V2,
    name="G4",
    challenge_naming="uuid",
    unwritable_challenge="refuse",
    sync_methods=SYNC_G4,
    async_notification="answer",
    save_diagnostics="parsed",
    name_fallback="uuid",
    compiled_diagnostics_always=True,
    runtime_shape="workspace",
    command_answers="source",
)

PROFILES = {"V1": V1, "V2": V2, "G1": G1, "G2": G2, "G3": G3, "G4": G4}


def profile_for(viewer_version: int, generation: str | None) -> Generation:
    """The profile of a viewer_version (1 or 2) and an optional generation ("G1".."G4")."""
    if generation is None:
        return V2 if viewer_version >= 2 else V1
    if generation not in GENERATIONS:
        raise ValueError("generation must be None, 'G1', 'G2', 'G3' or 'G4'")
    return PROFILES[generation]
