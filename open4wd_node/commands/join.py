"""``open4wd-node join INVITE``: join a room as a participant (or spectator) until the match starts."""

from __future__ import annotations

import sys

import trio

from open4wd_node.cars import ARCHETYPES, car_rotation
from open4wd_node.room_cli import add_room_output_options, finish, room_identity
from open4wd_node.room_session import JoinOptions, join_room
from protocol.invitation import Invitation


def run(args, ctx) -> int:
    invite = Invitation.parse(args.invite)
    car = args.car
    car_rotation(car, 1)
    identity, events = room_identity(ctx, args)
    options = JoinOptions(
        spectate=args.spectate, auto_ready=args.auto_ready, nickname=args.nickname, interactive=sys.stdin.isatty()
    )
    outcome = trio.run(join_room, ctx, identity, invite, options, lambda rounds: car_rotation(car, rounds), events)
    return finish(outcome, events)


def register(subparsers) -> None:
    parser = subparsers.add_parser("join", help="join a room from its invitation")
    parser.add_argument("invite", metavar="INVITE", help="open4wd://HOST:PORT/ROOM_ID?host=PEER_ID#ROLE=SECRET")
    parser.add_argument("--car", default="speed", metavar="REF", help=f"your car: {', '.join(ARCHETYPES)} or a loadout JSON file")
    parser.add_argument("--spectate", action="store_true", help="join as a spectator (needs a spectator invitation)")
    add_room_output_options(parser)
    parser.set_defaults(run=run)
