"""Benchmark of the simulation core: median µs of an 8-car step, save, load, hash and an 8-frame rollback.

Run: ``.venv/bin/python benchmarks/sim_bench.py [--frames N] [--seed S]``. Targets (issue 3): step ≤ 200 µs,
save + load ≤ 40 µs, hash ≤ 40 µs, 8-frame rollback (load + 8 steps) ≤ 2 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

from sim_core import World
from sim_core.harness.scripted import RandomInputs


def median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1800, help="frames of the measured race (default 1800)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    clock = time.perf_counter_ns
    world = World.demo(cars=8, seed=args.seed)
    inputs = RandomInputs([m.chip_skills for m in world.models], args.seed)
    recorded = [inputs.next_frame() for _ in range(args.frames)]
    step, save, load, digest, rollback = [], [], [], [], []
    history: list[bytes] = []
    for frame_inputs in recorded:
        if world.done:
            break
        t0 = clock()
        data = world.save_state()
        t1 = clock()
        world.load_state(data)
        t2 = clock()
        world.state_hash()
        t3 = clock()
        world.step(frame_inputs)
        t4 = clock()
        save.append(t1 - t0)
        load.append(t2 - t1)
        digest.append(t3 - t2)
        step.append(t4 - t3)
        history.append(data)
        if len(history) > 8 and world.frame % 10 == 0:  # load the state 8 frames back, re-simulate 8 frames
            start = world.frame - 8
            t5 = clock()
            world.load_state(history[start])
            for f in range(start, start + 8):
                world.step(recorded[f])
            rollback.append(clock() - t5)
    print(f"frames measured       {len(step)} (8 cars, random inputs, seed {args.seed})")
    print(f"step median           {median_us(step):8.1f} µs  ({1e6 / 60 / median_us(step):.0f}× real time)")
    print(f"save median           {median_us(save):8.1f} µs")
    print(f"load median           {median_us(load):8.1f} µs")
    print(f"save + load median    {median_us([a + b for a, b in zip(save, load, strict=True)]):8.1f} µs")
    print(f"hash median           {median_us(digest):8.1f} µs")
    print(f"8-frame rollback      {median_us(rollback):8.1f} µs  (load + 8 steps, {len(rollback)} samples)")


if __name__ == "__main__":
    main()
