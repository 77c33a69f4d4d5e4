"""Run atheris campaigns on several targets one after the other and write one summary line per target.

    python -m fuzz.campaign --out DIR [--runs N] [--max-seconds S] [--instrument-all] TARGET...

Each target runs in its own process (``python -m fuzz.run``) until ``--runs`` executions or
``--max-seconds``, whichever comes first; ``DIR/summary.jsonl`` gets its executions, edges (libFuzzer's
``cov``), features (``ft``), corpus size, findings (crash, timeout and out-of-memory files), the CPU
seconds the campaign's process used and the machine's load average, and ``DIR/TARGET.log`` libFuzzer's
own output. On a shared machine executions per second of wall time say more about the load than about
the door (a ``nice -n 19`` campaign gets what others leave); executions per CPU second are the door's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

_STATUS = re.compile(r"#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")


def summarise(target: str, log: str, out: Path, seconds: float, cpu_seconds: float = 0.0) -> dict[str, object]:
    """The figures of one campaign from libFuzzer's output and the files it left."""
    executed = re.findall(r"stat::number_of_executed_units: (\d+)", log)
    status = _STATUS.findall(log)
    last = status[-1] if status else ("0", "0", "0", "0")
    findings = sorted(p.name for p in out.glob("*") if p.name.split("-")[0] in ("crash", "timeout", "oom", "leak"))
    executions = int(executed[-1]) if executed else int(last[0])
    return {"target": target, "executions": executions, "edges": int(last[1]),
            "features": int(last[2]), "corpus": int(last[3]), "findings": findings, "seconds": round(seconds),
            "cpu_seconds": round(cpu_seconds), "per_cpu_second": round(executions / cpu_seconds) if cpu_seconds else None,
            "load": [round(x, 2) for x in os.getloadavg()]}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    """Run every named target's campaign in turn."""
    parser = argparse.ArgumentParser(prog="python -m fuzz.campaign", description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--max-seconds", type=int, default=600)
    parser.add_argument("--instrument-all", action="store_true", help="passed to fuzz.run: every package instrumented")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for target in args.targets:
        target_out = args.out / target
        started, cpu_before = time.monotonic(), _children_cpu()
        run = subprocess.run(
            [sys.executable, "-m", "fuzz.run", target, "--runs", str(args.runs), "--out", str(target_out),
             *(["--instrument-all"] if args.instrument_all else []), "--",
             f"-max_total_time={args.max_seconds}"],
            capture_output=True, text=True, errors="replace",
        )
        (args.out / f"{target}.log").write_text(run.stdout + run.stderr)
        line = summarise(target, run.stdout + run.stderr, target_out, time.monotonic() - started,
                         _children_cpu() - cpu_before)
        with (args.out / "summary.jsonl").open("a") as summary:
            summary.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
