"""``open4wd-node join INVITE``: join a room as a participant (or spectator), then race the match."""

from __future__ import annotations

from typing import TYPE_CHECKING

from open4wd_node.cli.commands._room_options import add_car_option, add_room_options

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Join the invitation's room, show it until the match starts, then race it (a spectator watches it,
    as ``watch`` does); exit 0 when the match ran to its end. ``UserError`` for a bad invitation, car or address."""
    import sys

    from open4wd_node.assets.cars import CarChoice
    from open4wd_node.cli.play import play_options, room_identity, run_node
    from open4wd_node.node.node import Node
    from open4wd_node.room.session import JoinOptions
    from protocol.room.invitation import Invitation

    invite = Invitation.parse(args.invite)
    car = CarChoice.parse(args.car)  # the rounds are known once the room state arrives
    play = play_options(args, ctx.config)
    identity, events = room_identity(ctx, args)
    options = JoinOptions(
        spectate=args.spectate, auto_ready=args.auto_ready, nickname=ctx.config.nickname, interactive=sys.stdin.isatty()
    )
    return run_node(Node(ctx, identity, events).join, invite, options, car, play)


def register(subparsers: Subparsers) -> None:
    """Declare ``join`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("join", help="join a room from its invitation")
    parser.add_argument("invite", metavar="INVITE", help="open4wd://HOST:PORT/ROOM_ID?host=PEER_ID#ROLE=SECRET")
    add_car_option(parser)
    parser.add_argument("--spectate", action="store_true", help="join as a spectator (needs a spectator invitation)")
    add_room_options(parser)
    parser.set_defaults(run=run)
