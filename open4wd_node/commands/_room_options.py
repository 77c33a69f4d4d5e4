"""Options shared by ``host`` and ``join`` (declarations only: see ``open4wd_node.cli`` on start-up)."""

from __future__ import annotations

import argparse

from open4wd_node.choices import ARCHETYPES, DRIVERS, INPUT_DELAY, RACE_MODES
from open4wd_node.values import PORT, SEED


def add_car_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--car", default="speed", metavar="REF", help=f"your car: {', '.join(ARCHETYPES)} or a loadout JSON file")


def add_room_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--auto-ready", action="store_true", help="declare Ready as soon as the car is valid and enough players are in")
    parser.add_argument("--nickname", default="player", help="name shown to the other members")
    parser.add_argument("--json", action="store_true", help="one JSON event per line instead of the room view")
    parser.add_argument("--driver", choices=DRIVERS, default="bot",
                        help="who drives this node's car: the built-in bot, a game UI on the control API, or nobody")
    parser.add_argument("--seed", type=SEED, default=0, help="the bot's seed (its decisions are deterministic per seed)")
    parser.add_argument("--mode", choices=RACE_MODES, default="rollback",
                        help="rollback (predict missing inputs) or strict lockstep (wait for every input)")
    parser.add_argument("--input-delay", type=INPUT_DELAY, default=0, metavar="FRAMES", help="local input delay, 0..8 frames")
    parser.add_argument("--control-port", type=PORT, default=0, metavar="PORT",
                        help="control API port on 127.0.0.1 with --driver external (0 picks one; see docs/drivers.md)")
    parser.add_argument("--fault", default=None, metavar="KIND@FRAME",
                        help="soak testing, in round 1: corrupt-state@FRAME alters one value of this node's own "
                             "state; disconnect@FRAME[:SECONDS] drops its mesh links for SECONDS (default 5)")
    parser.set_defaults(logs=True)
