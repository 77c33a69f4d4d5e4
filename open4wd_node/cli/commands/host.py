"""``open4wd-node host``: open a room, print its invitation, show the room, then race the match."""

from __future__ import annotations

from typing import TYPE_CHECKING

from open4wd_node.runtime.choices import LAPS, PLAYERS, ROUNDS, SPECTATORS, TIME_LIMIT_S
from protocol.room.config import SPECTATORS_DEFAULT
from open4wd_node.cli.commands._room_options import add_car_option, add_room_options

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Open a room, show it until the match starts, then race it; exit 0 when this node's match ran to
    its end. ``UserError`` for a bad car, track, fault or listen address."""
    import sys

    from open4wd_node.assets.cars import CarChoice
    from open4wd_node.cli.play import play_options, room_identity, run_node
    from open4wd_node.node.node import Node
    from open4wd_node.room.session import HostOptions

    options = HostOptions(
        track=args.track, rounds=args.rounds, laps=args.laps, time_limit_s=args.time_limit,
        min_players=args.min_players, max_players=args.max_players, spectators=args.spectators,
        auto_ready=args.auto_ready, nickname=ctx.config.nickname, interactive=sys.stdin.isatty(),
    )
    car = CarChoice.parse(args.car)
    car.rotation(options.rounds)  # refuse a bad --car before opening anything
    play = play_options(args, ctx.config)
    identity, events = room_identity(ctx, args)
    return run_node(Node(ctx, identity, events).host, options, car, play)


def register(subparsers: Subparsers) -> None:
    """Declare ``host`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("host", help="host a room and wait for players")
    parser.add_argument("--track", default="builtin:track-02", metavar="REF",
                        help="track of every round (builtin:track-NN or a content id)")
    parser.add_argument("--rounds", type=ROUNDS, default=1, metavar="N", help="rounds in the match (1..5)")
    parser.add_argument("--laps", type=LAPS, default=3, metavar="L", help="laps per round on loop tracks (1..10)")
    parser.add_argument("--time-limit", type=TIME_LIMIT_S, default=600, metavar="S",
                        help="each round's time limit in seconds (60..1800, default 600): it ends a round not everyone finished")
    add_car_option(parser)
    parser.add_argument("--min-players", type=PLAYERS, default=2, metavar="N", help="participants needed before the start (2..8)")
    parser.add_argument("--max-players", type=PLAYERS, default=8, metavar="N",
                        help="participant seats (2..8, at most the track's)")
    parser.add_argument("--spectators", type=SPECTATORS, default=SPECTATORS_DEFAULT, metavar="N",
                        help=f"spectator seats (0..50, default {SPECTATORS_DEFAULT}; 0 = no spectators, no spectator invitation)")
    add_room_options(parser)
    parser.set_defaults(run=run)
