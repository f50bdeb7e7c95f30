"""`python -m slfs.sim` / `slfs sim`: run the simulated viewer until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

import trio

from .generation import GENERATIONS
from .server import SimViewer
from .winpaths import WINDOWS_MODES
from .world import load_world, sample_world


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="slfs sim", description="Run a simulated Second Life viewer.")
    p.add_argument(
        "--port", type=int, default=9020, help="port on 127.0.0.1 (0 picks a free one; default 9020)"
    )
    p.add_argument("--world", help="world JSON file (default: the built-in sample world)")
    p.add_argument("--latency-ms", type=float, default=0, help="delay before answering every call")
    p.add_argument(
        "--viewer-version",
        type=int,
        choices=(1, 2),
        default=None,
        help="1: as documented (default); 2: newer viewer behaviour",
    )
    p.add_argument(
        "--viewer-generation",
        choices=GENERATIONS,
        default=None,
        help="play one generation of the viewer's shipped C++ (research viewer-source.md): G1-G3 "
        "build on --viewer-version 1, G4 is version 2",
    )
    p.add_argument(
        "--handshake-timeout",
        type=float,
        default=None,
        help="seconds to wait for a handshake answer (default 30; G1/G2: for ever)",
    )
    p.add_argument(
        "--windows-paths",
        choices=WINDOWS_MODES,
        default=None,
        help="play a Windows viewer: under Wine (wine) or on Windows with the client in WSL2 (wsl); "
        "every path the viewer names is a Windows path",
    )
    p.add_argument(
        "--wine-prefix", metavar="DIR", default=None, help="wine: the Wine prefix (default $WINEPREFIX, else ~/.wine)"
    )
    p.add_argument(
        "--windows-mount", metavar="DIR", default=None, help="wsl: where Windows' drives are mounted (default /mnt)"
    )
    p.add_argument("--windows-user", metavar="NAME", default="resident", help="the Windows user (default resident)")
    p.add_argument(
        "--compile-failure",
        choices=("stoi", "nul"),
        default=None,
        help="answer an LSL save whose compile fails like some viewer builds: stoi = -32603 "
        '"Internal error: stoi", nul = a diagnostic made of NUL characters (default: diagnostics)',
    )
    p.add_argument(
        "--deferred-properties",
        action="store_true",
        help="V2: every object is published with placeholder names and permissions; the real ones "
        "follow as object.update (see --properties-delay)",
    )
    p.add_argument(
        "--properties-delay",
        type=float,
        default=0.05,
        help="V2: seconds until deferred properties arrive (default 0.05; negative: never)",
    )
    p.add_argument(
        "--deferred-owner-id",
        choices=("absent", "null"),
        default="absent",
        help="V2: owner_id while properties are deferred: left out (default) or the null UUID",
    )
    p.add_argument(
        "--external-editor",
        metavar="CMD",
        default=None,
        help='live sync: the external editor the viewer starts on a script\'s temp file ("%%s" is '
        "the path, appended when absent; split like a shell would, never run by one; default: "
        "$LL_SCRIPT_EDITOR, else none)",
    )
    p.add_argument(
        "--open-editor",
        metavar="ITEM",
        action="append",
        default=[],
        help="live sync: open the viewer's script editor on this script (item id, or name) once "
        "listening; prints its script id and temp file (repeatable)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    return p


async def _run(sim: SimViewer, port: int, opened: tuple[str, ...] | list[str] = ()) -> None:
    # The signal handlers go in before "listening" is printed: a caller may signal right after it.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(sim.serve, port)
            print(f"slfs-sim listening on 127.0.0.1:{bound}", flush=True)
            for item_id in opened:
                script_id, path = await sim.open_script_editor(item_id)
                print(f"slfs-sim script editor {script_id} {path}", flush=True)
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()
    # the viewer closing: its script editors close, and their temp files go
    for script_id in sim.live_script_ids:
        try:
            os.unlink(sim.live_editor(script_id).path)
        except OSError:
            pass


def build_sim(args: argparse.Namespace) -> SimViewer:
    """The SimViewer the parsed command line asks for."""
    world = load_world(args.world) if args.world else sample_world()
    if args.deferred_properties:
        for obj in world.objects.values():
            obj.deferred_properties = True
    return SimViewer(
        world,
        viewer_version=args.viewer_version,
        generation=args.viewer_generation,
        windows_paths=args.windows_paths,
        wine_prefix=args.wine_prefix,
        windows_mount=args.windows_mount,
        windows_user=args.windows_user,
        latency_ms=args.latency_ms,
        handshake_timeout=args.handshake_timeout,
        properties_delay=args.properties_delay if args.properties_delay >= 0 else None,
        deferred_owner_id=args.deferred_owner_id,
        compile_failure=args.compile_failure,
        external_editor=args.external_editor,
    )


def resolve_items(sim: SimViewer, names: list[str]) -> list[str]:
    """Item ids for --open-editor: an id of any item, or the name of a script (objects first, then
    the agent's inventory)."""
    out = []
    scripts = [i for o in sim.world.objects.values() for p in o.prims() for i in p.inventory]
    scripts += sim.world.agent_inventory
    for name in names:
        match = next((i for i in scripts if i.item_id == name.lower()), None)
        match = match or next((i for i in scripts if i.is_script and i.name == name), None)
        if match is None:
            raise SystemExit(f"slfs sim: --open-editor {name!r}: no such item")
        out.append(match.item_id)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    try:
        sim = build_sim(args)
    except ValueError as exc:  # e.g. --viewer-version 2 with --viewer-generation G1
        parser.error(str(exc))
    trio.run(_run, sim, args.port, resolve_items(sim, args.open_editor))
    return 0
