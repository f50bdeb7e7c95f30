"""Where a name made in the mount goes: in-world, or the local overlay on disk.

The one rule the file system's mkdir, create, symlink, link and rename ask: everything under an
overlay directory is local, and so is a dot, temporary or editor-backup name in an in-world folder
(world/naming_rules.py says which names those are); any other name in an in-world folder is meant
for the world (where the model then decides whether it can go: only scripts and notecards, never
at the mount root).
"""

from __future__ import annotations

import enum

from ..world.naming_rules import is_overlay_name
from ..world.nodes import Folder, OverlayNode


class Destination(enum.Enum):
    IN_WORLD = "in-world"
    LOCAL = "local"


def destination(folder: Folder | OverlayNode, name: str) -> Destination:
    """Where `name`, made in `folder`, goes."""
    if isinstance(folder, OverlayNode) or is_overlay_name(name):
        return Destination.LOCAL
    return Destination.IN_WORLD


def goes_local(folder: Folder | OverlayNode, name: str) -> bool:
    return destination(folder, name) is Destination.LOCAL
