"""``open4wd-node watch INVITE``: join a room as a spectator and watch its match, verified and read-only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from open4wd_node.cli.commands._room_options import add_cars_events_option
from open4wd_node.cli.commands._settings import add_settings
from open4wd_node.runtime.addresses import LISTEN
from open4wd_node.runtime.config import Scope

SETTINGS = frozenset({"listen", "advertise", "nickname", "reachability", "signals", "ice_servers", "ice_hosts",
                      "turn_credentials"})
"""The room settings a spectator uses (it drives no car and races nothing): the only ones ``watch`` declares.
``reachability relay`` makes it watch through TURN only; ``direct`` keeps it off TURN."""

if TYPE_CHECKING:
    import argparse

    from open4wd_node.cli.commands._types import Subparsers
    from open4wd_node.runtime.context import NodeContext


def run(args: argparse.Namespace, ctx: NodeContext) -> int:
    """Join the spectator invitation's room, show it until the match starts, then watch the match through
    a source racer (``join --spectate`` does the same); exit 0 when it was watched to its end.
    ``UserError`` for a bad invitation (``invitation-role`` for a participant's) or address."""
    import sys

    from open4wd_node.cli.play import room_identity, run_node
    from open4wd_node.node.node import Node, require_spectator
    from open4wd_node.room.session import JoinOptions
    from protocol.room.invitation import Invitation

    invite = Invitation.parse(args.invite)
    require_spectator(invite)  # before anything is created
    identity, events = room_identity(ctx, args)
    if args.web is not None:
        from open4wd_node.view.web_view import WebTee, web_address

        events = WebTee(events, web_address(args.web, args.web_public), identity.peer_id)
    options = JoinOptions(spectate=True, nickname=ctx.config.nickname, interactive=sys.stdin.isatty())
    return run_node(Node(ctx, identity, events).watch, invite, options)


def register(subparsers: Subparsers) -> None:
    """Declare ``watch`` and its options (nothing heavy is imported here)."""
    parser = subparsers.add_parser("watch", help="watch a room's match as a spectator (verified, read-only)")
    parser.add_argument("invite", metavar="INVITE",
                        help="a spectator invitation: open4wd://HOST:PORT/ROOM_ID?host=PEER_ID#spectator=SECRET")
    add_settings(parser, Scope.ROOM, only=SETTINGS)
    parser.add_argument("--json", action="store_true", help="one JSON event per line instead of the live view")
    add_cars_events_option(parser)
    parser.add_argument("--web", type=LISTEN, default=None, metavar="HOST:PORT",
                        help="also show the race on a live page served at HOST:PORT (loopback; port 0 picks one)")
    parser.add_argument("--web-public", action="store_true",
                        help="allow --web on an address other machines reach (the page has no authentication)")
    parser.set_defaults(run=run, logs=True)
