"""`slfs mount`, `slfs umount` and `slfs demo`: a mount's life from the command line. The daemon
(pyfuse3, trio) is imported only when one of them runs: the control verbs start faster without it."""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from .. import paths
from ..addresses import is_loopback
from ..client.mounts import default_port
from ..debug_hooks import Debug
from ..model.option_table import OPTION_TABLE
from ..model.options import Options, parse_options


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a TCP port (1-65535)")
    return port


def _host(text: str) -> str:
    """A host name or address; an IPv6 address may come in brackets, as in a URL."""
    if text.startswith("[") and text.endswith("]"):
        return text[1:-1]
    return text


def add_parsers(sub: Any) -> None:
    """Add mount, umount and demo to the `slfs` subparsers."""
    m = sub.add_parser("mount", help="mount the viewer's published objects",
                       description="Mount what the Second Life viewer at HOST:PORT publishes at MOUNTPOINT.",
                       epilog=options_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    m.add_argument("mountpoint", metavar="MOUNTPOINT", help="an empty directory to mount on")
    m.add_argument("-f", "--foreground", action="store_true", help="stay in the foreground")
    m.add_argument("--host", type=_host, default="127.0.0.1",
                   help="the viewer's address (default: %(default)s; another than loopback needs "
                        "-o allow_remote_viewer)")
    m.add_argument("--port", type=_port, default=default_port(),
                   help="the viewer's external-editor port (default: %(default)s, or $SLFS_PORT)")
    m.add_argument("-o", dest="options", action="append", default=[], metavar="OPT[,OPT...]",
                   help="mount options, comma-separated (listed below; slfs(5) says more)")
    m.add_argument("--ready-fd", type=int, help=argparse.SUPPRESS)

    u = sub.add_parser("umount", help="unmount")
    u.add_argument("mountpoint", metavar="MOUNTPOINT", help="the mount to unmount (after its pending saves)")

    d = sub.add_parser("demo", help="mount the built-in simulated viewer's sample world",
                       epilog=options_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("mountpoint", nargs="?", metavar="MOUNTPOINT", help="where to mount (default: ~/slfs-demo)")
    d.add_argument("-o", dest="options", action="append", default=[], metavar="OPT[,OPT...]",
                   help="mount options, comma-separated (as slfs mount takes them)")


def options_epilog() -> str:
    """The `-o` options, from the one table model/option_table.py keeps (OPTION_TABLE)."""
    rows = [(name if opt.form is None else f"{name}={opt.form}",
             opt.help if opt.default in ("", "none", "off") or "`" in opt.default
             else f"{opt.help} (default {opt.default})")
            for name, opt in OPTION_TABLE.items()]
    width = min(30, max(len(left) for left, _ in rows))
    lines = [f"  {left:<{width}}  {text}" if len(left) <= width else f"  {left}\n  {'':<{width}}  {text}"
             for left, text in rows]
    return "mount options (-o):\n" + "\n".join(lines)


def _options(raw: list[str]) -> Options | None:
    try:
        return parse_options(raw)
    except ValueError as exc:
        print(f"slfs: {exc}", file=sys.stderr)
        return None


def cmd_mount(args: argparse.Namespace, argv: list[str]) -> int:
    from ..daemon import Daemon, run_foreground, spawn_background

    options = _options(args.options)
    if options is None:
        return 2
    if not options.allow_remote_viewer and not is_loopback(args.host):
        print(f"slfs: --host {args.host}: not a loopback address; slfs talks only to a viewer on this machine, "
              "whose listener it can check is ours (-o allow_remote_viewer to connect anyway)", file=sys.stderr)
        return 2
    # Refused here, before anything starts, when it is not ours alone: the runtime dir (a
    # background mount would otherwise say only that its daemon exited). A short socket dir, when
    # one is needed, is the daemon's own (mkdtemp), so none is made here.
    paths.control_socket_path(args.mountpoint, make_short=False)
    if not args.foreground:
        child = [a for a in argv if a not in ("-v", "--verbose")]
        child.insert(child.index("mount") + 1, "-f")
        if args.verbose:
            child.insert(0, "-v")
        return spawn_background(child, args.mountpoint)
    daemon = Daemon(args.mountpoint, args.host, args.port, options, debug=Debug.from_environ(os.environ))
    return run_foreground(daemon, args.ready_fd)


def cmd_umount(mountpoint: str) -> int:
    from ..daemon import is_mounted, unmount
    from ..holders import mount_holders
    from ..registry import daemon_alive, read_registry, registry_path, remove_dead_entry

    real = os.path.realpath(mountpoint)
    entry = next((e for e in read_registry() if e.get("mountpoint") == real), None)
    if not is_mounted(real):
        print(f"slfs: {mountpoint}: not mounted", file=sys.stderr)
        return 1
    if not unmount(real):
        holders = mount_holders(real)
        why = (f"it is in use by {', '.join(map(str, holders))}: close their files there (and leave it), then "
               "try again" if holders else f"is it busy? see: fuser -m {mountpoint}")
        print(f"slfs: could not unmount {mountpoint}: {why}", file=sys.stderr)
        return 1
    if entry is not None:
        # Wait for the daemon to finish its pending saves and exit.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and registry_path(real).exists() and daemon_alive(int(entry["pid"])):
            time.sleep(0.05)
    # A daemon killed with SIGKILL (the mount answered ENOTCONN) left its registry file: with the
    # mount gone, so is the entry. A daemon that exited normally removed its own.
    remove_dead_entry(real)
    return 0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cmd_demo(args: argparse.Namespace) -> int:
    from ..daemon import Daemon, run_foreground
    from ..sim import SimViewer, sample_world

    options = _options(args.options)
    if options is None:
        return 2
    mountpoint = Path(args.mountpoint or Path.home() / "slfs-demo").absolute()
    mountpoint.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    sim = SimViewer(sample_world())

    async def start_sim(nursery: object) -> None:
        await nursery.start(sim.serve, port)  # type: ignore[attr-defined]

    daemon = Daemon(str(mountpoint), "127.0.0.1", port, options, debug=Debug.from_environ(os.environ),
                    extra_tasks=[start_sim])
    print(f"""slfs demo: simulated viewer on 127.0.0.1:{port}, mounted at {mountpoint}
Try, in another terminal:
  ls -l {mountpoint}                 # one folder per published object
  cat {mountpoint}/*/*.lsl           # scripts
  cat {mountpoint}/.slfs/status      # connection and counts
  getfattr -d {mountpoint}/*/*.luau  # the in-world ids and state
Press Ctrl-C here to unmount.""", flush=True)
    return run_foreground(daemon)
