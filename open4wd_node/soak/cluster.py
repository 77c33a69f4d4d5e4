"""Races as Dask tasks: an embedded ``LocalCluster`` by default, or an existing cluster (``--scheduler``).

Each race is one task (``race_task``: a plan in, a row and the packed files of a race worth keeping
out, plain data both ways), so a worker needs open4wd-node installed and nothing else: no shared file
system, the kept files travel back with the result. The client records every result as it arrives
(``ReportDir.record``), so a soak stopped at any point resumes from its report directory: the races
already recorded are not run again.
"""

from __future__ import annotations

import os
import tempfile
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


def default_workers() -> int:
    """Races at once on the embedded cluster: one per core (a 3-node race keeps about a third of a core busy
    in its nodes, and more again in its replays)."""
    return max(1, os.cpu_count() or 1)


def race_task(plan_json: dict[str, Any]) -> dict[str, Any]:
    """One race on a worker, in a fresh directory of the worker's temporary folder (removed afterwards)."""
    from open4wd_node.soak.race import run_race

    plan = RacePlan.from_json(plan_json)
    work_dir = Path(tempfile.mkdtemp(prefix=f"open4wd-soak-{plan.race_id}-"))
    result = run_race(plan, work_dir)
    return {"row": result.row(), "kept": result.kept}


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
    ``on_row``. ``UserError`` ``soak-scheduler-unreachable`` when ``scheduler`` does not answer."""
    if not plans:
        return
    from distributed import Client, LocalCluster, as_completed

    cluster = None
    try:
        if scheduler is None:
            cluster = LocalCluster(n_workers=workers or default_workers(), threads_per_worker=1, processes=True,
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
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
