"""`slfs mcp`: the mount as a Model Context Protocol server on stdio (slfs/mcp). Not a control verb
of verbs.py: it prints nothing of its own (standard output is the protocol's wire), so it has no
--json."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mcp", help="serve the mount to coding agents as a Model Context Protocol server on stdio")
    p.add_argument("--mount", metavar="MOUNT", help="the mount to use (default: the only running mount)")
    p.add_argument("--auto-mount", action="store_true",
                   help="with no mount running, mount ~/sl for the default viewer port, as slfs edit does")


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..mcp.server import run_stdio  # the MCP SDK: only for this verb

    return run_stdio(args.mount, args.auto_mount)
