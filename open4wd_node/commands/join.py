"""``open4wd-node join INVITE``: join a room as a participant (or spectator), then race the match."""

from __future__ import annotations

from open4wd_node.commands._room_options import add_car_option, add_room_options


def run(args, ctx) -> int:
    import sys

    from open4wd_node.cars import CarChoice
    from open4wd_node.room_cli import parse_listen, play_options, room_identity, room_then_race, run_node
    from open4wd_node.room_session import JoinOptions, join_room
    from protocol.invitation import Invitation

    invite = Invitation.parse(args.invite)
    car = CarChoice.parse(args.car)  # the rounds are known once the room state arrives
    play = play_options(args)
    identity, events = room_identity(ctx, args)
    listen_host, listen_port = parse_listen(args.listen)
    options = JoinOptions(
        spectate=args.spectate, auto_ready=args.auto_ready, nickname=args.nickname, interactive=sys.stdin.isatty()
    )
    room = lambda listener: join_room(ctx, identity, invite, options, car, events, listener)  # noqa: E731
    return run_node(identity, listen_host, listen_port,
                    lambda listener: room_then_race(ctx, identity, events, listener, play, room, not args.spectate))


def register(subparsers) -> None:
    parser = subparsers.add_parser("join", help="join a room from its invitation")
    parser.add_argument("invite", metavar="INVITE", help="open4wd://HOST:PORT/ROOM_ID?host=PEER_ID#ROLE=SECRET")
    add_car_option(parser)
    parser.add_argument("--listen", default="127.0.0.1:0", metavar="HOST:PORT",
                        help="where this node accepts links: the race mesh, and the room if it must take over as host")
    parser.add_argument("--spectate", action="store_true", help="join as a spectator (needs a spectator invitation)")
    add_room_options(parser)
    parser.set_defaults(run=run)
