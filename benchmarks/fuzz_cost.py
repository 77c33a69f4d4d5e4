"""What one execution of a fuzz door costs, instrumented and not, and where the time goes.

    python benchmarks/fuzz_cost.py [--executions N] [--instrumented] [--profile] TARGET...

Each target runs the same inputs (its seeds, then the seeded mutator's mutations of them: what a campaign
meets) and prints executions per second of wall time and of CPU time (the door's cost on a shared
machine). ``--instrumented`` first instruments what the door's campaign instruments (``fuzz.instrument``;
``--instrument-all``: every package, as campaigns did before the scopes; run one target per process,
since a module is instrumented when it is first imported): without libFuzzer running this counts the
instrumentation's calls but not libFuzzer's own work at each edge. ``--remember-signatures`` remembers
Ed25519 answers as campaigns do (``fuzz.memo``); ``--profile`` prints the functions with the most time
of their own (cProfile): where a door's plain execution spends its time.
Figures are printed, never asserted (they depend on the machine and its load: give ``uptime`` with them).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    """Measure every named target."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--executions", type=int, default=200)
    parser.add_argument("--instrumented", action="store_true", help="instrument the door's scope")
    parser.add_argument("--instrument-all", action="store_true", help="instrument every package instead of the door's scope")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--remember-signatures", action="store_true", help="as campaigns do (fuzz.memo)")
    args = parser.parse_args()
    if args.instrumented or args.instrument_all:
        from fuzz.instrument import EVERYTHING, instrument

        for name in args.targets:
            instrument(name, EVERYTHING if args.instrument_all else None)
    from fuzz.doors import target
    from fuzz.harness import check, mutate
    from fuzz.memo import remember_signature_checks

    if args.remember_signatures:
        remember_signature_checks()

    for name in args.targets:
        chosen = target(name)
        rng = random.Random(f"{name}/cost")
        seeds = chosen.seeds()
        inputs = seeds + [mutate(rng.choice(seeds), rng, seeds) for _ in range(max(0, args.executions - len(seeds)))]
        check(chosen, inputs[0])  # fixtures built once, as in a campaign, before the clock starts
        profiler = cProfile.Profile() if args.profile else None
        started, cpu_started = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.enable()
        findings = sum(check(chosen, data) is not None for data in inputs)
        if profiler is not None:
            profiler.disable()
        seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
        mode = "all instrumented" if args.instrument_all else "instrumented" if args.instrumented else "plain"
        print(f"{name}: {len(inputs)} executions in {seconds:.2f} s = {len(inputs) / seconds:,.0f}/s, "
              f"{cpu_seconds:.2f} CPU s = {len(inputs) / cpu_seconds:,.0f} per CPU second ({mode}, {findings} findings, load "
              f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())})", flush=True)
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
    return 0


if __name__ == "__main__":
    sys.exit(main())
