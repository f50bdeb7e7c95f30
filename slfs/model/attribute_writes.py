"""Setting a `user.sl.*` attribute (`rsync -aX`, `cp -a --preserve=xattr`, setfattr): the attributes
are the viewer's and read-only, so a program copying a tree back onto the mount is accepted when it
sets what is there already, and refused, with the reason, when it would change one. rsync sets them
on its temporary file, in the local overlay: they are kept there and checked when that file is
renamed onto the item (a temporary file renamed onto a new name makes a new item, whose ids the
viewer gives: they are dropped then)."""

from __future__ import annotations

import errno
from collections.abc import Mapping

from ..protocol.text import one_line
from ..world.fs_errors import FsError, Refused
from ..world.nodes import NewFile, Node, OverlayNode

REVISION = "user.sl.revision"
# Attributes kept on one overlay file until its rename: slfs shows a dozen; a program setting
# thousands of made-up names must not grow the daemon without bound.
MAX_KEPT = 64
READ_ONLY = "the user.sl.* attributes are the viewer's and read-only (only their current values can be set)"


def set_attribute(node: object, path: str, current: Mapping[str, bytes], name: str, value: bytes) -> None:
    """setxattr of a user.sl.* `name` on `node` (whose attributes are `current`): kept on an overlay
    file (checked at its rename onto an item), dropped on a file not in-world yet (the new item
    gets the viewer's ids and state, not a copy's), else accepted when it is what the file has;
    Refused (ENOTSUP, with the reason) otherwise."""
    if isinstance(node, OverlayNode):
        if name not in node.sl_attributes and len(node.sl_attributes) >= MAX_KEPT:
            raise Refused(errno.ENOSPC, f"{path}: more than {MAX_KEPT} user.sl.* attributes set on one file")
        node.sl_attributes[name] = value
        return
    if isinstance(node, NewFile):
        return
    why = refusal(path, current, name, value)
    if why is not None:
        raise Refused(errno.ENOTSUP, why)  # read-only, as ever (slfs(5) ERRORS); now with the reason


def remove_attribute(node: object, path: str, current: Mapping[str, bytes], name: str) -> None:
    """removexattr: one set on an overlay file goes; one the file has is refused (ENOTSUP, with
    the reason: rsync -aX removes what its source lacks); any other is not there (ENODATA)."""
    if isinstance(node, OverlayNode) and node.sl_attributes.pop(name, None) is not None:
        return
    if name in current:
        raise Refused(errno.ENOTSUP, f"{path}: {name} cannot be removed; {READ_ONLY}")
    raise FsError(errno.ENODATA, "")


def check_rename(src: Node, old: str, new: str, path: str, current: Mapping[str, bytes]) -> None:
    """An overlay file renamed onto an item (`path`, whose attributes are `current`): what was set
    on it (rsync -aX's temporary file) must be what the item has, or the rename is refused."""
    if isinstance(src, OverlayNode) and src.sl_attributes:
        why = refusal_of_all(path, current, src.sl_attributes)
        if why is not None:
            raise Refused(errno.EPERM, f"{old} -> {new}: {why}")


def refusal(path: str, current: Mapping[str, bytes], name: str, value: bytes) -> str | None:
    """Why setting `name` to `value` on the file `path` (holding `current`) is refused; None when
    it is accepted (it sets what is there)."""
    have = current.get(name)
    if have is None:
        return f"{path}: has no attribute {name}; {READ_ONLY}"
    if value == have or (name == REVISION and _earlier(value, have)):
        return None
    return f"{path}: {name} is {_shown(have)}, not {_shown(value)}; {READ_ONLY}"


def refusal_of_all(path: str, current: Mapping[str, bytes], wanted: Mapping[str, bytes]) -> str | None:
    """The refusals of several attributes set on a temporary file renamed onto `path`, in one line."""
    why = [r for name in sorted(wanted) if (r := refusal(path, current, name, wanted[name])) is not None]
    if not why:
        return None
    return why[0] if len(why) == 1 else f"{why[0]} (and {len(why) - 1} more attribute(s) differ)"


def _earlier(value: bytes, have: bytes) -> bool:
    """A copy made before a save holds an earlier revision: each save through the copy (rsync's
    own, too) moves the item's on, so an earlier one is what the copy was taken at, not a change."""
    try:
        return 0 <= int(value.decode("ascii")) <= int(have.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return False


def _shown(value: bytes) -> str:
    return repr(one_line(value.decode("utf-8", "replace"), 80))
