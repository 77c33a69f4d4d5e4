"""``open4wd-node replay LOG``: re-simulate a race log and verify every recorded hash."""

from __future__ import annotations



def run(args, ctx) -> int:
    import json
    from dataclasses import asdict
    from pathlib import Path

    from open4wd_node.asset_store import AssetStore
    from open4wd_node.replay import replay
    from open4wd_node.room_assets import NodeRoomAssets

    report = replay(Path(args.log), NodeRoomAssets(AssetStore.in_data_dir(ctx.data_dir), ctx.config))
    if args.json:
        print(json.dumps({"ok": True, **asdict(report)}))
    else:
        tail = " (the log ends in a torn record, written when its node was killed)" if report.truncated else ""
        print(f"replay ok: match {report.match_id[:16]}…, {report.rounds} round(s), {report.frames} frames, "
              f"{report.hashes_checked} hashes verified{tail}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("replay", help="re-simulate a race log and verify every recorded hash")
    parser.add_argument("log", metavar="LOG", help="a race log (<data-dir>/races/*.o4wlog)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(run=run)
