"""The closed sets of choices the command line offers, kept apart from the code that acts on them so
that declaring the options imports nothing heavy (see ``open4wd_node.cli.main``)."""

from __future__ import annotations

from protocol.room.config import (
    DURATION_MAX_S, DURATION_MIN_S, LAPS_MAX, LAPS_MIN, PLAYERS_MAX, PLAYERS_MIN, ROUNDS_MAX, ROUNDS_MIN, SPECTATORS_MAX,
)
from open4wd_node.runtime.values import IntRange

# built-in archetype cars: name -> the number of their built-in chassis, body, motor, … (builtin:<type>-NN)
ARCHETYPES = {"speed": 1, "heavy": 2, "control": 3}
DRIVERS = ("bot", "external", "idle")
RACE_MODES = ("rollback", "lockstep")
SOAK_MODES = (*RACE_MODES, "mixed")  # mixed: each node of a soak race draws its mode from the race seed
LOG_FORMATS = ("console", "json")
REACHABILITY = ("auto", "direct", "relay")  # docs/webrtc.md: relay = TURN only

ROUNDS = IntRange(ROUNDS_MIN, ROUNDS_MAX)
LAPS = IntRange(LAPS_MIN, LAPS_MAX)
TIME_LIMIT_S = IntRange(DURATION_MIN_S, DURATION_MAX_S)  # a round's time limit (spec: durationLimitSec)
PLAYERS = IntRange(PLAYERS_MIN, PLAYERS_MAX)
SPECTATORS = IntRange(0, SPECTATORS_MAX)
INPUT_DELAY = IntRange(0, 8)
FRAMES_PER_TICK = IntRange(1, 4)  # the frame pump's: a tick of 4 frames (67 ms) already outlasts most input delays
CARS = IntRange(1, 8)
FRAMES = IntRange(0, 10_000_000)
