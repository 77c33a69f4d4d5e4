"""Options and the node's lifetime shared by ``host`` and ``join``: the room, then the race."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

from open4wd_node.runtime.config import NodeConfig
from open4wd_node.runtime.context import NodeContext
from open4wd_node.view.events import EventSink
from open4wd_node.cli.match import PlayOptions, play_match, watch_match
from open4wd_node.faults.plan import parse_fault
from open4wd_node.net.listener import NodeListener
from open4wd_node.relay.reach import with_listener
from open4wd_node.race.runner import RaceOptions
from open4wd_node.room.driver import RoomOutcome
from open4wd_node.runtime.trio_main import run_trio
from protocol.identity.keys import Identity, load_or_create_identity
from protocol.spectate.messages import SpectateEndReason

def play_options(args: argparse.Namespace, config: NodeConfig) -> PlayOptions:
    """How this node plays its match: driver, seed and control port from the configuration, the race
    mode, input delay and frames per tick, and ``--fault``; ``UserError`` ``fault-invalid`` for a malformed ``--fault``."""
    race = RaceOptions(mode=config.mode, input_delay=config.input_delay, frames_per_tick=config.frames_per_tick)
    faults = () if args.fault is None else (parse_fault(args.fault),)
    return PlayOptions(driver=config.driver, seed=args.seed, control_port=config.control_port, race=race, faults=faults)


def room_identity(ctx: NodeContext, args: argparse.Namespace) -> tuple[Identity, EventSink]:
    """The node's identity, and where its events go: JSON lines with ``--json`` (and the cars' places with
    ``--cars-events``), else the live view."""
    identity, _ = load_or_create_identity(ctx.identity_path)
    if args.json and args.cars_events:
        from open4wd_node.view.cars_feed import CarsFeed

        return identity, CarsFeed()
    if args.json:
        return identity, EventSink(as_json=True)
    from open4wd_node.view.live_console import LiveConsole  # rich is imported only for the readable view

    return identity, LiveConsole(identity.peer_id)


async def room_then_race(
    ctx: NodeContext, identity: Identity, events: EventSink, listener: NodeListener, play: PlayOptions,
    room: Callable[[NodeListener], Awaitable[RoomOutcome]], racing: bool,
) -> int:
    """0 when this node's match ran to its end, 1 otherwise. ``racing`` False: this node is a spectator,
    and watches the match (``watch_match``) to its end instead of racing it."""
    async with events.showing():
        outcome = await room(listener)
        if outcome.started is None:
            return 1
        if not racing:
            watched = await watch_match(ctx, identity, events, outcome, use_relays=listener.use_relays)
            events.emit("result", peer=identity.peer_id, outcome=watched.outcome, detail=watched.detail,
                        agreed_hashes=watched.agreed, mismatches=watched.mismatches, standings=watched.standings,
                        log=watched.log, sources=watched.sources, frames=watched.frames)
            return 0 if watched.outcome == SpectateEndReason.MATCH_END else 1
        report = await play_match(ctx, identity, events, outcome, listener, play)
        events.emit("result", peer=identity.peer_id, outcome=report.outcome, detail=report.detail,
                    agreed_hashes=report.agreed, disagreements=report.disagreements, leaves=report.leaves,
                    standings=report.standings, log=report.log, max_lag=report.max_lag, ticks=report.ticks,
                    rollbacks=report.rollbacks,
                    max_rollback=report.max_rollback, drops=report.drops, liveness=report.liveness,
                    cpu=report.cpu.to_json())
        return 0 if report.outcome == "finished" else 1


def run_node(identity: Identity, config: NodeConfig, body: Callable[[NodeListener], Awaitable[int]]) -> int:
    """Listen where the configuration says (``listen``, ``advertise``; reserved at ``relays`` as
    ``reachability`` says) while ``body`` runs; its exit status.
    ``UserError`` ``listen-failed`` when the address cannot be bound."""
    status: int = run_trio(with_listener, identity, config.listen.host, config.listen.port, body, config.advertise,
                           config.reachability, config.relays)
    return status
