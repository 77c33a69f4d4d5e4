"""Soak throughput: races per hour of ``open4wd-node soak`` on this machine, 3-node
races of the default length (1 lap of builtin:track-01, 60 s limit), on the embedded LocalCluster.

    nice -n 10 python benchmarks/soak_bench.py [--races 8] [--workers 2] [--profiles clean]

Runs the real command in a fresh report directory and prints races per hour, the wall time, the load
average before and after (the machine is shared: the figure means little without it), and the classes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--races", type=int, default=8)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--profiles", default="clean")
    parser.add_argument("--nodes", default="3")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        load_before = os.getloadavg()
        started = time.monotonic()
        out = subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", tmp, "soak", "--races",
                              str(args.races), "--profiles", args.profiles, "--nodes", args.nodes, "--workers",
                              str(args.workers), "--report", f"{tmp}/report", "--json"],
                             capture_output=True, text=True, check=False)
        wall = time.monotonic() - started
        load_after = os.getloadavg()
    if not out.stdout.strip():
        sys.exit(f"the soak printed nothing: {out.stderr[-2000:]}")
    summary = json.loads(out.stdout)
    print(f"{args.races} races of {args.nodes} nodes ({args.profiles}), {args.workers} at once: {wall:.0f} s, "
          f"{args.races * 3600 / wall:.0f} races/hour (soak's own count: {summary['session']['races_per_hour']})")
    print(f"load average before {load_before[0]:.2f} / {load_before[1]:.2f} / {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}")
    print("classes: " + ", ".join(f"{n} {c}" for c, n in summary["classes"].items() if n))


if __name__ == "__main__":
    main()
