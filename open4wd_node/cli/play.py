"""What ``host``, ``join`` and ``watch`` share: the options of the match from the command line, where the
node's events are printed, and running the ``Node`` to its exit status."""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from open4wd_node.faults.plan import parse_fault
from open4wd_node.node.match import PlayOptions
from open4wd_node.net.webrtc.reach import check_reachability
from open4wd_node.node.node import NodeResult
from open4wd_node.race.runner import RaceOptions
from open4wd_node.runtime.config import NodeConfig
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.trio_main import run_trio
from open4wd_node.events.sink import EventSink
from protocol.identity.keys import Identity, load_or_create_identity


def play_options(args: argparse.Namespace, config: NodeConfig) -> PlayOptions:
    """How this node plays its match: driver, seed and control port from the configuration, the race
    mode, input delay and frames per tick, and ``--fault``; ``UserError`` ``fault-invalid`` for a malformed ``--fault``."""
    race = RaceOptions(mode=config.mode, input_delay=config.input_delay, frames_per_tick=config.frames_per_tick)
    faults = () if args.fault is None else (parse_fault(args.fault),)
    return PlayOptions(driver=config.driver, seed=args.seed, control_port=config.control_port, race=race, faults=faults)


def room_identity(ctx: NodeContext, args: argparse.Namespace) -> tuple[Identity, EventSink]:
    """The node's identity, and where its events go: JSON lines with ``--json`` (and the cars' places with
    ``--cars-events``), else the live view. A reachability that could never link is refused first
    (``check_reachability``: a usage error)."""
    check_reachability(ctx.config)
    identity, _ = load_or_create_identity(ctx.identity_path)
    if args.json and args.cars_events:
        from open4wd_node.view.cars_feed import CarsFeed

        return identity, CarsFeed()
    if args.json:
        return identity, EventSink(as_json=True)
    from open4wd_node.view.live_console import LiveConsole  # rich is imported only for the readable view

    return identity, LiveConsole(identity.peer_id)


def run_node(run: Callable[..., Awaitable[NodeResult]], *args: Any) -> int:
    """Run one of a ``Node``'s ``host``, ``join`` or ``watch`` (``run(*args)``) until its match ends; 0 when
    the match ran to its end for this node, 1 otherwise (a stop signal: ``Interrupted``)."""
    result: NodeResult = run_trio(run, *args)
    return 0 if result.finished else 1

