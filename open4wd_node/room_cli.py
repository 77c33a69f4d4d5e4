"""Options and outcome handling shared by ``host`` and ``join``."""

from __future__ import annotations

from open4wd_node.context_errors import UserError
from open4wd_node.events import EventSink
from open4wd_node.room_driver import RoomOutcome
from protocol.identity import Identity, load_or_create_identity


def add_room_output_options(parser) -> None:
    parser.add_argument("--auto-ready", action="store_true", help="declare Ready as soon as the car is valid and enough players are in")
    parser.add_argument("--nickname", default="player", help="name shown to the other members")
    parser.add_argument("--json", action="store_true", help="one JSON event per line instead of the room view")


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536 or not host:
        raise UserError("listen-invalid", f"--listen takes HOST:PORT (port 0..65535), got {text!r}")
    return host.strip("[]"), int(port)


def room_identity(ctx, args) -> tuple[Identity, EventSink]:
    identity, _ = load_or_create_identity(ctx.identity_path)
    return identity, EventSink(as_json=args.json)


def finish(outcome: RoomOutcome, events: EventSink) -> int:
    """0 when the match started for this node, 1 otherwise (the reason was already reported)."""
    return 0 if outcome.started is not None else 1
