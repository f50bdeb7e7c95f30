"""The registry's reading of the kernel's mount table and of viewer endpoints (pure parts)."""

from __future__ import annotations

import os
from pathlib import Path

from slfs.registry import _endpoint_key, our_fuse_mounts


def test_endpoint_key_treats_localhost_as_the_loopback_address() -> None:
    assert _endpoint_key("localhost:9020") == _endpoint_key("127.0.0.1:9020") == "127.0.0.1:9020"
    assert _endpoint_key("[::1]:9020") == "::1:9020"
    assert _endpoint_key("127.0.0.1:9021") != _endpoint_key("127.0.0.1:9020")


def test_our_fuse_mounts_reads_escaped_paths_and_only_our_slfs_mounts(tmp_path: Path) -> None:
    uid = os.getuid()
    table = tmp_path / "mounts"
    table.write_text(
        f"slfs /home/a/my\\040sl fuse.slfs rw,nosuid,user_id={uid},group_id=0 0 0\n"
        f"slfs /home/b/sl fuse.slfs rw,nosuid,user_id={uid + 1},group_id=0 0 0\n"  # another user's
        f"sshfs /home/a/remote fuse.sshfs rw,user_id={uid},group_id=0 0 0\n"  # not slfs
        "proc /proc proc rw 0 0\n"
        "short line\n"
    )
    assert our_fuse_mounts(str(table)) == ["/home/a/my sl"]
    assert our_fuse_mounts(str(tmp_path / "missing")) == []
