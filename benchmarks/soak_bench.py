"""Soak throughput: races per hour of ``open4wd-node soak`` on this machine, 3-node
races of the default length (1 lap of builtin:track-01, 60 s limit), on the embedded LocalCluster.

    nice -n 10 python -P benchmarks/soak_bench.py [--races 8] [--workers N] [--profiles clean] [--frames-per-tick N]

Runs the real command in a fresh report directory (without ``--workers``, as many races at once as their
measured CPU fits: docs/soak.md "Dask") and prints races per hour, the wall time, the load average before
and after (the machine is shared: the figure means little without it), the CPU seconds a race took (its
worker's and its processes', from the report's rows) with the pace those would allow on this machine's
cores if the races had them to themselves (cores × 3600 / CPU seconds per race), the soak's own CPU beside
the races' (its client, Dask's scheduler and nannies, the workers between races: the whole command's CPU
less the races'), every race's realtime ratio and the classes. Run it with an install's Python from outside
a checkout (``-P``), so that the soak, its workers and its nodes run the installed node with its compiled
frame (benchmarks/soak_cpu.py splits one race's CPU by process and phase).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def children_cpu_s() -> float:
    """CPU seconds of this process's children that ended (the soak command and every process under it)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--races", type=int, default=8)
    parser.add_argument("--workers", type=int, default=None, help="races at once (default: by measured CPU)")
    parser.add_argument("--profiles", default="clean")
    parser.add_argument("--nodes", default="3")
    parser.add_argument("--frames-per-tick", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()
        started, cpu_before = time.monotonic(), children_cpu_s()
        out = subprocess.run([sys.executable, "-P", "-m", "open4wd_node.cli.main", "--data-dir", tmp, "soak", "--races",
                              str(args.races), "--profiles", args.profiles, "--nodes", args.nodes, "--report", f"{tmp}/report",
                              "--frames-per-tick", str(args.frames_per_tick), "--json",
                              *(["--workers", str(args.workers)] if args.workers else [])],
                             capture_output=True, text=True, check=False)
        wall, command_cpu = time.monotonic() - started, children_cpu_s() - cpu_before
        load_after = os.getloadavg()
        report = json.loads(Path(f"{tmp}/report/report.json").read_text()) if out.stdout.strip() else {"races": []}
    if not out.stdout.strip():
        sys.exit(f"the soak printed nothing: {out.stderr[-2000:]}")
    summary = json.loads(out.stdout)
    rows = report["races"]
    cpu = [r["cpu_s"] for r in rows if r.get("cpu_s") is not None]
    ratios = [r["realtime_ratio"] for r in rows if r.get("realtime_ratio") is not None]
    at_once = args.workers or "by measured CPU"
    print(f"{args.races} races of {args.nodes} nodes ({args.profiles}), {at_once} at once: {wall:.0f} s, "
          f"{args.races * 3600 / wall:.0f} races/hour (soak's own count: {summary['session']['races_per_hour']})")
    if cpu:
        mean = statistics.mean(cpu)
        cores = len(os.sched_getaffinity(0))
        print(f"CPU per race: mean {mean:.1f} s (min {min(cpu):.1f}, max {max(cpu):.1f}); {cores} cores at most "
              f"{cores * 3600 / mean:.0f} races/hour if the races had them to themselves; a race's own wall time "
              f"{statistics.median(r['elapsed_s'] for r in rows):.0f} s (median)")
        own = command_cpu - sum(cpu)
        print(f"the soak's own CPU (client, scheduler, nannies, idle workers): {own:.1f} s, {own / len(cpu):.2f} s per race "
              f"({own / sum(cpu):.1%} of the races'); with it {cores * 3600 * len(cpu) / command_cpu:.0f} races/hour at most")
    if ratios:
        print(f"realtime_ratio: worst {min(ratios):.3f}, median {statistics.median(ratios):.3f}; every race: "
              + " ".join(f"{r:.3f}" for r in ratios))
    print(f"load average before {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}")
    print("classes: " + ", ".join(f"{n} {c}" for c, n in summary["classes"].items() if n))


if __name__ == "__main__":
    main()
