"""Options and the node's lifetime shared by ``host`` and ``join``: the room, then the race."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import trio

from open4wd_node.context_errors import UserError
from open4wd_node.events import EventSink
from open4wd_node.match_play import DRIVERS, PlayOptions, play_match
from open4wd_node.node_listener import NodeListener, parse_address, with_listener
from open4wd_node.race_runner import RaceOptions
from open4wd_node.room_driver import RoomOutcome
from protocol.identity import Identity, load_or_create_identity

FAULT = re.compile(r"(corrupt-state|disconnect)@([0-9]{1,7})(?::([0-9]{1,3}))?")


def add_room_output_options(parser) -> None:
    parser.add_argument("--auto-ready", action="store_true", help="declare Ready as soon as the car is valid and enough players are in")
    parser.add_argument("--nickname", default="player", help="name shown to the other members")
    parser.add_argument("--json", action="store_true", help="one JSON event per line instead of the room view")
    parser.add_argument("--driver", choices=DRIVERS, default="bot",
                        help="who drives this node's car: the built-in bot, a game UI on the control API, or nobody")
    parser.add_argument("--seed", type=int, default=0, help="the bot's seed (its decisions are deterministic per seed)")
    parser.add_argument("--mode", choices=("rollback", "lockstep"), default="rollback",
                        help="rollback (predict missing inputs) or strict lockstep (wait for every input)")
    parser.add_argument("--input-delay", type=int, default=0, metavar="FRAMES", help="local input delay, 0..8 frames")
    parser.add_argument("--control-port", type=int, default=0, metavar="PORT",
                        help="control API port on 127.0.0.1 with --driver external (0 picks one; see docs/drivers.md)")
    parser.add_argument("--fault", default=None, metavar="KIND@FRAME",
                        help="soak testing, in round 1: corrupt-state@FRAME alters one value of this node's own "
                             "state; disconnect@FRAME[:SECONDS] drops its mesh links for SECONDS (default 5)")


def parse_listen(text: str) -> tuple[str, int]:
    return parse_address(text, "listen-invalid")


def play_options(args) -> PlayOptions:
    faults: dict[str, int | float] = {}
    if args.fault is not None:
        match = FAULT.fullmatch(args.fault)
        if match is None or (match[1] == "corrupt-state" and match[3]):
            raise UserError("fault-invalid",
                            f"--fault takes corrupt-state@FRAME or disconnect@FRAME[:SECONDS], got {args.fault!r}")
        if match[1] == "corrupt-state":
            faults["fault_frame"] = int(match[2])
        else:
            faults.update(cut_frame=int(match[2]), cut_seconds=float(match[3] or 5))
    if not 0 <= args.input_delay <= 8:
        raise UserError("input-delay-invalid", "--input-delay takes 0..8 frames")
    race = RaceOptions(mode=args.mode, input_delay=args.input_delay, **faults)
    return PlayOptions(driver=args.driver, seed=args.seed, control_port=args.control_port, race=race)


def room_identity(ctx, args) -> tuple[Identity, EventSink]:
    identity, _ = load_or_create_identity(ctx.identity_path)
    return identity, EventSink(as_json=args.json)


async def room_then_race(
    ctx, identity: Identity, events: EventSink, listener: NodeListener, play: PlayOptions,
    room: Callable[[NodeListener], Awaitable[RoomOutcome]], racing: bool,
) -> int:
    """0 when this node's match ran to its end (or, for a spectator, started), 1 otherwise."""
    outcome = await room(listener)
    if outcome.started is None:
        return 1
    if not racing:
        return 0
    report = await play_match(ctx, identity, events, outcome, listener, play)
    events.emit("result", peer=identity.peer_id, outcome=report.outcome, detail=report.detail, agreed_hashes=report.agreed,
                disagreements=report.disagreements, leaves=report.leaves, standings=report.standings,
                log=report.log, max_lag=report.max_lag, rollbacks=report.rollbacks, max_rollback=report.max_rollback)
    return 0 if report.outcome == "finished" else 1


def run_node(identity: Identity, host: str, port: int, body: Callable[[NodeListener], Awaitable[int]]) -> int:
    return trio.run(with_listener, identity, host, port, body)
