"""``open4wd-node synctest``: GGRS-style determinism check: roll back D frames every frame and compare."""

from __future__ import annotations

from typing import TYPE_CHECKING

from open4wd_node.runtime.choices import CARS, FRAMES
from open4wd_node.runtime.values import SEED, IntRange

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


CHECK_DISTANCE = IntRange(1, 12)  # at most STATE_BUFFER_MAX_FRAMES saved states back
TRACKS = ("builtin:track-01", "builtin:track-02", "builtin:track-03")
"""The built-in tracks: track-03 has every modelled feature (rain, an oil slick, a magnet plate)."""


def register(subparsers: Subparsers) -> None:
    """Declare ``synctest`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser(
        "synctest", help="every frame, roll back and re-simulate D frames with random inputs and compare hashes")
    parser.add_argument("--cars", type=CARS, default=8, help="number of cars, 1..8 (default 8)")
    parser.add_argument("--frames", type=FRAMES, default=600, help="frames to run (default 600)")
    parser.add_argument("--check-distance", type=CHECK_DISTANCE, default=7, help="rollback distance D, 1..12 (default 7)")
    parser.add_argument("--seed", type=SEED, default=0, help="world and input seed (default 0)")
    parser.add_argument("--track", choices=TRACKS, default="builtin:track-02",
                        help="the built-in track the built-in cars race (default builtin:track-02, the demo round; "
                             "builtin:track-03: rain, oil and a magnet plate)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Run the rollback determinism check; exit 0 when every re-simulation matched, 1 at the first mismatch."""
    import time

    from sim_core.assets.demo_round import builtin_demo_track, builtin_demo_vehicles
    from sim_core.world import World
    from sim_core.harness.scripted import RandomInputs
    from sim_core.harness.synctest import run_synctest

    world = World.new(builtin_demo_track(args.track), builtin_demo_vehicles(args.cars), seed=args.seed)
    inputs = RandomInputs([m.chip_skills for m in world.models], args.seed)
    started = time.perf_counter()
    result = run_synctest(world, args.frames, args.check_distance, inputs.next_frame)
    elapsed = time.perf_counter() - started
    if not result.ok:
        print(f"synctest FAILED at frame {result.mismatch_frame} (check distance {args.check_distance}):")
        for name, expected, actual in result.differing_fields:
            print(f"  {name}: first pass {expected}, re-simulation {actual}")
        return 1
    print(f"synctest ok: {result.frames} frames, check distance {args.check_distance}, "
          f"{result.resimulated_frames} re-simulated frames, {args.track}, {elapsed:.1f} s; "
          f"final hash {result.final_hash.hex()}")
    return 0
