"""Payload types for every interface of the viewer's external-editor protocol.

Field names are the wire names. Decode with `codec.from_json(Type, data)`, encode with
`codec.to_json(obj)`. The `...Params` classes are the params of the requests slfs sends:
`ViewerSession.call(method, SomeParams(...))` encodes them. Fields the protocol document does not
show but newer ("V2") viewers send are declared where we use them (`revision`, `encoding`,
`embedded_items`, agent fields of session.ok); anything else unknown is kept in `extra`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

PERM_TRANSFER = 0x2000
PERM_MODIFY = 0x4000
PERM_COPY = 0x8000
PERM_MOVE = 0x80000
PERM_ALL = 0x7FFFFFFF

ItemType = Literal["script", "notecard"]
ScriptVM = Literal["lsl2", "mono", "luau"]
VMS: tuple[str, ...] = ("lsl2", "mono", "luau")
SUBTYPE_LSL = 0
SUBTYPE_LUAU = 1


def extra_field() -> Any:
    return attrs.field(factory=dict, kw_only=True, repr=False, eq=False)


NOTHING_DROPPED: frozenset[str] = frozenset()


def _dropped() -> Any:
    """`dropped`, declared by the records the model merges on update (items, prims, objects and
    their permissions): the names of the optional fields that were present on the wire with a
    value of an unexpected type, which the codec ignored (their raw values are in `extra`). Such a
    field holds its default like an absent one; the model tells the two apart with this, so an
    ignored field keeps the value known before while an absent one means what absence means."""
    return attrs.field(default=NOTHING_DROPPED, kw_only=True, repr=False, eq=False)


# --- session -------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SessionHandshake:
    server_version: str = "1.0.0"
    protocol_version: str = "1.0"
    viewer_name: str = ""
    viewer_version: str = ""
    agent_id: str | None = None  # V2 moves the agent fields to session.ok
    agent_name: str | None = None
    challenge: str | None = None
    languages: list[str] = attrs.field(factory=list)
    syntax_id: str | None = None
    features: dict[str, bool] = attrs.field(factory=dict)
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SessionHandshakeResponse:
    client_name: str
    client_version: str
    protocol_version: str
    languages: list[str]
    features: dict[str, bool]
    challenge_response: str | None = None
    script_name: str | None = None
    script_language: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SessionOk:
    """session.ok carries no params in V1; V2 sends the agent here."""

    agent_id: str | None = None
    agent_name: str | None = None
    extra: dict[str, Any] = extra_field()


DISCONNECT_NORMAL = 0
DISCONNECT_EDITOR_CLOSED = 1
DISCONNECT_PROTOCOL_ERROR = 2
DISCONNECT_TIMEOUT = 3
DISCONNECT_INTERNAL = 4


@attrs.frozen(kw_only=True)
class SessionDisconnect:
    reason: int
    message: str = ""
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SystemPing:
    timestamp: float | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SystemPingResponse:
    pong: str = "pong"
    timestamp: float | None = None
    server_time: float | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SystemVersionResponse:
    client_name: str
    client_version: str
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SystemStatusResponse:
    status: str = "OK"
    extra: dict[str, Any] = extra_field()


# --- language and syntax ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SyntaxChange:
    id: str
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SyntaxCacheList:
    files: list[str]
    success: bool = True
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SyntaxCacheGetParams:
    filename: str | None = None
    as_json: bool | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SyntaxCacheFile:
    content: Any  # a string, or an object when as_json was true
    success: bool = True
    extra: dict[str, Any] = extra_field()


# --- script subscription ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ScriptSubscribe:
    script_id: str
    script_name: str
    script_language: str
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ScriptSubscribeResponse:
    script_id: str
    success: bool
    status: int
    message: str
    object_id: str | None = None
    root_id: str | None = None
    item_id: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ScriptUnsubscribe:
    script_id: str
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ScriptList:
    temp_dir: str
    script_ids: list[str]
    success: bool = True
    extra: dict[str, Any] = extra_field()


# --- compilation and runtime ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Diagnostic:
    row: int
    column: int
    level: str
    message: str
    format: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class CompilationResult:
    script_id: str
    success: bool
    running: bool = False
    # The verdict's rows: `diagnostics` (G2-G4) or `errors` (G1), of any shape; read them with
    # protocol.compile_output.compile_rows, which never fails on them.
    diagnostics: Any = None
    errors: Any = None
    # Newer viewers: the script's place, when it is in an object (a save made in the viewer).
    object_id: str | None = None
    prim_id: str | None = None
    item_id: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ItemRef:
    root_id: str = ""
    prim_id: str = ""
    item_id: str = ""
    name: str = ""
    language: str = ""
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class RuntimeDebug:
    """runtime.debug. Every field is optional (viewer-source.md §4, §7.7): G1 names only
    `script_id`, the speaking prim as `object_id`, `object_name` and `message`; G3 sends the null
    UUID for a script it cannot name; G2/G4 send all of them."""

    object_id: str = ""
    prim_id: str = ""
    item_id: str = ""
    message: str = ""
    object_name: str = ""
    channel: str = "debug"
    script_id: str | None = None
    item: ItemRef | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class RuntimeError_:
    """runtime.error (named with a trailing underscore to keep clear of the builtin). Every field
    optional, as for RuntimeDebug; G1's `error` is always "", its `line` 0, and `stack` comes only
    when there is one."""

    object_id: str = ""
    prim_id: str = ""
    item_id: str = ""
    message: str = ""
    object_name: str = ""
    error: str = ""
    line: int = 0
    column: int = 0
    stack: list[str] = attrs.field(factory=list)
    channel: str = "debug"
    script_id: str | None = None
    item: ItemRef | None = None
    extra: dict[str, Any] = extra_field()


# --- object explorer: core data ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Permissions:
    """Items always carry both masks. A prim's `next_owner` is absent until the viewer has the
    prim's properties (newer viewers; a later object.update carries it): None then."""

    # Equal permissions in one payload decode to one object (codec._shared): frozen, so safe to share.
    SHARED_VALUES: ClassVar[bool] = True

    owner: int
    next_owner: int | None = None
    extra: dict[str, Any] = extra_field()
    dropped: frozenset[str] = _dropped()

    def merged(self, later: Permissions | None) -> Permissions:
        """These permissions with what a later update says: its fields win, absent ones stay."""
        if later is None:
            return self
        next_owner = later.next_owner if later.next_owner is not None else self.next_owner
        return Permissions(owner=later.owner, next_owner=next_owner)

    @property
    def can_modify(self) -> bool:
        return bool(self.owner & PERM_MODIFY)

    @property
    def can_copy(self) -> bool:
        return bool(self.owner & PERM_COPY)


@attrs.frozen(kw_only=True)
class InventoryItem:
    item_id: str
    name: str
    type: ItemType
    description: str | None = None
    subtype: int | None = None
    vm: ScriptVM | None = None
    running: bool | None = None
    faulted: bool | None = None
    permissions: Permissions | None = None
    creator_id: str | None = None
    revision: int | None = None  # V2: raised whenever the item's asset changes
    extra: dict[str, Any] = extra_field()
    dropped: frozenset[str] = _dropped()

    @property
    def is_script(self) -> bool:
        return self.type == "script"

    @property
    def is_luau(self) -> bool:
        return self.is_script and self.subtype == SUBTYPE_LUAU


@attrs.frozen(kw_only=True)
class LinkedObject:
    link_id: str
    link_number: int = 0
    link_name: str = ""
    link_description: str | None = None
    permissions: Permissions | None = None
    inventory: list[InventoryItem] = attrs.field(factory=list)
    extra: dict[str, Any] = extra_field()
    dropped: frozenset[str] = _dropped()


@attrs.frozen(kw_only=True)
class PublishedObject:
    object_id: str
    object_name: str = ""
    object_description: str | None = None
    region: str | None = None
    owner_id: str | None = None
    permissions: Permissions | None = None
    can_save_back: bool | None = None
    inventory: list[InventoryItem] = attrs.field(factory=list)
    linked_objects: list[LinkedObject] | None = None
    extra: dict[str, Any] = extra_field()
    dropped: frozenset[str] = _dropped()


@attrs.frozen(kw_only=True)
class ObjectPublish:
    object: PublishedObject
    extra: dict[str, Any] = extra_field()


UNPUBLISH_REASONS = ("manual", "republish", "user", "deleted", "linked")


@attrs.frozen(kw_only=True)
class ObjectUnpublish:
    object_id: str
    reason: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ObjectUnpublishParams:
    object_id: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class InventoryChanges:
    """Specified by the document but never emitted by the viewer; parsed, not relied on."""

    added: list[InventoryItem] | None = None
    removed: list[str] | None = None
    modified: list[InventoryItem] | None = None
    content_changed: list[str] | None = None
    running_changed: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class LinkedObjectModified:
    link_id: str
    link_name: str | None = None
    link_description: str | None = None
    permissions: Permissions | None = None  # child prim properties (newer viewers)
    inventory: list[InventoryItem] | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class LinkedObjectChanges:
    added: list[LinkedObject] | None = None
    removed: list[str] | None = None
    modified: list[LinkedObjectModified] | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ObjectChanges:
    inventory: InventoryChanges | None = None
    linked_objects: LinkedObjectChanges | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ObjectUpdate:
    object_id: str
    object_name: str | None = None
    object_description: str | None = None
    # Root prim properties that newer viewers send once the prim's properties arrive.
    owner_id: str | None = None
    permissions: Permissions | None = None
    can_save_back: bool | None = None
    inventory: list[InventoryItem] | None = None
    linked_objects: list[LinkedObject] | None = None
    changes: ObjectChanges | None = None
    extra: dict[str, Any] = extra_field()


# --- object explorer: calls -------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ItemAddress:
    """Params of content.get, item.delete and script.reset: prim_id + item_id."""

    prim_id: str | None = None
    item_id: str | None = None
    extra: dict[str, Any] = extra_field()


ContentGetParams = ItemAddress
ItemDeleteParams = ItemAddress
ScriptResetParams = ItemAddress


@attrs.frozen(kw_only=True)
class ContentGetResponse:
    content: str
    success: bool = True
    prim_id: str | None = None
    item_id: str | None = None
    encoding: str | None = None  # V2
    # Newer viewers: how many inventory items the notecard embeds beside its text (a count, not a
    # list; doc/external-editor-json-rpc.md in AlchemyViewer/Alchemy, ObjectContentGetResponse).
    embedded_items: int | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ContentSaveParams:
    prim_id: str | None = None
    item_id: str | None = None
    content: str | None = None
    vm: str | None = None
    running: bool | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ContentSaveResponse:
    success: bool = True
    prim_id: str | None = None
    item_id: str | None = None
    compiled: bool | None = None
    # A failed compile's rows: `diagnostics` (objects, G2-G4) or `errors` (the compiler's raw
    # lines, G1's explorer), of any shape; read them with protocol.compile_output.compile_rows.
    diagnostics: Any = None
    errors: Any = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ItemCreateParams:
    prim_id: str | None = None
    name: str | None = None
    type: str | None = None
    vm: str | None = None
    text: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ItemCreateResponse:
    item_id: str
    name: str
    type: ItemType
    prim_id: str | None = None
    description: str | None = None
    subtype: int | None = None
    vm: ScriptVM | None = None
    running: bool | None = None
    faulted: bool | None = None
    permissions: Permissions | None = None
    creator_id: str | None = None
    revision: int | None = None
    extra: dict[str, Any] = extra_field()

    def as_item(self) -> InventoryItem:
        return InventoryItem(
            item_id=self.item_id, name=self.name, type=self.type, description=self.description,
            subtype=self.subtype, vm=self.vm, running=self.running, faulted=self.faulted,
            permissions=self.permissions, creator_id=self.creator_id, revision=self.revision,
        )


@attrs.frozen(kw_only=True)
class SetRunningParams:
    prim_id: str | None = None
    item_id: str | None = None
    running: bool | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class SuccessResponse:
    """Results that carry only `success` (set_running, script.reset, object.request)."""

    success: bool = True
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ObjectRequestParams:
    object_id: str | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ObjectListResponse:
    objects: list[PublishedObject]
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class NextOwnerPermissions:
    next_owner: int | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ObjectModifyParams:
    prim_id: str | None = None
    name: str | None = None
    description: str | None = None
    permissions: NextOwnerPermissions | None = None
    extra: dict[str, Any] = extra_field()


@attrs.frozen(kw_only=True)
class ItemModifyParams:
    prim_id: str | None = None
    item_id: str | None = None
    name: str | None = None
    description: str | None = None
    permissions: NextOwnerPermissions | None = None
    extra: dict[str, Any] = extra_field()
