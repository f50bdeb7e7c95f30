"""What each `-o` mount option is, in one table: its value's form, its default as the docs show it,
one line of help and the paragraph the README and slfs(1) give it.

`slfs mount --help` (cli/mount.py), the shells' completion of `-o` (cli/completion.py) and the
option lists of README.md and man/slfs.1 (cli/option_docs.py writes them) are built from it;
tests/unit/test_option_docs.py checks the docs are what it renders, that each default is what
parse_options gives, and that every option parse_options takes is here. In `doc`, `x` is code (bold
in the man page).
"""

from __future__ import annotations

import attrs

from ..winpaths import CHOICES as WINDOWS_PATHS_CHOICES

VM_CHOICES = ("mono", "lsl2", "luau")
# Flags the kernel takes, passed through to it (fuse(8)).
PASSTHROUGH = ("allow_other", "allow_root", "default_permissions", "ro", "rw", "noatime", "auto_unmount")


@attrs.frozen
class OptionDoc:
    form: str | None  # the value's form (`N`, `S`, `DIR`...); None: a flag, given bare
    help: str  # one line: `--help` and the shells' completion
    default: str  # as the docs show it; "" shows none
    doc: str  # the README's and slfs(1)'s paragraph


_KERNEL = OptionDoc(None, "passed to the kernel", "", "passed to the kernel (flags: `ro=1` is refused); see fuse(8)")

OPTION_TABLE: dict[str, OptionDoc] = {
    "prefetch": OptionDoc(
        "N", "content fetches started at once by a prim's first listing (0 disables)", "16",
        "content fetches started at once by a prim's first listing (at most 256), so that `ls -l` of N items "
        "costs about N/16 round trips; 0 disables prefetching"),
    "attr_timeout": OptionDoc(
        "S", "seconds the kernel may cache names and attributes", "60",
        "seconds the kernel may cache names and attributes slfs knows (a change the viewer reports reaches "
        "the kernel's cache at once; an entry whose size is not known yet is never cached)"),
    "delete_grace": OptionDoc(
        "S", "seconds an rm waits for a re-create before deleting in-world", "3",
        "seconds an `rm` waits for the name to be re-created (as `git checkout` does) before deleting in-world"),
    "vm": OptionDoc(
        "|".join(VM_CHOICES), "VM of new .lsl scripts", "mono",
        "VM of new `.lsl` scripts (new `.luau` files are always Luau)"),
    "save_retries": OptionDoc(
        "N", "retries of a transient viewer error", "4",
        "retries, with jittered backoff, of a transient viewer answer (\"Item not found\" right after a save, "
        "a region that is not connected)"),
    "reconnect_wait": OptionDoc(
        "S", "how long a call waits for a dropped session to come back", "5",
        "how long after the connection dropped a read or save waits for the session to come back before it "
        "fails"),
    "shutdown_grace": OptionDoc(
        "S", "how long SIGTERM or an unmount waits for pending saves", "20",
        "how long SIGTERM, SIGINT, SIGHUP or an unmount waits for pending saves, creates and deletes, and then "
        "again at most for saving files still open for writing"),
    "open_cmd": OptionDoc(
        "CMD", "editor run for the viewer's editor.open_file, e.g. 'code -g {path}:{line}'", "none",
        "editor launched for the viewer's `editor.open_file`, run as an argument vector (never a shell), "
        "e.g. `open_cmd='code -g {path}:{line}'`; `{line}` is 1 when the viewer gives none, and the path is "
        "appended when there is no `{path}`; every request is also a `viewer.open_file` event"),
    "lazy_lists": OptionDoc(
        "0|1", "Firestorm's lazy lists in preprocessed LSL", "1",
        "Firestorm's lazy lists (`a[i] = v;`) in preprocessed LSL sources"),
    "switch": OptionDoc(
        "0|1", "switch statements in preprocessed LSL", "1",
        "`switch` statements in preprocessed LSL sources"),
    "include": OptionDoc(
        "DIR[:DIR...]", "directories #include and require search", "`$XDG_DATA_HOME/slfs/include` if it exists",
        "directories `#include` and `require` search after the including file's folder (`#include <x>`: only "
        "these)"),
    "windows_paths": OptionDoc(
        "|".join(WINDOWS_PATHS_CHOICES), "how a Windows viewer's paths become local ones", "auto",
        "how a Windows viewer's paths (challenge file, live sync temp files, `editor.open_file`) become local "
        "ones: `wine` through the Wine prefix's `dosdevices/`, `wsl` under `windows_mount`, `off` refuses them; "
        "`auto` is `wsl` in WSL2, else `wine` once a Windows path arrives"),
    "wine_prefix": OptionDoc(
        "DIR", "the Wine prefix the viewer runs in", "`$WINEPREFIX`, else `~/.wine`",
        "the Wine prefix the viewer runs in (must hold `dosdevices/`; makes `auto` mean `wine`)"),
    "windows_mount": OptionDoc(
        "DIR", "where WSL2 mounts the Windows drives", "`/mnt`",
        "where WSL2 mounts the Windows drives (`C:\\` is `DIR/c`; makes `auto` mean `wsl`)"),
    "allow_remote_viewer": OptionDoc(
        None, "let --host name a viewer not on a loopback address", "off",
        "let `--host` name a viewer that is not on a loopback address (whose listener slfs cannot check is "
        "the user's)"),
    "nonempty": OptionDoc(
        None, "mount over a directory that is not empty (what is in it is hidden meanwhile)", "off",
        "mount over a directory that is not empty (what is in it is hidden while mounted); without it such a "
        "directory is refused (exit status 1), as sshfs does"),
    "connect_wait": OptionDoc(
        "S", "unmount and exit when no viewer connected within S seconds (0: never)", "0",
        "unmount and exit with status 1 when no viewer has connected within S seconds of the mount (0: retry "
        "for as long as the mount lives); `slfs open-uri` starts its mounts with it (30, or its own "
        "`-o connect_wait`)"),
    "uri_ports": OptionDoc(
        "P[:P...]", "ports besides the default a launch URI may mount for (slfs open-uri)", "none",
        "for `slfs open-uri` only: ports besides the default viewer port (9020, or `$SLFS_PORT`) a launch URI "
        "may mount for, separated by `:` (a comma would end the option); `slfs open-uri` takes only this and "
        "`connect_wait`"),
    "history_max": OptionDoc(
        "SIZE", "bound of the history store (256M, 1G; 0 disables it)", "256M",
        "bound of the history store (bytes, or `k`, `M`, `G`); the oldest versions are pruned first, never an "
        "item's last two; 0 disables it"),
    "history_days": OptionDoc(
        "N", "versions older than N days are pruned (0: no age bound)", "365",
        "versions older than N days are pruned (never an item's last two); 0: no age bound"),
    **{name: _KERNEL for name in PASSTHROUGH},
}


def option_words() -> list[str]:
    """The `-o` names as a shell completes them: `name=` for an option with a value, `name` for a flag."""
    return [name if opt.form is None else f"{name}=" for name, opt in OPTION_TABLE.items()]
