"""``open4wd-node sim``: run a headless race of the demo round and print its hash, standings and timing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from open4wd_node.runtime.choices import CARS, FRAMES
from open4wd_node.runtime.values import SEED

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def register(subparsers: Subparsers) -> None:
    """Declare ``sim`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("sim", help="run a headless race and print the final state hash and standings")
    parser.add_argument("--cars", type=CARS, default=8, help="number of cars, 1..8 (default 8)")
    parser.add_argument("--frames", type=FRAMES, default=3600, help="frames to run at most (default 3600 = 60 s)")
    parser.add_argument("--seed", type=SEED, default=0, help="world seed and random-input seed (default 0)")
    parser.add_argument("--inputs", choices=("random", "none"), default="random", help="skill inputs (default random)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Run the demo round headless and print its hash, standings and step timing; exit 0."""
    import json
    import statistics
    import time

    from sim_core import ENGINE_ID
    from sim_core.world import World
    from sim_core.harness.scripted import RandomInputs, no_inputs

    world = World.demo(cars=args.cars, seed=args.seed)
    source = RandomInputs([m.chip_skills for m in world.models], args.seed).next_frame if args.inputs == "random" \
        else no_inputs
    timings = []
    for _ in range(args.frames):
        if world.done:
            break
        frame_inputs = source()
        started = time.perf_counter_ns()
        world.step(frame_inputs)
        timings.append(time.perf_counter_ns() - started)
    median_us = statistics.median(timings) / 1000 if timings else 0.0
    report: dict[str, Any] = {
        "engine": ENGINE_ID,
        "frames": world.frame,
        "done": world.done,
        "end_reason": world.end_reason,
        "state_hash": world.state_hash().hex(),
        "standings": world.standings(),
        "step_us_median": round(median_us, 1),
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"engine {ENGINE_ID}: {report['frames']} frames, round "
          f"{'over (' + report['end_reason'] + ')' if world.done else 'still running'}")
    print(f"state hash {report['state_hash']}")
    print("rank slot status     laps  progress_m  finished_frame  points")
    for row in report["standings"]:
        finished = "-" if row["finished_frame"] is None else str(row["finished_frame"])
        print(f"{row['rank']:>4} {row['slot']:>4} {row['status']:<10} {row['laps']:>4} "
              f"{row['progress_um'] / 1e6:>11.3f} {finished:>15} {row['points']:>7}")
    print(f"step median {median_us:.1f} µs ({1e6 / 60 / median_us if median_us else 0:.0f}× real time)")
    return 0
