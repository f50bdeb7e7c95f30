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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, stream=sys.stderr)
    world = load_world(args.world) if args.world else sample_world()
    sim = SimViewer(
        world,
        viewer_version=args.viewer_version,
        latency_ms=args.latency_ms,
        handshake_timeout=args.handshake_timeout,
    )
    trio.run(_run, sim, args.port)
    return 0
