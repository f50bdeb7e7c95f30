"""Where each object's local overlay lives: its home, keyed by who and what the object is, never by
the name it shows under.

    overlay/agents/AGENT/root/                  the mount root's local files
    overlay/agents/AGENT/objects/OBJECT/own/    an object's (its root prim's) local files
    overlay/agents/AGENT/objects/OBJECT/prims/PRIM/   a child prim's
    overlay/agents/AGENT/index.json             each home's object: last known name, gone or not

AGENT is the history store's key (model/history.py agent_key), OBJECT the root prim's UUID and PRIM
the child prim's UUID (as name_safe_id gives them: an id from the network never reaches a path as
it came). Two objects of one name, a rename, a close, another agent's mount never show one object's
`.git` under another.

One exception keeps re-rezzing working (an object taken into inventory and rezzed again comes back
with a new UUID and its name): a home whose object went away (unpublished, closed, gone from the
viewer's listing) is taken by the next object of that name published for the agent, if no other
object of that name was published when it went away (`ambiguous`), none is now, and no other home
of that name waits. Its child prims' homes follow by link name where one old and one new prim have
that name; the others stay on disk under the old prim's id.

The index is small (homes only: objects that have local files) and written whole, to a temporary
file renamed over it: a crash leaves the old index or the new one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import attrs

from ..protocol.ids import name_safe_id

log = logging.getLogger(__name__)

INDEX = "index.json"
OWN = "own"
PRIMS = "prims"
_MAX_ID = 64


def id_name(value: str) -> str:
    """A directory name for an id from the viewer: its hex digits, or a digest of an odd one."""
    safe = name_safe_id(value)
    return safe if len(safe) <= _MAX_ID else hashlib.sha256(safe.encode()).hexdigest()


@attrs.define
class Home:
    """What the index knows of one object's home."""

    name: str  # the object's in-world name, as last known
    gone: bool = False  # its object went away (not published now)
    ambiguous: bool = False  # another object of its name was published when it went away
    prims: dict[str, str] = attrs.field(factory=dict)  # child prim home (id name) -> link name
    # Link names several of its prims had when it went away: their homes follow none of the new.
    shared_links: list[str] = attrs.field(factory=list)
    # An old by-name overlay whose folder name had a UUID tag (`Twin@4dd59973`): it waits for
    # that very object, and only that object takes it.
    tag: str = ""


def adoptable(homes: dict[str, Home], name: str, others_published: int, uuid_tag: str = "") -> str | None:
    """The home a newly published object named `name` takes (its key), or None: an old overlay
    tagged for it (`uuid_tag`: its UUID as names.tag_of gives it), else the only home of that name
    waiting, gone while no other object had the name, and no other published has it now."""
    mine = [key for key, home in homes.items()
            if home.gone and home.tag and home.name == name and uuid_tag.startswith(home.tag)]
    if len(mine) == 1:
        return mine[0]
    if others_published:
        return None
    waiting = [key for key, home in homes.items() if home.gone and not home.tag and home.name == name]
    if len(waiting) != 1 or homes[waiting[0]].ambiguous:
        return None
    return waiting[0]


def prim_moves(old: dict[str, str], new: dict[str, str], shared: Iterable[str] = ()) -> dict[str, str]:
    """Child prim homes an adopted object's prims take: old home -> new prim's id name, by link
    name, where exactly one old prim and one new prim have it (`old`: home -> link name, `new`:
    prim id name -> link name, `shared`: link names several old prims had, homes or not)."""
    def unique(by: dict[str, str]) -> dict[str, str]:
        count: dict[str, int] = {}
        for link in by.values():
            count[link] = count.get(link, 0) + 1
        return {link: key for key, link in by.items() if count[link] == 1}

    new_by_link = unique(new)
    skip = set(shared)
    return {key: new_by_link[link] for link, key in unique(old).items() if link in new_by_link and link not in skip}


class Index:
    """One agent's homes, as kept in `dir/index.json`."""

    def __init__(self, directory: Path, file_mode: int) -> None:
        self.dir = directory
        self.file_mode = file_mode
        self.homes: dict[str, Home] = {}

    @property
    def path(self) -> Path:
        return self.dir / INDEX

    def load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            raw = data["objects"]
            self.homes = {str(k): Home(name=str(v["name"]), gone=bool(v.get("gone")),
                                       ambiguous=bool(v.get("ambiguous")),
                                       prims={str(p): str(n) for p, n in dict(v.get("prims", {})).items()},
                                       shared_links=[str(n) for n in v.get("shared_links", [])],
                                       tag=str(v.get("tag", "")))
                          for k, v in dict(raw).items()}
        except FileNotFoundError:
            self.homes = {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            # The homes stay on disk; only their going-away facts are lost (none is adopted).
            log.warning("overlay: %s is unreadable (%s); starting a new index", self.path, exc)
            self.homes = {}

    def save(self) -> None:
        data = {"version": 1, "objects": {k: attrs.asdict(h) for k, h in sorted(self.homes.items())}}
        tmp = self.dir / (INDEX + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, self.file_mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def went_away(self, key: str, name: str, published_names: Iterable[str]) -> bool:
        """The object of home `key` is not published now; True when the index changed."""
        home = self.homes.get(key)
        if home is None or home.gone:
            return False
        home.name, home.gone = name, True
        home.ambiguous = any(n == name for n in published_names)
        return True

    def came_back(self, key: str, name: str) -> bool:
        """The object of home `key` is published (again); True when the index changed."""
        home = self.homes.get(key)
        if home is None or (not home.gone and home.name == name):
            return False
        home.name, home.gone, home.ambiguous, home.shared_links, home.tag = name, False, False, [], ""
        return True

    # The overlay (model/overlay.py) tells the index these; a Home's fields and the map of homes
    # are written here only.

    def add(self, key: str, home: Home) -> Home:
        """A home the index did not know (a folder's files about to be made, an old overlay moved)."""
        self.homes[key] = home
        return home

    def forget(self, key: str) -> None:
        """Home `key` was removed by hand: it waits no longer."""
        del self.homes[key]

    def gone_unseen(self, key: str, *, ambiguous: bool) -> None:
        """The object of home `key` went away while no session said so (the last mount crashed)."""
        home = self.homes[key]
        home.gone, home.ambiguous = True, ambiguous

    def share_links(self, key: str, links: list[str]) -> None:
        """Link names several prims of the object of home `key` had when it went away."""
        self.homes[key].shared_links = links

    def adopt(self, old: str, key: str) -> Home:
        """Home `old` is the home of object `key` now (re-rezzed): it waits no longer."""
        home = self.homes.pop(old)
        self.homes[key] = home
        home.gone = home.ambiguous = False
        home.tag = ""
        return home

    def prims_followed(self, home: Home) -> None:
        """Its prims' homes followed their link names: the names they shared matter no more."""
        home.shared_links = []
