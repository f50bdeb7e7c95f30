"""The edit buffers the daemon holds in memory: items being written, new files before their
create, live files and the temporary files of `.slfs/live/`.

Every write and truncation of one is bounded before it grows the buffer: an item's own limit is
checked by its writer, and nothing is ever held beyond HELD_MAX, more than could ever be sent to
the viewer. Without that bound a `truncate -s 100G` or a write at a huge offset made the daemon
allocate (and zero) that much memory, and the kernel's OOM killer ended the mount.
"""

from __future__ import annotations

import errno

from ..world.fs_errors import FsError

# After session.ok the viewer takes messages of at most 16 MB (the newer protocol document; see
# slfs/session/connection.py SEND_LIMIT), so no file the mount holds in memory can usefully be larger.
HELD_MAX = 16 * 1024 * 1024


def check_held(size: int, shown: str) -> None:
    if size > HELD_MAX:
        raise FsError(errno.EFBIG, f"{shown}: a file held in memory takes at most {HELD_MAX} bytes "
                      "(the most the viewer can be sent)")


def splice(buf: bytearray, off: int, data: bytes, shown: str) -> None:
    """`data` written into `buf` at `off` (a gap before it reads as zeros)."""
    check_held(off + len(data), shown)
    if off > len(buf):
        buf.extend(bytes(off - len(buf)))
    buf[off : off + len(data)] = data


def resize(buf: bytearray, size: int, shown: str) -> None:
    """`buf` cut or zero-extended to `size` bytes."""
    check_held(size, shown)
    if size < len(buf):
        del buf[size:]
    else:
        buf.extend(bytes(size - len(buf)))
