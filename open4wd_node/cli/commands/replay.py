"""``open4wd-node replay LOG``: re-simulate a race log, verify every recorded hash, and say how much of
the match the log holds: ``complete`` (closed by its node, exit 0), ``incomplete`` (no end record) or
``torn`` (cut inside a record); the last two exit 1 unless ``--allow-incomplete``. ``--html FILE`` also
writes the race's replay page (``open4wd_node.view.replay_page``), a refused log's too."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.assets.room_assets import NodeRoomAssets
    from open4wd_node.race.replay import ReplayReport
    from open4wd_node.runtime.context import NodeContext
    from open4wd_node.view.replay_film import ReplayVerdict


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Re-simulate the log and print what it verified; exit 1 for a log short of its end record unless
    ``--allow-incomplete``. ``UserError`` ``replay-*`` / ``race-log-*`` for a log that does not verify."""
    import json
    import sys
    from dataclasses import asdict
    from pathlib import Path

    from open4wd_node.assets.store import AssetStore
    from open4wd_node.race.replay import replay, unfinished
    from open4wd_node.assets.room_assets import NodeRoomAssets
    from open4wd_node.runtime.errors import UserError
    from open4wd_node.view.replay_film import ReplayVerdict

    assets = NodeRoomAssets(AssetStore.in_data_dir(ctx.data_dir), ctx.config)
    try:
        report = replay(Path(args.log), assets)
    except UserError as refused:
        if args.html is not None:  # the page shows a log that does not verify too, with the refusal
            _write_page(args, assets, ReplayVerdict(False, f"{refused.code}: {refused.message}"))
        raise
    error = None if args.allow_incomplete else unfinished(report)
    if args.html is not None:
        _write_page(args, assets, ReplayVerdict(error is None, _describe(report) + (f" ({error.code})" if error else "")))
    if args.json:  # one object: the verified part of a partial log is reported with its error
        refusal = {"error": {"code": error.code, "message": error.message}} if error else {}
        print(json.dumps({"ok": error is None, **asdict(report), "status": report.status.value, **refusal}))
    else:
        print(_describe(report))
    if error is not None:
        print(f"error[{error.code}]: {error.message}", file=sys.stderr)
        return error.exit_status
    return 0


def _write_page(args: argparse.Namespace, assets: NodeRoomAssets, verdict: ReplayVerdict) -> None:
    import sys
    from pathlib import Path

    from open4wd_node.view.replay_page import write_replay_page

    write_replay_page(Path(args.log), Path(args.html), assets, verdict, [Path(p) for p in args.states])
    print(f"replay page: {args.html}", file=sys.stderr)  # stderr: --json's one object stays the whole stdout


def _describe(report: ReplayReport) -> str:
    if report.end_reason is None:
        ending = f"no end record; verified up to round {report.last_round} frame {report.last_frame}"
    else:
        outcome = f" ({report.outcome})" if report.outcome else ""
        ending = f"closed by its node: {report.end_reason}{outcome}"
    tail = (f"; the last inputs of {report.unproven_tail} peer(s) wait for a signature the log does not hold"
            if report.unproven_tail else "")
    return (f"replay {report.status.value}: match {report.match_id[:16]}…, {report.rounds} round(s), "
            f"{report.frames} frames; {report.votes_verified} checksum votes verified ({report.votes_agreed} agreed), "
            f"{report.round_ends_verified} round-end hash(es) verified; {ending}{tail}")


def register(subparsers: Subparsers) -> None:
    """Declare ``replay`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("replay", help="re-simulate a race log and verify every recorded hash")
    parser.add_argument("log", metavar="LOG", help="a race log (<data-dir>/races/*.o4wlog)")
    parser.add_argument("--allow-incomplete", action="store_true",
                        help="exit 0 for a log short of its end record (incomplete or torn) once its records verify")
    parser.add_argument("--html", metavar="FILE", default=None,
                        help="also write the race as one self-contained page: the track, every car frame by frame, the votes")
    parser.add_argument("--states", metavar="PATH", action="append", default=[],
                        help="with --html: other nodes' saved states (files or directories; repeatable), to show the "
                             "first fields that differ where the votes split")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
