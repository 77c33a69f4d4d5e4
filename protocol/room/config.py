"""Match configuration of a room and its digest (spec/rooms.md §4.1).

``MatchConfig = {rounds: [{trackRef, lapCount, durationLimitSec}], matchRules: {}}``; the digest is the
spec's ``signing_digest`` of that map, so every peer that saw the same settings computes the same one.
The same validators judge the host's own options and the settings a peer sends in a room state, so a
refusal is a ``ProtocolError`` (``config-invalid``); the shell turns it into a user error for its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocol.encoding.dagcbor import signing_digest
from protocol.errors import ProtocolError

ROUNDS_MIN, ROUNDS_MAX, ROUNDS_DEFAULT = 1, 5, 3
LAPS_MIN, LAPS_MAX, LAPS_DEFAULT = 1, 10, 3
DURATION_MIN_S, DURATION_MAX_S, DURATION_DEFAULT_S = 60, 1800, 600
PLAYERS_MIN, PLAYERS_MAX = 2, 8
SPECTATORS_MAX, SPECTATORS_DEFAULT = 50, 20
MAX_REF_CHARS = 128


@dataclass(frozen=True)
class RoundConfig:
    """One round: its track, its laps and its time limit."""

    track_ref: str
    lap_count: int = LAPS_DEFAULT
    duration_limit_s: int = DURATION_DEFAULT_S

    def to_wire(self) -> dict[str, Any]:
        """The round as the spec's map."""
        return {"trackRef": self.track_ref, "lapCount": self.lap_count, "durationLimitSec": self.duration_limit_s}


@dataclass(frozen=True)
class MatchConfig:
    """A match's settings: its rounds (no match rules in this protocol version)."""

    rounds: tuple[RoundConfig, ...]

    def to_wire(self) -> dict[str, Any]:
        """The settings as the spec's ``MatchConfig`` map."""
        return {"rounds": [r.to_wire() for r in self.rounds], "matchRules": {}}

    @property
    def digest(self) -> str:
        """Hex ``signing_digest`` of ``to_wire()``: what Ready declarations name."""
        return signing_digest(self.to_wire()).hex()

    @classmethod
    def uniform(cls, track_ref: str, rounds: int, laps: int = LAPS_DEFAULT, duration_s: int = DURATION_DEFAULT_S) -> MatchConfig:
        """``rounds`` identical rounds; raises ``ProtocolError`` (``config-invalid``) out of the limits."""
        return cls.from_wire(
            {"rounds": [RoundConfig(track_ref, laps, duration_s).to_wire()] * rounds, "matchRules": {}}
        )

    @classmethod
    def from_wire(cls, obj: object) -> MatchConfig:
        """Strictly parse a ``MatchConfig`` map; raises ``ProtocolError`` (``config-invalid``)."""
        if not isinstance(obj, Mapping) or set(obj) != {"rounds", "matchRules"}:
            raise ProtocolError("config-invalid", "a match config has exactly the keys rounds and matchRules")
        if obj["matchRules"] != {}:
            raise ProtocolError("config-invalid", "matchRules must be empty in this protocol version")
        rounds = obj["rounds"]
        if not isinstance(rounds, list) or not ROUNDS_MIN <= len(rounds) <= ROUNDS_MAX:
            raise ProtocolError("config-invalid", f"a match has {ROUNDS_MIN}..{ROUNDS_MAX} rounds")
        return cls(tuple(_round(r, i) for i, r in enumerate(rounds)))


def _int_in(value: object, low: int, high: int, what: str) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ProtocolError("config-invalid", f"{what} must be an integer in {low}..{high}")
    return value


def _round(obj: object, index: int) -> RoundConfig:
    if not isinstance(obj, Mapping) or set(obj) != {"trackRef", "lapCount", "durationLimitSec"}:
        raise ProtocolError("config-invalid", f"round {index + 1} needs exactly trackRef, lapCount, durationLimitSec")
    ref = obj["trackRef"]
    if not isinstance(ref, str) or not 0 < len(ref) <= MAX_REF_CHARS:
        raise ProtocolError("config-invalid", f"round {index + 1}: trackRef must be a short text reference")
    return RoundConfig(
        ref,
        _int_in(obj["lapCount"], LAPS_MIN, LAPS_MAX, f"round {index + 1} lapCount"),
        _int_in(obj["durationLimitSec"], DURATION_MIN_S, DURATION_MAX_S, f"round {index + 1} durationLimitSec"),
    )


@dataclass(frozen=True)
class RoomLimits:
    """Seats: participants needed and allowed, spectators allowed. Raises ``ProtocolError``
    (``config-invalid``) out of the spec's limits."""

    min_players: int = PLAYERS_MIN
    max_players: int = PLAYERS_MAX
    max_spectators: int = SPECTATORS_DEFAULT

    def __post_init__(self) -> None:
        _int_in(self.max_players, PLAYERS_MIN, PLAYERS_MAX, "max players")
        _int_in(self.min_players, PLAYERS_MIN, self.max_players, "min players")
        _int_in(self.max_spectators, 0, SPECTATORS_MAX, "max spectators")
