"""Where a soak race's CPU goes: soak races run one after the other through the soak's own race body
(``open4wd_node.soak.race.run_race``, what a Dask task runs), each node process's CPU split by phase.

    nice -n 10 python -P benchmarks/soak_cpu.py [--races 3] [--nodes 3] [--profile clean] [--frames-per-tick N]

Run it with an install's Python from outside a checkout (``-P``), so that the nodes, the harness and the
replays import the installed node with its compiled frame, as a user's soak does. The races share one
derived cache, as the races of one Dask worker do (the first race's host bakes the built-ins). For each race:

- per node process, its CPU time (``/proc/PID/stat``, read as its events arrive) up to its first room event
  (``room-created`` for the host, ``joined`` for a joiner: interpreter, imports, identity, built-in assets,
  listener, the join), then the room until the locked start (``countdown``), the countdown until round 1's
  ``race-start``, the race loop until its ``round-end``, and what follows until it exited (the last
  barrier, the log's fsync, the exit); the race loop as the node's own budget counted it (``result``
  ``cpu``, the pump thread only) beside it;
- the replays of the race logs (the CPU of the replay processes);
- the harness's own CPU (the race's trio run in this process: proxies, event reading, the hang watch,
  classification).

Beside them, measured in the same run as a scale: the CPU of a bare interpreter start
(``python -P -c pass``) and of ``import trio``. Every figure is printed with the load average. The soak's
own processes (Dask's scheduler, nannies and idle workers) are measured by ``soak_bench.py``.
"""

from __future__ import annotations

import argparse
import inspect
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from open4wd_node.soak import race as soak_race
from open4wd_node.soak.plan import SoakOptions, plan_race
from open4wd_node.soak.profiles import Profile
from sim_core.compiled import step_is_compiled

TICK_S = 1 / os.sysconf("SC_CLK_TCK")
PHASES = ("start-up", "room", "countdown", "race loop", "after")
MARKS = {"room-created": 0, "joined": 0, "countdown": 1, "race-start": 2, "round-end": 3}  # phase that ends


def proc_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * TICK_S


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class RaceCpu:
    """One race's CPU by part, filled in by the hooks around the soak's race body."""

    def __init__(self) -> None:
        self.marks: dict[int, dict[int, float]] = {}  # node -> phase index -> CPU when that phase ended
        self.pump_s: dict[int, float] = {}  # node -> its budget's race-loop CPU (result event)
        self.nodes_s = 0.0  # every node process, start to exit
        self.harness_s = 0.0
        self.replay_s = 0.0
        self.replays = 0

    def phases(self) -> dict[str, float]:
        """CPU seconds of each phase, summed over the nodes (``after``: the rest of the processes' CPU)."""
        sums = dict.fromkeys(PHASES, 0.0)
        for marks in self.marks.values():
            previous = 0.0
            for index, phase in enumerate(PHASES[:-1]):
                if index in marks:
                    sums[phase] += marks[index] - previous
                    previous = marks[index]
        sums["after"] = self.nodes_s - sum(sums.values())
        return sums


def instrument(cpu: list[RaceCpu]) -> None:
    """Hooks around the race body's parts: the harness's event reader, its trio run and the replays."""
    on_event, race, replay = soak_race._Harness.on_event, soak_race._race, soak_race._replay

    def on_event_measured(self: Any, index: int, event: dict[str, Any]) -> None:
        kind = event.get("event")
        process = self.runs[index].process
        if kind in MARKS and event.get("round", 0) == 0 and process is not None:
            seconds = proc_cpu_s(process.pid)
            if seconds is not None:
                cpu[-1].marks.setdefault(index, {}).setdefault(MARKS[kind], seconds)
        if kind == "result" and event.get("cpu"):
            cpu[-1].pump_s[index] = event["cpu"]["per_frame_us"] * event["cpu"]["frames"] / 1e6
        on_event(self, index, event)

    async def race_measured(*args: Any) -> Any:
        children, own = children_cpu_s(), self_cpu_s()
        try:
            return await race(*args)
        finally:
            cpu[-1].nodes_s = children_cpu_s() - children
            cpu[-1].harness_s = self_cpu_s() - own

    def replay_measured(*args: Any) -> None:
        before = children_cpu_s()
        replay(*args)
        cpu[-1].replay_s += children_cpu_s() - before
        cpu[-1].replays += 1

    soak_race._Harness.on_event = on_event_measured  # type: ignore[method-assign]
    soak_race._race = race_measured  # type: ignore[assignment]
    soak_race._replay = replay_measured  # type: ignore[assignment]


def process_cpu_s(argv: list[str], runs: int = 5) -> float:
    """The least CPU seconds of ``runs`` processes of ``argv`` (children's rusage)."""
    figures = []
    for _ in range(runs):
        before = children_cpu_s()
        subprocess.run(argv, check=True, capture_output=True)
        figures.append(children_cpu_s() - before)
    return min(figures)


def load() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--races", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--profile", default="clean", choices=[str(p) for p in Profile])
    parser.add_argument("--frames-per-tick", type=int, default=1)
    args = parser.parse_args()
    print(f"load average at start {load()}; the frame {'compiled' if step_is_compiled() else 'NOT compiled'}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    bare = process_cpu_s([sys.executable, "-P", "-c", "pass"])
    trio_only = process_cpu_s([sys.executable, "-P", "-c", "import trio"])
    print(f"scale: a bare interpreter start {bare * 1000:.0f} ms of CPU, `import trio` {trio_only * 1000:.0f} ms")
    cpu: list[RaceCpu] = []
    instrument(cpu)
    shares_cache = "cache" in inspect.signature(soak_race.run_race).parameters  # an older install's races bake their own
    options = SoakOptions(races=args.races, nodes=(args.nodes, args.nodes), profiles=(Profile(args.profile),), seed=1,
                          frames_per_tick=args.frames_per_tick)
    rows = []
    worker = Path(tempfile.mkdtemp(prefix="open4wd-soak-cpu-"))  # as a Dask worker's directory: its races share a cache
    for index in range(args.races):
        cpu.append(RaceCpu())
        plan = plan_race(options, index)
        started, before = time.monotonic(), children_cpu_s() + self_cpu_s()
        with tempfile.TemporaryDirectory() as tmp:
            result = soak_race.run_race(plan, Path(tmp) / "race", *([worker / "cache"] if shares_cache else []))
        total = children_cpu_s() + self_cpu_s() - before
        race = cpu[-1]
        phases = race.phases()
        rows.append((total, phases, race))
        print(f"race {index}: {result.verdict.race_class}, {result.frames + 1} frames, "
              f"realtime_ratio {result.row()['realtime_ratio']}, {time.monotonic() - started:.0f} s, "
              f"{total:.2f} CPU-s (load {load()})")
    shutil.rmtree(worker, ignore_errors=True)
    print(f"\nCPU seconds per race (mean of {len(rows)}; per node: / {args.nodes}), load average at end {load()}")
    mean_total = statistics.mean(r[0] for r in rows)
    parts: list[tuple[str, float]] = [(f"nodes: {phase}", statistics.mean(r[1][phase] for r in rows)) for phase in PHASES]
    parts += [("nodes: race loop by their budgets (pump thread)", statistics.mean(sum(r[2].pump_s.values()) for r in rows)),
              (f"replays ({rows[0][2].replays} processes)", statistics.mean(r[2].replay_s for r in rows)),
              ("harness (this process: proxies, events, verdict)", statistics.mean(r[2].harness_s for r in rows))]
    for name, seconds in parts:
        print(f"  {name:52} {seconds:6.2f} s  {seconds / mean_total:6.1%}  ({seconds / bare:5.0f}× a bare start)")
    print(f"  {'total':52} {mean_total:6.2f} s  (min {min(r[0] for r in rows):.2f}, max {max(r[0] for r in rows):.2f})")


if __name__ == "__main__":
    main()
