"""``open4wd-node soak``: many races of real node processes under fault profiles, each classified, on
Dask; ``open4wd-node soak repro RACE-ID`` runs one of them again (docs/soak.md)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from open4wd_node.runtime.choices import FRAMES_PER_TICK, SOAK_MODES, TIME_LIMIT_S
from open4wd_node.runtime.errors import UsageError, UserError
from open4wd_node.runtime.values import SEED, IntRange

if TYPE_CHECKING:
    import argparse
    from pathlib import Path

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext
    from open4wd_node.soak.plan import SoakOptions

RACES = IntRange(1, 100_000)
WORKERS = IntRange(1, 256)
NODE_COUNTS = re.compile(r"([2-8])(?:-([2-8]))?")
SCHEDULER = re.compile(r"tcp://[^\s/]+:[0-9]{1,5}")
FAILURES = ("false-desync", "crash", "hang", "replay-failed", "undetected", "spectator-desync", "slow")
"""The classes that make ``soak`` exit 1 when any race falls in one."""


def node_range(text: str) -> tuple[int, int]:
    """``--nodes``: ``K`` or ``A-B`` with 2 ≤ A ≤ B ≤ 8."""
    match = NODE_COUNTS.fullmatch(text.strip())
    if match is None or (match[2] is not None and int(match[2]) < int(match[1])):
        raise UsageError(f"--nodes takes K or A-B with 2 <= A <= B <= 8, got {text[:40]!r} (see: open4wd-node soak --help)")
    return int(match[1]), int(match[2] or match[1])


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Run the soak (or ``repro``), print the summary; exit 0 when no race is a failure class."""
    if args.soak_command == "repro":
        return _repro(args, ctx)
    from pathlib import Path

    from open4wd_node.soak.cluster import require_dask
    from open4wd_node.soak.plan import SoakOptions
    from open4wd_node.soak.profiles import parse_profiles

    require_dask()
    if args.scheduler is not None and not SCHEDULER.fullmatch(args.scheduler):
        raise UsageError(f"--scheduler takes tcp://HOST:PORT, got {args.scheduler[:60]!r} (see: open4wd-node soak --help)")
    options = SoakOptions(races=args.races, nodes=node_range(args.nodes), profiles=parse_profiles(args.profiles),
                          seed=args.seed, race_seconds=args.race_seconds, mode=args.mode,
                          frames_per_tick=args.frames_per_tick)
    report = Path(args.report) if args.report else ctx.data_dir / "soak" / f"seed-{options.seed}"
    return _soak(options, report, args)


def _soak(options: SoakOptions, path: Path, args: argparse.Namespace) -> int:
    import json
    import os
    import time

    from open4wd_node.soak.cluster import pending, run_races
    from open4wd_node.soak.report import ReportDir

    report = ReportDir(path, options)
    plans = pending(options, report)
    workers = args.workers
    started, done = time.monotonic(), 0

    def finish() -> dict[str, Any]:
        wall = time.monotonic() - started
        session = {"races_run": done, "wall_s": round(wall, 1), "workers": workers if args.scheduler is None else None,
                   "at_once": "fixed" if workers else "by measured CPU",
                   "scheduler": args.scheduler, "races_per_hour": round(done * 3600 / wall, 1) if done and wall > 0 else None,
                   "load_average": round(os.getloadavg()[0], 2)}
        return report.finish(session)

    def counted(row: dict[str, Any]) -> None:
        nonlocal done
        done += 1

    try:
        if args.json:
            run_races(plans, report, counted, args.scheduler, workers)
        else:
            from open4wd_node.soak.view import SoakProgress

            print(f"soak: {len(plans)} race(s) to run, {options.races - len(plans)} already in {path}")
            with SoakProgress(report.rows(), options.races) as progress:
                def shown(row: dict[str, Any]) -> None:
                    counted(row)
                    progress.add(row)

                run_races(plans, report, shown, args.scheduler, workers)
    finally:
        summary = finish()  # also when stopped: what ran is reported, and the next run resumes
    if args.json:
        print(json.dumps({"report": str(path), **summary}))
    else:
        _print(summary, path)
    return 1 if any(summary["classes"][c] for c in FAILURES) else 0


def _print(summary: dict[str, Any], path: Path) -> None:
    classes = ", ".join(f"{n} {c}" for c, n in summary["classes"].items() if n)
    print(f"{summary['races']} races: {classes}")
    detection = summary["detection_frames"]
    if summary["corruptions"]:
        print(f"corruptions: {summary['corruptions_detected']} of {summary['corruptions']} detected; frames to detection: "
              f"median {detection['median']}, worst {detection['worst']}")
    session = summary["session"]
    if session["races_per_hour"]:
        print(f"this run: {session['races_run']} races in {session['wall_s']} s ({session['races_per_hour']} races/hour, "
              f"load average {session['load_average']})")
    print(f"report: {path / 'report.html'} and {path / 'report.json'}")


def _repro(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Run one recorded race again from its plan (same seed, same faults), here and now, and say
    whether it falls in the same class; its files go beside the original's when it is not agreed."""
    import io
    import json
    import tarfile
    import tempfile
    from pathlib import Path

    from open4wd_node.soak.plan import RacePlan
    from open4wd_node.soak.race import run_race
    from open4wd_node.soak.report import ReportDir

    path = Path(args.report) if args.report else None
    if path is None:
        raise UserError("soak-report-missing", "soak repro needs the soak's --report DIR (its repro line names it)")
    report = ReportDir(path)
    row = next((r for r in report.rows() if r["race_id"] == args.race_id), None)
    if row is None:
        raise UserError("soak-race-unknown", f"{path} holds no race {args.race_id[:40]!r}; its races are "
                                             f"{', '.join(r['race_id'] for r in report.rows()[:5])}…")
    plan = RacePlan.from_json(row["plan"])
    result = run_race(plan, Path(tempfile.mkdtemp(prefix=f"open4wd-soak-repro-{plan.race_id}-")))
    again = result.verdict.race_class.value
    kept = None
    if result.kept is not None:
        kept = report.races / plan.race_id / f"repro-{len(list(report.races.glob(f'{plan.race_id}/repro-*')))}"
        with tarfile.open(fileobj=io.BytesIO(result.kept), mode="r:gz") as tar:
            tar.extractall(kept, filter="data")
    if args.json:
        print(json.dumps({"race_id": plan.race_id, "class": again, "was": row["class"], "same": again == row["class"],
                          "reason": result.verdict.reason, "detection_frames": result.verdict.detection_frames,
                          "kept": str(kept) if kept else None}))
    else:
        print(f"race {plan.race_id} ({plan.profile}, {plan.nodes} nodes, seed {plan.seed}): {again} "
              f"(was {row['class']}): {result.verdict.reason}")
        if kept:
            print(f"  files: {kept}")
    return 0 if again == row["class"] else 1


def register(subparsers: Subparsers) -> None:
    """Declare ``soak`` and ``soak repro`` (nothing heavy is imported here)."""
    parser = subparsers.add_parser("soak", help="many real-node races under fault profiles, classified, on Dask")
    parser.add_argument("--races", type=RACES, default=20, metavar="N", help="races in the soak (default 20)")
    parser.add_argument("--nodes", default="3", metavar="K|A-B",
                        help="nodes per race, or a range drawn per race (2..8, default 3)")
    parser.add_argument("--profiles", default="all", metavar="LIST",
                        help="comma list of clean, latency, jitter-loss, stall, kill, disconnect, corrupt, tamper, "
                             "spectators, partition, hostile-ready, thin-link, webrtc, turn, or all (the default); "
                             "races take them in turn")
    parser.add_argument("--seed", type=SEED, default=0,
                        help="the soak's seed: every race's seed, nodes and faults follow from it")
    parser.add_argument("--race-seconds", type=TIME_LIMIT_S, default=60, metavar="S",
                        help="each race's round time limit (60..1800, the spec's range; default 60): "
                             "races are 1 lap of builtin:track-01, 14-30 s when every car finishes")
    parser.add_argument("--mode", choices=SOAK_MODES, default="rollback",
                        help="the nodes' netcode; mixed draws each node's mode from its race's seed")
    parser.add_argument("--frames-per-tick", type=FRAMES_PER_TICK, default=1, metavar="N",
                        help="frames each node's pump steps per wake-up, 1..4 (default 1): 2 or 3 fit more nodes on "
                             "a machine (docs/node.md \"Frames per tick\")")
    parser.add_argument("--report", default=None, metavar="DIR",
                        help="report directory (default <data-dir>/soak/seed-SEED); a stopped soak resumes from it")
    parser.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                        help="run the races on this Dask cluster (its workers need open4wd-node installed) "
                             "instead of a local one")
    parser.add_argument("--workers", type=WORKERS, default=None, metavar="N",
                        help="races at once on the local cluster (default: as many as the CPU they take fits, "
                             "measured from the races themselves: docs/soak.md \"Performance\")")
    parser.add_argument("--json", action="store_true", help="no progress bar; print one JSON summary")
    actions = parser.add_subparsers(dest="soak_command", metavar="[repro RACE-ID]")
    repro = actions.add_parser("repro", help="run one race of a soak again, with the same seed and faults")
    repro.add_argument("race_id", metavar="RACE-ID", help="a race of the soak (its report's race_id)")
    repro.add_argument("--report", default=None, metavar="DIR", help="the soak's report directory")
    repro.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
