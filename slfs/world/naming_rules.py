"""Which new file names become in-world items, and which stay in the local overlay.

A name is local when the viewer could never hold it or when it is what editors and tools use for
temporary and backup files. The pattern list is only a guard: files that are renamed or unlinked
before they are ever closed (perl -pi, git) never reach the viewer whatever their name.
"""

from __future__ import annotations

import errno
import re

import attrs

from . import names
from .fs_errors import NameRefused

# Editors' and tools' temporary and backup names (besides dot names, which are always local).
TEMP_PATTERNS = [re.compile(p) for p in (
    r"^4913$",                      # vim's probe for a writable directory
    r"\.sw[a-px]$",                 # vim swap files
    r"~$",                          # vim and emacs backups
    r"^#.*#$",                      # emacs auto-save
    r"^sed[A-Za-z0-9]{6}$",         # sed -i
    r"___jb_(tmp|old|bak)___$",     # JetBrains safe write
    r"^tmp[a-z0-9_]{8}$",           # python tempfile.mkstemp
    r"^tmp\.[A-Za-z0-9]{10}$",       # mktemp(1)
    r"^XX[A-Za-z0-9]{6}$",          # perl -i (mkstemp of "XXXXXXXX": only the last six change)
    r"\.kate-swp$",                 # kate
    r"\.(dpkg|ucf)-(new|old|dist|tmp)$",
    r"\.part$",                     # partial downloads
    r"^\.?[^.]+\.tmp\.\d+$",        # tools writing NAME.tmp.PID
    r"\.(orig|rej|bak|swp|tmp)$",   # patch, misc backups
)]


def is_overlay_name(name: str) -> bool:
    """True for names that live only in the local overlay."""
    return name.startswith(".") or any(p.search(name) for p in TEMP_PATTERNS)


# What editors keep beside the file they edit (swap, backup, auto-save files and vim's probe),
# rather than write and rename over it.
_EDITOR_SIDE_FILES = re.compile(r"^4913$|\.sw[a-px]$|~$|^#.*#$|\.kate-swp$")


def is_replacement_name(name: str) -> bool:
    """A temporary name of a tool that writes a new file and renames it over the one it edits
    (sed -i, perl -pi, mkstemp, rsync's and gedit's dot names): what `.slfs/live/` accepts for a
    new file. Editors' swap and backup names are not: refused there, editors keep those elsewhere
    (vim's probe refused keeps vim writing live files in place)."""
    return is_overlay_name(name) and not _EDITOR_SIDE_FILES.search(name)


@attrs.frozen
class RemoteName:
    sl_name: str  # the inventory name, without extension, `/` restored
    type: str  # "script" | "notecard"
    subtype: int | None  # 0 LSL, 1 Luau for scripts


def parse_remote_name(file_name: str) -> RemoteName:
    """The in-world identity a new file name asks for; NameRefused when the viewer cannot hold it."""
    stem, ext = names.split_ext(file_name)
    base, _tag = names.strip_tag(stem)
    sl_name = names.to_sl(base)
    check_sl_name(sl_name, file_name)
    if ext:
        return RemoteName(sl_name, "script", names.SCRIPT_EXTENSIONS[ext])
    return RemoteName(sl_name, "notecard", None)


# What the viewer holds in a name. Its own editors take item and object names through
# LLTextValidate::validateASCIIPrintableNoPipe (the inventory renamer, LLFolderView::commitRename;
# the object's "Object Name" field, LLSidepanelTaskInfo): printable ASCII, ' ' to '~', without '|',
# which SL inventory uses as a field separator. What reaches it otherwise is corrected
# (correctInventoryName: other bytes and '|' become spaces, cut at 63 bytes;
# ../shared/research/viewer-behaviour.md, item.modify), so slfs refuses rather than surprise. A
# name with a character the viewer cannot hold (outside that set, or '|') is EILSEQ, as file
# systems that hold only some characters answer (ZFS with utf8only); a blank name is EINVAL. (mv
# reads EINVAL from rename(2) as "cannot move a directory into itself" and says so.)
RESERVED = "|"


def _is_printable_ascii(c: str) -> bool:
    return " " <= c <= "~"


def check_sl_name(sl_name: str, shown: str) -> None:
    """NameRefused (its errno and reason) for an in-world name the viewer cannot hold."""
    bad = sorted({c for c in sl_name if not _is_printable_ascii(c)})
    if bad:
        listed = ", ".join(repr(c) for c in bad[:5]) + (", ..." if len(bad) > 5 else "")
        raise NameRefused(errno.EILSEQ, f"{shown!r}: in-world names are printable ASCII; {listed} "
                          f"{'is' if len(bad) == 1 else 'are'} not")
    if RESERVED in sl_name:
        raise NameRefused(errno.EILSEQ, f"{shown!r}: in-world names cannot hold '|' (Second Life's inventory "
                          "uses it as a separator)")
    if not sl_name.strip():
        raise NameRefused(errno.EINVAL, f"{shown!r}: in-world names cannot be empty or blank")
    if len(sl_name.encode()) > names.MAX_SL_NAME_BYTES:
        raise NameRefused(errno.ENAMETOOLONG, f"{shown!r}: in-world names are at most "
                          f"{names.MAX_SL_NAME_BYTES} bytes")


NOTECARD_MAX = 65536
SCRIPT_MAX = 262144


def size_limit(item_type: str) -> int:
    return SCRIPT_MAX if item_type == "script" else NOTECARD_MAX
