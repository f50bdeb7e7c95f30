"""`slfs top [--mount M] [--once]`: a live full-screen view of a mount (issue 36, item 1): every
published object with its prims and scripts, each script's run state, last compile and last runtime
line, a scrolling pane of events and the connection in a header; keys act on the selected script.
It reads only through the client layer. model.py holds what is shown, frame.py the text of one
frame (`--once`), feed.py the reads, app.py the Textual view (imported only for the live view)."""

from __future__ import annotations

import argparse
import shutil
import sys

from ...client import MountClient
from ..human import is_terminal, use_colour, write_raw
from ..output import VerbError, emit_json
from .feed import snapshot
from .frame import EVENT_LINES, render

ONCE_WIDTH = 160  # --once off a terminal (and no COLUMNS): as wide as the tests' tmux window


def cmd_top(args: argparse.Namespace) -> int:
    if args.json and not args.once:
        raise VerbError("top --json: only with --once (the live view is for people)", 2)
    if not args.once and not (is_terminal(sys.stdout) and sys.stdin.isatty()):
        raise VerbError("top: the live view needs a terminal; use --once for one frame as text", 2)
    client = MountClient.find(args.mount)
    model = snapshot(client)
    if args.once:
        if args.json:
            emit_json({"header": model.header(), "status": model.status,
                       "rows": [model.rows[k].as_json() for k in model.order],
                       "events": [e.to_json() for e in list(model.events)[-EVENT_LINES:]]})
            return 0
        # The terminal's width (or $COLUMNS); off a terminal, ONCE_WIDTH.
        width = shutil.get_terminal_size((ONCE_WIDTH, 50)).columns
        write_raw(sys.stdout, render(model, width, use_colour(sys.stdout)))
        return 0
    from .app import run_app  # Textual: only for the live view

    return run_app(client, model)

