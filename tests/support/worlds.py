"""Worlds and expectations for the read-path end-to-end tests."""

from __future__ import annotations

from typing import Any

from slfs.sim import World
from slfs.sim.world import Item, SimObject, world_from_json

FULL = {"owner": 0x7FFFFFFF, "next_owner": 0x8E000}

# The sample world's published tree: path -> sim item name (None for directories).
SAMPLE_FILES = {
    "Hello Cube/Hello.lsl": "Hello",
    "Hello Cube/Counter.luau": "Counter",
    "Hello Cube/Notes\u2215Todo": "Notes/Todo",
    "Hello Cube/x.lsl": "x",
    "Hello Cube/x.lsl@57f2a1c2": "x.lsl",
    "Hello Cube/Broken.lsl": "Broken",
    "Hello Cube/Faulty.lsl": "Faulty",
    "Locked Box/NoMod Script.lsl": "NoMod Script",
    "Locked Box/NoCopy Script.lsl": "NoCopy Script",
    "Locked Box/Read Me": "Read Me",
    "No Modify Object/Info": "Info",
    "No Modify Object/Spinner.lsl": "Spinner",
    "Twin/Main.lsl": ("Main", "37110fcc-ce97-534e-9647-f09510813dd4"),
    "Twin@4dd59973/Main.lsl": ("Main", "4dd59973-25e4-5202-817c-7b5078a18bb5"),
    "House/Controller.lsl": "Controller",
    "House/Door@59196331/Door Script.lsl": "Door Script",
    "House/Object@8f2df123/Config": "Config",
    "House/Object@40e55343/Light.luau": "Light",
}
SAMPLE_DIRS = [
    "Hello Cube",
    "Locked Box",
    "No Modify Object",
    "Twin",
    "Twin@4dd59973",
    "House",
    "House/Door@59196331",
    "House/Object@8f2df123",
    "House/Object@40e55343",
    "House/Object@3859d2ae",
    "House/Object@3812223d",
    "House/Object@5ee7d8c5",
    "House/Object@daab5606",
]
UNREADABLE = {"Locked Box/NoMod Script.lsl", "Locked Box/NoCopy Script.lsl"}
HOUSE_ID = "e66d1a51-2375-5a1a-bc85-a3ebb447fab7"
LAMP_ID = "413f7810-f0c9-5ed5-a63d-0cc3c39b701b"
TWIN1_ID = "37110fcc-ce97-534e-9647-f09510813dd4"


def all_items(world: World) -> list[tuple[SimObject, Any, Item]]:
    return [(o, p, i) for o in world.objects.values() for p in o.prims() for i in p.inventory]


def item_named(world: World, name: str, object_id: str | None = None) -> Item:
    found = [i for o, _p, i in all_items(world) if i.name == name and (object_id is None or o.object_id == object_id)]
    assert len(found) == 1, f"{name!r}: {len(found)} items"
    return found[0]


def sample_item(world: World, path: str) -> Item:
    spec = SAMPLE_FILES[path]
    if isinstance(spec, tuple):
        return item_named(world, spec[0], spec[1])
    return item_named(world, spec)


def u(n: int, prefix: str = "a") -> str:
    """A UUID whose first hex digits are predictable: u(1, 'a') = 'a0000000-...-000000000001'."""
    return f"{prefix}{n:07x}-0000-4000-8000-{n:012x}"


def item(item_id: str, name: str, type: str = "notecard", content: str = "", **kw: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "item_id": item_id,
        "name": name,
        "type": type,
        "content": content,
        "permissions": FULL,
    }
    d.update(kw)
    return d


def names_world() -> World:
    """Every naming rule and collision, with UUIDs chosen so the winner is known."""
    objects = [
        {
            "object_id": u(1, "b"),
            "object_name": "Names",
            "inventory": [
                item(u(1), "a/b", "script", "default { state_entry() { } }\n", subtype=0),
                item(u(2), "lu", "script", "print('hi')\n", subtype=1, vm="luau"),
                item(u(3), "plain.txt", content="verbatim\n"),
                # script `x` (higher UUID) beside notecard `x.lsl` (lower UUID): the script is tagged
                item(u(5), "x", "script", "default { state_entry() { } }\n"),
                item(u(4), "x.lsl", content="notecard x.lsl\n"),
                # notecard `y.lsl` (higher UUID) beside script `y`: the notecard is tagged
                item(u(6), "y", "script", "default { state_entry() { } }\n"),
                item(u(7), "y.lsl", content="notecard y.lsl\n"),
                # `/` versus U+2215: the same file name wanted twice
                item(u(8), "p/q", content="slash\n"),
                item(u(9), "p\u2215q", content="division slash\n"),
                item(u(10), "Ünïcödé ✓", content="h\u00e9llo w\u00f6rld \u2713 \U0001f600\n"),
                item(u(11), ".slfs", content="a notecard called .slfs\n"),
                item(u(12), "Wood", "texture"),
            ],
            "linked_objects": [
                {
                    "link_id": u(20, "c"),
                    "link_name": "Arm",
                    "inventory": [item(u(21), "Left", content="left\n")],
                },
                {
                    "link_id": u(22, "c"),
                    "link_name": "Arm",
                    "inventory": [item(u(23), "Right", content="right\n")],
                },
                {"link_id": u(24, "c"), "link_name": "a/b", "inventory": []},
                # a child named like an item: child dirs are always tagged, so the item keeps its name
                {"link_id": u(26, "c"), "link_name": "plain.txt", "inventory": []},
            ],
        },
        {"object_id": u(2, "d"), "object_name": "Dup", "inventory": [item(u(30), "one", content="1\n")]},
        {"object_id": u(3, "d"), "object_name": "Dup", "inventory": [item(u(31), "two", content="2\n")]},
        {"object_id": u(4, "d"), "object_name": "Dup", "inventory": [item(u(32), "three", content="3\n")]},
        {"object_id": u(5, "d"), "object_name": "Slash/Object", "inventory": []},
    ]
    return world_from_json({"agent_id": u(99, "e"), "agent_name": "Tester", "objects": objects})


NAMES_EXPECTED = {
    "Names/a\u2215b.lsl": u(1),
    "Names/lu.luau": u(2),
    "Names/plain.txt": u(3),
    "Names/x.lsl": u(4),
    "Names/x@a0000005.lsl": u(5),
    "Names/y.lsl": u(6),
    "Names/y.lsl@a0000007": u(7),
    "Names/p\u2215q": u(8),
    "Names/p\u2215q@a0000009": u(9),
    "Names/Ünïcödé ✓": u(10),
    "Names/.slfs@a000000b": u(11),
    "Names/Arm@c0000014/Left": u(21),
    "Names/Arm@c0000016/Right": u(23),
    "Dup/one": u(30),
    "Dup@d0000003/two": u(31),
    "Dup@d0000004/three": u(32),
}
NAMES_DIRS = [
    "Names",
    "Names/Arm@c0000014",
    "Names/Arm@c0000016",
    "Names/a\u2215b@c0000018",
    "Names/plain.txt@c000001a",
    "Dup",
    "Dup@d0000003",
    "Dup@d0000004",
    "Slash\u2215Object",
]


def many_items_world(objects: int, items: int, *, size: int = 200, children: int = 0) -> dict[str, Any]:
    """A world JSON dict: `objects` objects of `items` notecards and scripts each (benchmark)."""
    out = []
    for o in range(objects):
        inv = []
        for i in range(items):
            body = f"// object {o} item {i}\n" + ("x" * max(0, size - 40)) + "\n"
            if i % 2:
                inv.append(
                    item(
                        f"{o:08x}-{i:04x}-4000-8000-000000000001",
                        f"Script {i}",
                        "script",
                        'default { state_entry() { llOwnerSay("' + body.replace("\n", " ") + '"); } }\n',
                    )
                )
            else:
                inv.append(item(f"{o:08x}-{i:04x}-4000-8000-000000000002", f"Note {i}", content=body))
        out.append(
            {
                "object_id": f"{o:08x}-ffff-4000-8000-000000000000",
                "object_name": f"Object {o}",
                "inventory": inv,
                "linked_objects": [
                    {"link_id": f"{o:08x}-eeee-4000-8000-{c:012x}", "link_name": "Part"} for c in range(children)
                ],
            }
        )
    return {"agent_id": "00000000-0000-4000-8000-000000000099", "agent_name": "Bench", "objects": out}
