"""`python -m slfs.sim` / `slfs sim`: run the simulated viewer until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

import trio

from .server import SimViewer
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
        default=1,
        help="1: as documented; 2: newer viewer behaviour",
    )
    p.add_argument(
        "--handshake-timeout", type=float, default=30.0, help="seconds to wait for a handshake answer"
    )
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
    p.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    return p


async def _run(sim: SimViewer, port: int) -> None:
    # The signal handlers go in before "listening" is printed: a caller may signal right after it.
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(sim.serve, port)
            print(f"slfs-sim listening on 127.0.0.1:{bound}", flush=True)
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()


def build_sim(args: argparse.Namespace) -> SimViewer:
    """The SimViewer the parsed command line asks for."""
    world = load_world(args.world) if args.world else sample_world()
    if args.deferred_properties:
        for obj in world.objects.values():
            obj.deferred_properties = True
    return SimViewer(
        world,
        viewer_version=args.viewer_version,
        latency_ms=args.latency_ms,
        handshake_timeout=args.handshake_timeout,
        properties_delay=args.properties_delay if args.properties_delay >= 0 else None,
        deferred_owner_id=args.deferred_owner_id,
        compile_failure=args.compile_failure,
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    trio.run(_run, build_sim(args), args.port)
    return 0
