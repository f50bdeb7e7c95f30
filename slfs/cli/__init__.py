"""The `slfs` command line: the parser and main(). The verbs are in mount.py (mount, umount, demo),
verbs.py (the control verbs, over slfs/client), edit.py (slfs edit), uri.py (slfs open-uri), top/
(slfs top), mcp.py (slfs mcp) and completion.py (slfs completion);
`slfs sim` is the simulator's own (slfs/sim/cli.py)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import NoReturn

from .. import __version__, paths
from ..protocol.text import printable
from . import completion, mcp, mount
from .output import begin_run, emit_json_error
from .verbs import VERBS, add_verb_parsers, run_verb

log = logging.getLogger("slfs")


class PrintableFormatter(logging.Formatter):
    """Log lines hold names, compiler lines and chat from the network, and people `tail -f` the log:
    no control character but tab and newline reaches the file (slfs/protocol/text.py printable)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def setup_logging(verbose: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler])
    if not verbose:
        for noisy in ("trio-websocket", "trio_websocket"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


class Parser(argparse.ArgumentParser):
    """argparse's parser, keeping its last usage error for main() (a `--json` verb prints it as
    its JSON error object too)."""

    last_error = ""

    def error(self, message: str) -> NoReturn:
        Parser.last_error = f"{self.prog}: {message}"
        super().error(message)


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="slfs", description="Mount what the Second Life viewer publishes.")
    p.add_argument("--version", action="version", version=f"slfs {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    mount.add_parsers(sub)

    sub.add_parser("sim", help="run the simulated viewer (slfs sim --help)", add_help=False)
    add_verb_parsers(sub)
    mcp.add_parser(sub)
    completion.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "sim":
        from ..sim.cli import main as sim_main

        return sim_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        verb = next((a for a in argv if not a.startswith("-")), None)  # after -v, if given
        if exc.code == 2 and verb in VERBS and "--json" in argv:
            begin_run()
            emit_json_error(Parser.last_error, None, 2)
        raise
    setup_logging(args.verbose)
    try:
        return _dispatch(parser, args, argv)
    except paths.RuntimeDirError as exc:  # an unsafe or unusable runtime dir: refused, never a traceback
        print(f"slfs: {exc}", file=sys.stderr)
        return 1


def _dispatch(parser: argparse.ArgumentParser, args: argparse.Namespace, argv: list[str]) -> int:
    if args.command == "mount":
        return mount.cmd_mount(args, argv)
    if args.command == "umount":
        return mount.cmd_umount(args.mountpoint)
    if args.command == "demo":
        return mount.cmd_demo(args)
    if args.command in VERBS:
        return run_verb(args)
    if args.command == "mcp":
        return mcp.cmd_mcp(args)
    if args.command == "completion":
        return completion.cmd_completion(args, build_parser())
    parser.print_help()
    return 2
