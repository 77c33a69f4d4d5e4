"""Races as Dask tasks: an embedded ``LocalCluster`` by default, or an existing cluster (``--scheduler``).

Each race is one task (``race_task``: a plan in, a row and the packed files of a race worth keeping
out, plain data both ways), so a worker needs open4wd-node installed and nothing else: no shared file
system, the kept files travel back with the result. The client records every result as it arrives
(``ReportDir.record``), so a soak stopped at any point resumes from its report directory: the races
already recorded are not run again.

How many races run at once on the embedded cluster follows the CPU they need, measured (``CpuPacing``):
each task measures the CPU its race took, its worker's own and its children's (the node, spectator, relay
and replay processes, from ``getrusage``; a worker runs one race at a time). The first race runs alone:
its wall time is a race's length on a machine that does not hold it back. Then as many run at once as
fit ``UTILISATION`` of the cores: cores × ``UTILISATION`` × that length / the mean CPU seconds of a race,
recomputed as results arrive (the cluster only grows: a worker stopped mid-race would run it again).
"""

from __future__ import annotations

import math
import os
import resource
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from open4wd_node.runtime.errors import UserError
from open4wd_node.soak.plan import RacePlan, SoakOptions, plan_race
from open4wd_node.soak.report import ReportDir

OnRow = Callable[[dict[str, Any]], None]
SOAK_INSTALL = "pip install 'open4wd-node[soak]'"


def require_dask() -> None:
    """``UserError`` ``soak-needs-dask`` when Dask's ``distributed`` is not installed: it is the ``soak``
    extra, which players and relay operators do not install."""
    try:
        import distributed  # noqa: F401 - only whether it imports
    except ImportError:
        raise UserError("soak-needs-dask", f"the soak runs its races on Dask, which this install does not have: "
                                           f"{SOAK_INSTALL} (from a checkout: pip install '.[soak]')") from None


UTILISATION = 0.85
"""The share of the cores the races may keep busy: the rest is headroom for the bursts of a race's start
and replays, and for the soak's own client."""
MAX_AT_ONCE = 32


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else max(1, os.cpu_count() or 1)


class CpuPacing:
    """How many races to run at once, from the CPU seconds the races took and the length of one run alone
    (module docstring). Pure arithmetic over the rows' ``cpu_s`` and ``elapsed_s``."""

    def __init__(self, cores: int, utilisation: float = UTILISATION) -> None:
        self.budget = cores * utilisation
        self.alone_s: float | None = None  # the wall time of the first race, which ran alone
        self.cpu_s: list[float] = []

    def record(self, cpu_s: float, elapsed_s: float) -> None:
        """One race's CPU seconds and wall time."""
        if self.alone_s is None:
            self.alone_s = elapsed_s
        self.cpu_s.append(cpu_s)

    def at_once(self) -> int:
        """Races to run at once: 1 until a race was measured, then as many as the budget holds."""
        if self.alone_s is None or not self.cpu_s:
            return 1
        per_race = sum(self.cpu_s) / len(self.cpu_s) / self.alone_s  # cores one race keeps busy
        return max(1, min(MAX_AT_ONCE, math.floor(self.budget / max(per_race, 1e-3))))


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its children that ended, so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def worker_cache() -> Path | None:
    """The derived cache every race of this Dask worker shares (``soak.race.share_derived_cache``), in the
    worker's own directory, which the worker removes when it ends; None outside a worker."""
    from distributed import get_worker

    try:
        return Path(get_worker().local_directory) / "open4wd-derived-cache"
    except ValueError:  # not in a worker's task: each race has its own
        return None


def race_task(plan_json: dict[str, Any]) -> dict[str, Any]:
    """One race on a worker, in a fresh directory of the worker's temporary folder (removed afterwards), its
    processes on the worker's shared derived cache (``worker_cache``); its row carries the CPU seconds the
    race took (``cpu_s``: the worker's and its child processes')."""
    from open4wd_node.soak.race import run_race

    plan = RacePlan.from_json(plan_json)
    work_dir = Path(tempfile.mkdtemp(prefix=f"open4wd-soak-{plan.race_id}-"))
    cpu_before, wall_before = _cpu_seconds(), time.monotonic()
    result = run_race(plan, work_dir, worker_cache())
    row = result.row()
    row["cpu_s"] = round(_cpu_seconds() - cpu_before, 2)
    row["cpu_share"] = round(row["cpu_s"] / max(1e-3, time.monotonic() - wall_before), 3)
    return {"row": row, "kept": result.kept}


def crashed_row(plan: RacePlan, error: BaseException) -> dict[str, Any]:
    """The row of a race whose task itself failed (the harness, not a node): a ``crash`` with the error."""
    from open4wd_node.soak.classify import RaceClass, Verdict
    from open4wd_node.soak.race import RaceResult

    verdict = Verdict(RaceClass.CRASH, f"the race's task failed: {type(error).__name__}: {error}")
    return RaceResult(plan=plan, verdict=verdict, nodes=[], frames=-1, agreed_hashes=0, worst_lag=0, rollbacks=0,
                      max_rollback=0, elapsed_s=0.0, faults_applied=[], curves={}).row()


def pending(options: SoakOptions, report: ReportDir) -> list[RacePlan]:
    """The soak's races not yet recorded in ``report``."""
    done = {row["race_id"] for row in report.rows()}
    return [plan for plan in (plan_race(options, i) for i in range(options.races)) if plan.race_id not in done]


def run_races(plans: list[RacePlan], report: ReportDir, on_row: OnRow, scheduler: str | None = None,
              workers: int | None = None) -> None:
    """Run ``plans`` on the cluster, recording each result in ``report`` as it arrives and telling
    ``on_row``: ``workers`` at once on the embedded cluster, or (None) as many as their measured CPU allows
    (``CpuPacing``). ``UserError`` ``soak-scheduler-unreachable`` when ``scheduler`` does not answer."""
    if not plans:
        return
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    pacing = CpuPacing(cores()) if workers is None and scheduler is None else None
    try:
        if scheduler is None:
            cluster = LocalCluster(n_workers=workers or 1, threads_per_worker=1, processes=True,
                                   dashboard_address=":0", silence_logs=40)  # any free port: never 8787, which another may hold
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="10s")
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise UserError("soak-scheduler-unreachable", f"cannot reach the Dask scheduler {scheduler}: {exc}; start it "
                                                      "(`dask scheduler`) or leave --scheduler out for a local cluster") from None
    try:
        run = uuid.uuid4().hex[:8]
        futures = {client.submit(race_task, plan.to_json(), pure=False, key=f"open4wd-soak-{plan.race_id}-{run}"): plan
                   for plan in plans}
        for future in as_completed(futures):
            plan = futures[future]
            try:
                data = future.result()
                row = report.record(data["row"], data["kept"])
            except Exception as exc:  # the task, not a node, failed: still one row, classed crash with the error
                row = report.record(crashed_row(plan, exc), None)
            on_row(row)
            if pacing is not None and cluster is not None and row.get("cpu_s") is not None:
                pacing.record(row["cpu_s"], row["elapsed_s"])
                if pacing.at_once() > len(cluster.workers):
                    cluster.scale(pacing.at_once())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
