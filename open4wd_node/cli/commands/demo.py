"""``open4wd-node demo``: the README's main job — real nodes, a real room, a raced match."""

from __future__ import annotations

import json
import re
import sys
from typing import TYPE_CHECKING, Any

from open4wd_node.runtime.addresses import LISTEN
from open4wd_node.runtime.choices import FRAMES_PER_TICK, LAPS, RACE_MODES, ROUNDS
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.values import SEED, IntRange

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.demo.setup import DemoOptions
    from open4wd_node.demo.view import DemoBoard
    from open4wd_node.runtime.context import NodeContext


NODES = IntRange(2, 8)

CORRUPT = re.compile(r"([0-9]{1,7})@([0-9]{1,7})")


def _board(options: DemoOptions, ctx: NodeContext) -> DemoBoard:
    """What the nodes' events feed while they race: the live table of the nodes and the track picture (on
    stdout unless ``--json``, whose one summary object at the end stays the whole output; on the live page
    with ``--web``)."""
    from open4wd_node.demo.setup import track_spec_of
    from open4wd_node.demo.view import DemoBoard, picture_node
    from open4wd_node.view.live_console import Screen
    from open4wd_node.view.race_picture import spec_map

    return DemoBoard(options.nodes, Screen(sys.stdout), spec_map(track_spec_of(options, ctx)), picture_node(options))


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Check the demo's options, race its nodes, print the summary (``--json``: one object); exit 0 when
    every node (but an expected leaver) finished. ``UserError`` (``demo-invalid``, ``demo-failed``, …)."""
    import time

    corrupt = None
    if args.corrupt is not None:
        match = CORRUPT.fullmatch(args.corrupt)
        if match is None:
            raise UserError("demo-invalid", "--corrupt takes NODE@FRAME (numbers of at most 7 digits), "
                                            f"got {args.corrupt[:40]!r}")
        corrupt = (int(match[1]), int(match[2]))  # their ranges are checked by prepare

    from open4wd_node.demo.setup import DemoOptions, prepare

    web = None
    if args.web is not None:
        from open4wd_node.view.web_view import web_address

        web = web_address(args.web, args.web_public)
    options = DemoOptions(nodes=args.nodes, rounds=args.rounds, laps=args.laps, mode=args.mode,
                          frames_per_tick=args.frames_per_tick, seed=args.seed, corrupt=corrupt, track=args.track,
                          transport=args.transport)
    base = prepare(options, ctx)  # every refusal comes before the first node starts

    from open4wd_node.demo.runner import summarize
    from open4wd_node.demo.view import race_demo
    from open4wd_node.runtime.trio_main import run_trio

    started = time.monotonic()
    runs = run_trio(race_demo, _board(options, ctx), options, base, not args.json, web)
    summary = summarize(runs, time.monotonic() - started)
    if args.json:
        print(json.dumps(summary))
    else:
        _print(summary)
    expected_leavers = {corrupt[0]} if corrupt else set()
    good = all(summary["outcomes"][str(i)] == "finished" for i in range(args.nodes) if i not in expected_leavers)
    return 0 if good and summary["finished"] > 0 else 1


def _print(summary: dict[str, Any]) -> None:
    from open4wd_node.events.text import status_text

    print(f"{summary['nodes']} nodes raced; {summary['finished']} finished the match in {summary['elapsed_s']} s")
    for row in summary["standings"]:
        print(f"  {row['rank']}. node{row['node']}  {row['points']} pts  "
              f"{status_text(row['status'], row['finish_frames'], rounds=row['rounds'])}")
    for leave in summary["leaves"]:
        print(f"  node{leave['node']} saw node{leave['peer']} leave: {leave['reason']}")
    print(f"{summary['finished']} nodes agreed on {summary['agreed_hashes']} state hashes "
          f"({summary['disagreements']} disagreements, max lag {summary['max_lag']} frames)")
    for log in summary["logs"]:
        print(f"  log: {log}")


def register(subparsers: Subparsers) -> None:
    """Declare ``demo`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("demo", help="start N real nodes on 127.0.0.1 that form a room and race with bots")
    parser.add_argument("--nodes", type=NODES, default=4, metavar="N", help="node processes, 2..8 (default 4)")
    parser.add_argument("--rounds", type=ROUNDS, default=1, metavar="R", help="rounds, 1..5 (default 1)")
    parser.add_argument("--laps", type=LAPS, default=1, metavar="L", help="laps per round, 1..10 (default 1)")
    parser.add_argument("--track", default="builtin:track-02", metavar="REF", help="track of every round")
    parser.add_argument("--mode", choices=RACE_MODES, default="rollback")
    parser.add_argument("--frames-per-tick", type=FRAMES_PER_TICK, default=1, metavar="N",
                        help="frames each node's pump steps per wake-up, 1..4 (default 1; docs/node.md \"Frames per tick\")")
    parser.add_argument("--seed", type=SEED, default=0, help="bot seeds are SEED + node number")
    parser.add_argument("--transport", choices=("tcp", "webrtc", "webrtc-direct"), default="tcp",
                        help="what the nodes link over: tcp (each listens on 127.0.0.1), webrtc (through a local "
                             "open4wd-node signal, and a local coturn with --reachability relay where installed) or "
                             "webrtc-direct (through the signal service, host candidates on 127.0.0.1, no relay)")
    parser.add_argument("--corrupt", default=None, metavar="NODE@FRAME",
                        help="alter one value of node NODE's own state at FRAME (it should be outvoted and leave)")
    parser.add_argument("--web", type=LISTEN, default=None, metavar="HOST:PORT",
                        help="also show the race on a live page served at HOST:PORT (loopback; port 0 picks one)")
    parser.add_argument("--web-public", action="store_true",
                        help="allow --web on an address other machines reach (the page has no authentication)")
    parser.add_argument("--json", action="store_true", help="print one final JSON object")
    parser.set_defaults(run=run)
