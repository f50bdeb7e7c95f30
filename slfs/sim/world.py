"""The simulated viewer's world: objects (linksets), prims and inventory items, and their JSON forms.

The `--world` JSON format is documented in README.md next to this file. Everything here is plain
mutable state; the server (server.py) owns the rules about who may change what and what is sent.
"""

from __future__ import annotations

import copy
import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import Any

import attrs

from .. import jsontext

PERM_TRANSFER = 0x2000
PERM_MODIFY = 0x4000
PERM_COPY = 0x8000
PERM_MOVE = 0x80000
PERM_ALL = 0x7FFFFFFF
# What a fresh item gets: full perms for the owner, copy/modify/transfer/move for the next owner.
DEFAULT_NEXT_OWNER = PERM_MOVE | PERM_COPY | PERM_MODIFY | PERM_TRANSFER

# What a viewer shows for an object whose ObjectProperties have not arrived yet: it derives the
# owner mask from the object's update flags, which carry only these rights of the current agent
# (doc/external-editor-json-rpc.md in AlchemyViewer/Alchemy, "Deferred permission fields").
AGENT_RIGHTS = PERM_MODIFY | PERM_COPY | PERM_TRANSFER | PERM_MOVE
PLACEHOLDER_OBJECT_NAME = "Object"



def script_id_for(prim_id: str, item_id: str) -> str:
    """The viewer's script id: the hex MD5 of "<prim uuid>_<item uuid>" (the null UUID as the prim
    of a script in the agent's inventory; live-sync.md)."""
    return hashlib.md5(f"{prim_id.lower()}_{item_id.lower()}".encode("ascii")).hexdigest()


SUBTYPE_LSL = 0
SUBTYPE_LUAU = 1
SCRIPT_VMS = ("luau", "mono", "lsl2")
EXPLORABLE_TYPES = ("script", "notecard")


@attrs.define
class Perms:
    owner: int = PERM_ALL
    next_owner: int = DEFAULT_NEXT_OWNER

    @property
    def can_modify(self) -> bool:
        return bool(self.owner & PERM_MODIFY)

    @property
    def can_copy(self) -> bool:
        return bool(self.owner & PERM_COPY)

    def to_json(self) -> dict[str, int]:
        return {"owner": self.owner, "next_owner": self.next_owner}


@attrs.define
class Item:
    item_id: str
    name: str
    type: str  # "script" | "notecard" | anything else (textures etc. are never published)
    subtype: int | None = None  # scripts: 0 LSL, 1 Luau
    vm: str | None = None  # scripts: "lsl2" | "mono" | "luau"
    running: bool = False
    faulted: bool = False
    description: str = ""
    permissions: Perms = attrs.Factory(Perms)
    content: str = ""
    revision: int = 0
    creator_id: str | None = None
    # The source of the version that is actually running (last successful compile), or None.
    compiled_content: str | None = None
    # Notecards: how many inventory items (landmarks, textures...) are embedded beside the text
    # (newer protocol document, ObjectContentGetResponse.embedded_items: a count).
    embedded_items: int = 0

    @property
    def is_script(self) -> bool:
        return self.type == "script"

    @property
    def language(self) -> str:
        return "luau" if self.subtype == SUBTYPE_LUAU else "lsl"

    def to_wire(self, *, revision: bool) -> dict[str, Any]:
        """The ObjectInventoryItem form."""
        out: dict[str, Any] = {
            "item_id": self.item_id,
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "permissions": self.permissions.to_json(),
        }
        if self.is_script:
            out["subtype"] = self.subtype if self.subtype is not None else SUBTYPE_LSL
            out["vm"] = self.vm or ("luau" if self.subtype == SUBTYPE_LUAU else "mono")
            out["running"] = self.running
            out["faulted"] = self.faulted
        if self.creator_id:
            out["creator_id"] = self.creator_id
        if revision:
            out["revision"] = self.revision
        return out

    def to_world(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "item_id": self.item_id,
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "permissions": self.permissions.to_json(),
            "content": self.content,
            "revision": self.revision,
        }
        if self.is_script:
            out.update(subtype=self.subtype, vm=self.vm, running=self.running, faulted=self.faulted)
        if self.type == "notecard" and self.embedded_items:
            out["embedded_items"] = self.embedded_items
        if self.creator_id:
            out["creator_id"] = self.creator_id
        return out


@attrs.define
class Prim:
    prim_id: str
    name: str
    description: str = ""
    permissions: Perms = attrs.Factory(Perms)
    inventory: list[Item] = attrs.Factory(list)

    def find(self, item_id: str) -> Item | None:
        for item in self.inventory:
            if item.item_id == item_id:
                return item
        return None

    def explorable(self) -> list[Item]:
        return [i for i in self.inventory if i.type in EXPLORABLE_TYPES]


@attrs.define
class SimObject:
    """A linkset: the root prim (whose id is the object id) and its children in link order."""

    root: Prim
    children: list[Prim] = attrs.Factory(list)
    published: bool = False
    # The viewer has not received the prims' ObjectProperties yet: a V2 publish carries placeholders
    # until the sim delivers the properties (SimViewer.deliver_properties).
    deferred_properties: bool = False
    # False while the object's region is disconnected (V2 answers -32005 for its items).
    region_connected: bool = True

    @property
    def object_id(self) -> str:
        return self.root.prim_id

    @property
    def name(self) -> str:
        return self.root.name

    def prims(self) -> list[Prim]:
        return [self.root, *self.children]

    def link_number(self, prim: Prim) -> int:
        if prim is self.root:
            return 1
        return self.children.index(prim) + 2

    def to_wire(
        self,
        *,
        revision: bool,
        owner_id: str,
        placeholders: bool = False,
        placeholder_owner: str | None = None,
        uuid_names: bool = False,
    ) -> dict[str, Any]:
        """The PublishedObject form.

        `placeholders`: what a newer viewer publishes before the prims' ObjectProperties arrive
        (newer protocol document, PublishedObject / LinkedObject comments and "Deferred permission
        fields"): `object_name` "Object", each child's `link_name` "Link #<link_number>", empty
        descriptions, `permissions.owner` derived from the agent's rights and no `next_owner`,
        `owner_id` absent (`placeholder_owner` None) or `placeholder_owner` (the null UUID), and
        `can_save_back` false. `uuid_names`: names not known yet are the prims' UUID strings instead
        of "Object" / "Link #n" (viewer-source.md §2: "the prim's UUID string (G2, G4) or 'Object' /
        'Link #n' (G3 only)")."""
        out: dict[str, Any] = {
            "object_id": self.object_id,
            "object_name": self.root.name,
            "object_description": self.root.description,
            "owner_id": owner_id,
            "region": "Simulated Region",
            "permissions": self.root.permissions.to_json(),
            "can_save_back": True,
            "inventory": [i.to_wire(revision=revision) for i in self.root.explorable()],
        }
        if placeholders:
            out["object_name"] = self.object_id if uuid_names else PLACEHOLDER_OBJECT_NAME
            out["object_description"] = ""  # not known yet either
            out["permissions"] = {"owner": self.root.permissions.owner & AGENT_RIGHTS}
            out["can_save_back"] = False
            if placeholder_owner is None:
                del out["owner_id"]
            else:
                out["owner_id"] = placeholder_owner
        if self.children:
            out["linked_objects"] = self.linked_wire(
                revision=revision, placeholders=placeholders, uuid_names=uuid_names
            )
        return out

    def linked_wire(
        self, *, revision: bool, placeholders: bool = False, uuid_names: bool = False
    ) -> list[dict[str, Any]]:
        out = []
        for n, c in enumerate(self.children, start=2):
            link: dict[str, Any] = {
                "link_id": c.prim_id,
                "link_number": n,
                "link_name": c.name,
                "link_description": c.description,
                "permissions": c.permissions.to_json(),
                "inventory": [i.to_wire(revision=revision) for i in c.explorable()],
            }
            if placeholders:
                link["link_name"] = c.prim_id if uuid_names else f"Link #{n}"
                link["link_description"] = ""
                link["permissions"] = {"owner": c.permissions.owner & AGENT_RIGHTS}
            out.append(link)
        return out


@attrs.define
class World:
    agent_id: str = "6c3b0a4e-2f1d-4c8e-9a7b-5d4e3f2a1b0c"
    agent_name: str = "Simulated Resident"
    objects: dict[str, SimObject] = attrs.Factory(dict)
    revision_counter: int = 0
    # Scripts (and other items) in the agent's own inventory: not in any object, so the object
    # explorer never reaches them; only live sync does (live_sync.py).
    agent_inventory: list[Item] = attrs.Factory(list)

    # --- lookups ---------------------------------------------------------------------------------

    def find_prim(self, prim_id: str) -> tuple[SimObject, Prim] | None:
        prim_id = prim_id.lower()
        for obj in self.objects.values():
            for prim in obj.prims():
                if prim.prim_id == prim_id:
                    return obj, prim
        return None

    def find_item(self, item_id: str) -> tuple[SimObject, Prim, Item] | None:
        item_id = item_id.lower()
        for obj in self.objects.values():
            for prim in obj.prims():
                item = prim.find(item_id)
                if item is not None:
                    return obj, prim, item
        return None

    def find_agent_item(self, item_id: str) -> Item | None:
        item_id = item_id.lower()
        for item in self.agent_inventory:
            if item.item_id == item_id:
                return item
        return None

    def next_revision(self) -> int:
        self.revision_counter += 1
        return self.revision_counter

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent_id": self.agent_id,
            "agent_name": self.agent_name,
            "objects": [_object_to_world(o) for o in self.objects.values()],
        }
        if self.agent_inventory:
            out["agent_inventory"] = [i.to_world() for i in self.agent_inventory]
        return out


def _object_to_world(o: SimObject) -> dict[str, Any]:
    out: dict[str, Any] = {
        "object_id": o.object_id,
        "object_name": o.root.name,
        "object_description": o.root.description,
        "published": o.published,
        "permissions": o.root.permissions.to_json(),
        "inventory": [i.to_world() for i in o.root.inventory],
        "linked_objects": [
            {
                "link_id": c.prim_id,
                "link_name": c.name,
                "link_description": c.description,
                "permissions": c.permissions.to_json(),
                "inventory": [i.to_world() for i in c.inventory],
            }
            for c in o.children
        ],
    }
    if o.deferred_properties:
        out["deferred_properties"] = True
    if not o.region_connected:
        out["region_connected"] = False
    return out


# --- loading -------------------------------------------------------------------------------------


def _perms(data: Any) -> Perms:
    if not isinstance(data, dict):
        return Perms()
    return Perms(
        owner=int(data.get("owner", PERM_ALL)), next_owner=int(data.get("next_owner", DEFAULT_NEXT_OWNER))
    )


def item_from_json(data: dict[str, Any], world: World) -> Item:
    kind = str(data.get("type", "notecard"))
    item = Item(
        item_id=str(data["item_id"]).lower(),
        name=str(data.get("name", "New Item")),
        type=kind,
        description=str(data.get("description", "")),
        permissions=_perms(data.get("permissions")),
        content=str(data.get("content", "")),
        creator_id=str(data["creator_id"]).lower() if data.get("creator_id") else None,
    )
    if item.is_script:
        vm = data.get("vm")
        subtype = data.get("subtype")
        if subtype is None:
            subtype = SUBTYPE_LUAU if vm == "luau" and data.get("language") != "lsl" else SUBTYPE_LSL
        item.subtype = int(subtype)
        item.vm = str(vm) if vm else ("luau" if item.subtype == SUBTYPE_LUAU else "mono")
        item.running = bool(data.get("running", False))
        item.faulted = bool(data.get("faulted", False))
    if item.type == "notecard":
        count = data.get("embedded_items", 0)
        item.embedded_items = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0
    rev = data.get("revision")
    if isinstance(rev, int) and rev > 0:
        item.revision = rev
        world.revision_counter = max(world.revision_counter, rev)
    return item


def prim_from_json(data: dict[str, Any], world: World, *, root: bool) -> Prim:
    id_key, name_key, desc_key = (
        ("object_id", "object_name", "object_description")
        if root
        else ("link_id", "link_name", "link_description")
    )
    return Prim(
        prim_id=str(data[id_key]).lower(),
        name=str(data.get(name_key, "Object")),
        description=str(data.get(desc_key, "")),
        permissions=_perms(data.get("permissions")),
        inventory=[item_from_json(i, world) for i in data.get("inventory", [])],
    )


def world_from_json(data: dict[str, Any]) -> World:
    world = World()
    if data.get("agent_id"):
        world.agent_id = str(data["agent_id"]).lower()
    if data.get("agent_name"):
        world.agent_name = str(data["agent_name"])
    for odata in data.get("objects", []):
        root = prim_from_json(odata, world, root=True)
        children = [prim_from_json(c, world, root=False) for c in odata.get("linked_objects", [])]
        world.objects[root.prim_id] = SimObject(
            root,
            children,
            bool(odata.get("published", True)),
            deferred_properties=odata.get("deferred_properties") is True,
            region_connected=odata.get("region_connected", True) is not False,
        )
    world.agent_inventory = [item_from_json(i, world) for i in data.get("agent_inventory", [])]
    # Items without a stored revision get one now, in world order (the agent's inventory last);
    # running scripts are assumed to run the source they hold if it compiles.
    from .compiler import compile_source

    items = [item for obj in world.objects.values() for prim in obj.prims() for item in prim.inventory]
    for item in [*items, *world.agent_inventory]:
        if item.revision == 0:
            item.revision = world.next_revision()
        if item.is_script and not compile_source(item.content, item.language):
            item.compiled_content = item.content
    return world


def load_world(path: str | Path) -> World:
    """A world from a `--world` JSON file; ValueError for one that is not JSON it can decode (a
    syntax error, or nested too deeply), naming the file."""
    try:
        data = jsontext.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"--world {path}: not a world file ({exc})") from None
    return world_from_json(data)


_SAMPLE: dict[str, Any] | None = None


def sample_world() -> World:
    """A fresh copy of the built-in sample world."""
    global _SAMPLE
    if _SAMPLE is None:
        text = resources.files("slfs.sim").joinpath("sample_world.json").read_text(encoding="utf-8")
        _SAMPLE = json.loads(text)
    return world_from_json(copy.deepcopy(_SAMPLE))
