"""Item text through the mount itself, as every program sees it, with what the control socket
adds: reading (the source, or with `inworld` the stored text from `.slfs/F.inworld`), saving and
creating with the viewer's verdict and the runtime output that follows, renaming and deleting.

Paths here are absolute paths inside the mount, already checked by the caller (slfs/mcp/confine.py
for the MCP server). The mount enforces every rule (permissions, limits, ESTALE); what is checked
here first is only what would otherwise cost a large buffer or give a poor error.
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Mapping
from typing import Any

import attrs

from .. import event_types as ev
from ..world.fs_errors import FsError
from ..world.names import CONTROL_DIR
from ..world.naming_rules import NOTECARD_MAX, SCRIPT_MAX, is_overlay_name, parse_remote_name
from .client_error import ClientError
from .operations import MountClient
from .waits import EventWait

READ_MAX = 1 << 20  # a sidecar log may be longer than any item; more is cut and said so
VERDICT_WAIT = 20.0  # a live file's compile comes after close(): how long a save waits for it
SCRIPT_EXTS = (".lsl", ".luau")


def os_error(exc: OSError, path: str) -> ClientError:
    code = errno.errorcode.get(exc.errno or 0, "EIO")
    return ClientError(f"{path}: {exc.strerror or exc}", code)


def name_error(exc: OSError, path: str) -> ClientError:
    """A create or rename the mount refused: when the new name breaks the in-world naming rule with
    that errno (world/naming_rules.py, the mount's own), the reason, not only the errno's text."""
    name = os.path.basename(path)
    if exc.errno in (errno.EILSEQ, errno.EINVAL, errno.ENAMETOOLONG) and not is_overlay_name(name):
        try:
            parse_remote_name(name)
        except FsError as refused:
            if refused.errno == exc.errno:
                return ClientError(f"{path}: {refused.message}", errno.errorcode[exc.errno])
    return os_error(exc, path)


def limit_for(path: str) -> int:
    return SCRIPT_MAX if path.endswith(SCRIPT_EXTS) else NOTECARD_MAX


def check_text(path: str, text: str) -> bytes:
    """The text as the bytes to save, refused before anything is written when no item can hold it."""
    if "\x00" in text:
        raise ClientError(f"{path}: the text holds NUL characters (U+0000), which in-world text cannot hold",
                          "EINVAL")
    limit = limit_for(path)
    if len(text) > limit:  # at least that many bytes: no need to encode 16 MB to say so
        raise ClientError(f"{path}: {len(text)} characters; {'scripts' if limit == SCRIPT_MAX else 'notecards'} "
                          f"hold at most {limit} bytes", "EFBIG")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise ClientError(f"{path}: the text is not valid Unicode (a lone surrogate)", "EILSEQ") from None
    if len(data) > limit:
        raise ClientError(f"{path}: {len(data)} bytes; {'scripts' if limit == SCRIPT_MAX else 'notecards'} "
                          f"hold at most {limit} bytes", "EFBIG")
    return data


def inworld_path(path: str) -> str:
    folder, name = os.path.split(path)
    return os.path.join(folder, CONTROL_DIR, f"{name}.inworld")


def read_text(path: str, *, inworld: bool = False) -> tuple[str, bool]:
    """(text, cut): the file as the mount shows it (undecodable bytes as U+FFFD), at most READ_MAX bytes."""
    target = inworld_path(path) if inworld else path
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            data = b""
            while len(data) <= READ_MAX:
                chunk = os.read(fd, READ_MAX + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
    except OSError as exc:
        raise os_error(exc, path) from None
    return data[:READ_MAX].decode("utf-8", errors="replace"), len(data) > READ_MAX


def digest(text: str) -> str:
    """What `if_match` compares: the SHA-256 of the text as read (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def check_unchanged(path: str, if_match: str) -> None:
    """ESTALE unless the file still holds the text whose digest() was `if_match`: a save from an
    old read would silently overwrite what someone changed in-world (or in an editor) since."""
    try:
        now, _cut = read_text(path)
    except ClientError as exc:
        if exc.code == "ENOENT":
            raise ClientError(f"{path}: gone since you read it", "ESTALE") from None
        raise
    if digest(now) != if_match.strip().lower():
        raise ClientError(f"{path}: the text changed since you read it; nothing was saved", "ESTALE")


def write_text(path: str, data: bytes, *, create: bool) -> None:
    """Save `data` as the whole file; close() returns once the viewer stored it (or why not)."""
    flags = os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | (os.O_CREAT | os.O_EXCL if create else 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENOENT and not create:
            raise ClientError(f"{path}: no such item (create=true makes a new one)", "ENOENT") from None
        if exc.errno == errno.EEXIST:
            raise ClientError(f"{path}: already exists (create=false saves into it)", "EEXIST") from None
        raise (name_error(exc, path) if create else os_error(exc, path)) from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        os.close(fd)
        raise os_error(exc, path) from None
    try:
        os.close(fd)
    except OSError as exc:
        raise os_error(exc, path) from None


def check_name(new_name: str) -> None:
    if not new_name or "/" in new_name or "\x00" in new_name or new_name in (".", "..") \
            or new_name.startswith(".") or new_name == CONTROL_DIR:
        raise ClientError(f"{new_name!r}: a new name is one file name, not a path, and not a dot name", "EINVAL")


def rename(path: str, new_name: str) -> str:
    """Rename the item within its prim; the new path. An existing name is refused (a rename onto
    it would save into that item)."""
    check_name(new_name)
    target = os.path.join(os.path.dirname(path), new_name)
    if os.path.lexists(target):
        raise ClientError(f"{target}: already exists; delete it first or choose another name", "EEXIST")
    try:
        os.rename(path, target)
    except OSError as exc:
        raise name_error(exc, target) from None
    return target


def delete(path: str) -> None:
    """`rm`: the name goes at once, the item in-world after delete_grace, a copy into the trash."""
    if os.path.isdir(path):
        raise ClientError(f"{path}: a folder (objects and prims come only from the viewer)", "EISDIR")
    try:
        os.unlink(path)
    except OSError as exc:
        raise os_error(exc, path) from None


def _under(path: str, folder: str) -> bool:
    return not folder or path == folder or path.startswith(folder.rstrip("/") + "/")


def concerns(event: ev.SlfsEvent | Mapping[str, Any], rel: str) -> bool:
    """Whether an event is about the mount-relative `rel` (a file or folder; "" for all): its path
    is under it, or, for a line the viewer did not say which script spoke (G1, G3's plain lines:
    scope "object" or "mount"), it came from the object or prim `rel` is in."""
    e = ev.as_event(event)
    path = ev.path_of(e)
    if _under(path, rel):
        return True
    loose = isinstance(e, ev.RUNTIME_EVENTS) and e.scope in ("object", "mount")
    return loose and _under(rel, path) and bool(path or not rel)


def rel_of(client: MountClient, path: str) -> str:
    return os.path.relpath(path, client.mountpoint)


@attrs.frozen
class Saved:
    """A save's outcome: the verdict of the viewer's compile (scripts), its diagnostics mapped to
    source and include lines, and the runtime output in the window after it."""

    path: str
    created: bool
    bytes: int
    kind: str  # "script" or "notecard"
    compiled: bool | None  # None: not a script, or no compile answer came
    note: str
    diagnostics: list[dict[str, Any]]
    includes: list[str]
    runtime: list[dict[str, Any]]
    cursor: int
    waited: bool = True  # False: no compile result came within VERDICT_WAIT

    def as_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def save(client: MountClient, path: str, text: str, *, create: bool, tail_s: float,
         waiter: EventWait | None = None, if_match: str | None = None) -> Saved:
    """Save (or create) `path` and say what came of it: the compile answer of this save and the
    runtime output of the restart that follows, for `tail_s` s after it. With `if_match` (a
    digest() of the text read), nothing is saved when the file holds another text now."""
    data = check_text(path, text)
    if if_match and not create:
        check_unchanged(path, if_match)
    before = client.cursor()
    write_text(path, data, create=create)
    rel = rel_of(client, path)
    is_script = path.endswith(SCRIPT_EXTS)
    compiled: bool | None = None
    note = ""
    diagnostics: list[dict[str, Any]] = []
    includes: list[str] = []
    waited = True
    if is_script:
        diag = client.diag(path, wait=True, wait_s=VERDICT_WAIT)
        waited = not diag.timed_out
        ours = [e for e in client.events(before).events if isinstance(e, ev.Compile) and e.path == rel]
        if ours:
            last = ours[-1]
            compiled = last.compiled
            note = last.note
            includes = list(last.includes or [])
            diagnostics = list(diag.data.get("diagnostics", []))
        elif not waited:
            note = f"no compile answer within {VERDICT_WAIT:g} s"
    item_id: str | None = None
    try:
        item_id = str(client.resolve(path).get("uuid") or "") or None
    except ClientError:
        pass  # a live file has no item of its own here; its events name its path

    def speaks(event: ev.SlfsEvent) -> bool:
        if not isinstance(event, ev.RUNTIME_EVENTS):
            return False
        return (item_id is not None and event.item_id == item_id) or concerns(event, rel)

    runtime: list[dict[str, Any]] = []
    cursor = before
    if is_script and tail_s > 0:
        got = (waiter or EventWait(client.entry)).collect(before, tail_s, speaks)
        runtime, cursor = [e.to_json() for e in got.events], got.cursor
    else:
        cursor = client.cursor()
    return Saved(path=path, created=create, bytes=len(data), kind="script" if is_script else "notecard",
                 compiled=compiled, note=note, diagnostics=diagnostics, includes=includes, runtime=runtime,
                 cursor=cursor, waited=waited)
