"""Soak throughput: races per hour of ``open4wd-node soak`` on this machine, 3-node
races of the default length (1 lap of builtin:track-01, 60 s limit), on the embedded LocalCluster.

    nice -n 10 python benchmarks/soak_bench.py [--races 8] [--workers N] [--profiles clean]

Runs the real command in a fresh report directory (without ``--workers``, as many races at once as their
measured CPU fits: docs/soak.md "Dask") and prints races per hour, the wall time, the load average before
and after (the machine is shared: the figure means little without it), the CPU seconds a race took (its
worker's and its processes', from the report's rows) with the pace those would allow on this machine's
cores if the races had them to themselves (cores × 3600 / CPU seconds per race), the realtime ratios and
the classes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--races", type=int, default=8)
    parser.add_argument("--workers", type=int, default=None, help="races at once (default: by measured CPU)")
    parser.add_argument("--profiles", default="clean")
    parser.add_argument("--nodes", default="3")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", tmp, "soak", "--races",
                              str(args.races), "--profiles", args.profiles, "--nodes", args.nodes, "--report", f"{tmp}/report",
                              "--json", *(["--workers", str(args.workers)] if args.workers else [])],
                             capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
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
    if ratios:
        print(f"realtime_ratio: worst {min(ratios):.3f}, median {statistics.median(ratios):.3f}")
    print(f"load average before {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}")
    print("classes: " + ", ".join(f"{n} {c}" for c, n in summary["classes"].items() if n))


if __name__ == "__main__":
    main()
