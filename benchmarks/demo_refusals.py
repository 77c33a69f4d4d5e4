"""How long ``open4wd-node demo`` takes to refuse a bad option (target: under a second, before any node
starts), measured as a user sees it: a fresh process from start to exit.

Run: ``.venv/bin/python benchmarks/demo_refusals.py [--repeat N]``. Prints, per refused command line, the
median wall time of N runs, the exit status and the error code. A benchmark: it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = [
    ["--laps", "-1"], ["--rounds", "99"],
    ["--track", "builtin:track-99"], ["--track", "builtin:chassis-01"], ["--track", "0" * 64],
    ["--corrupt", "7@10"], ["--corrupt", "0@123456789"],
    ["DATA-DIR-IS-A-FILE"],
]


def refuse(argv: list[str], scratch: Path) -> tuple[float, int, str]:
    data_dir = scratch / "data"
    if argv == ["DATA-DIR-IS-A-FILE"]:
        data_dir, argv = scratch / "a-file", []
        data_dir.write_text("not a directory\n")
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "--data-dir", str(data_dir), "demo", *argv],
                         capture_output=True, text=True, env=dict(os.environ), timeout=300)
    elapsed = time.perf_counter() - started
    code = out.stderr.split("]", 1)[0].removeprefix("error[") if out.stderr.startswith("error[") else "?"
    return elapsed, out.returncode, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()}")
    for argv in CASES:
        times, status, code = [], None, None
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as scratch:
                elapsed, status, code = refuse(argv, Path(scratch))
            times.append(elapsed)
        print(f"{' '.join(argv)[:40]:<42} median {statistics.median(times):.3f} s  max {max(times):.3f} s  "
              f"exit {status}  {code}")


if __name__ == "__main__":
    main()
