"""Options shared by ``host`` and ``join`` (declarations only: see ``open4wd_node.cli.main`` on start-up)."""

from __future__ import annotations

import argparse

from open4wd_node.runtime.choices import ARCHETYPES
from open4wd_node.cli.commands._settings import add_settings
from open4wd_node.runtime.config import Scope
from open4wd_node.runtime.values import SEED


def add_car_option(parser: argparse.ArgumentParser) -> None:
    """``--car``: an archetype name or a loadout JSON file (read when the command runs)."""
    parser.add_argument("--car", default="speed", metavar="REF", help=f"your car: {', '.join(ARCHETYPES)} or a loadout JSON file")


def add_room_options(parser: argparse.ArgumentParser) -> None:
    """The node's room settings (the flags of the configuration keys of ``Scope.ROOM``), then the
    options of this one run."""
    add_settings(parser, Scope.ROOM)
    parser.add_argument("--auto-ready", action="store_true",
                        help="declare Ready as soon as the car is valid and enough players are in")
    parser.add_argument("--json", action="store_true", help="one JSON event per line instead of the room view")
    add_cars_events_option(parser)
    parser.add_argument("--seed", type=SEED, default=0, help="the bot's seed (its decisions are deterministic per seed)")
    parser.add_argument("--fault", default=None, metavar="KIND@FRAME",
                        help="soak testing, in round 1: corrupt-state@FRAME alters one value of this node's own "
                             "state; disconnect@FRAME[:SECONDS] drops its mesh links for SECONDS (default 5); "
                             "cut-link@FRAME[:SECONDS] drops only its link to one peer")
    parser.set_defaults(logs=True)


def add_cars_events_option(parser: argparse.ArgumentParser) -> None:
    """``--cars-events``: with ``--json``, the cars' places on the route 4 times a second (the demo's picture)."""
    parser.add_argument("--cars-events", action="store_true",
                        help="with --json: also a cars event (every car's place on the route) up to 4 times a second")
