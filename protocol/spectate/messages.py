"""Spectator stream messages (spec/netcode.md §6.4), as strict typed msgpack messages.

A spectator opens one link to its source participant and sends exactly one message, ``mode-select``
(at most 128 bytes); everything after that flows from the source: the round descriptor, a checkpoint,
then the original signed race inputs frame by frame, the players' signed checksum votes, the round's
end and the session's end. Every source message carries the ``sourceEpoch`` of the ``mode-select`` it
answers, so a message of an earlier source (or an earlier subscription) is refused by the viewer.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from protocol.encoding.wire import Channel, Message, Record, message
from protocol.identity.keys import PeerId

MODE_SELECT_MAX_BYTES = 128
"""The spectator's only message is this small (spec §6.4); the source's door refuses a larger one."""
CHECKPOINT_MAX_BYTES = 5_657_942
"""The largest checkpoint message (spec §6.4): a 4 MiB saved state and its envelope."""
SPECTATE_LINK = Channel("spectate-link", CHECKPOINT_MAX_BYTES + 64 * 1024)
"""Frame limit of a spectator link (both ends agree on it after ``mode-select``)."""


class SpectateMode(StrEnum):
    """What a spectator asks its source for (``mode-select.mode``). Only ``replay`` is served: the spec's
    ``fallback`` (state broadcasts at 10 Hz) is not implemented, and is refused with a code."""

    REPLAY = "replay"
    FALLBACK = "fallback"


class SpectateEndReason(StrEnum):
    """Why a spectator's session ended (``session-end.reason``, the viewer's ``session-end`` event).

    The spec's closed set (spec/netcode.md §6.4) plus ``match-end`` (the match ran to its end: the spec
    signals that with ``result-ready``, which this project folds into the one ending message)."""

    MATCH_END = "match-end"
    SOURCE_UNAVAILABLE = "source-unavailable"
    PRE_RACE_CANCELLED = "pre-race-cancelled"
    ERROR = "error"
    SETTLEMENT_FAILED = "settlement-failed"
    PARTITION_VOID = "partition-void"
    CONSENSUS_INVALID = "consensus-invalid"


@message("mode-select")
class ModeSelect(Message):
    """The spectator's first and only message: serve me ``mode`` for ``matchId`` as source generation
    ``sourceEpoch`` (the viewer's count of sources it has asked, from 1)."""

    mode: str
    matchId: str
    sourceEpoch: int


class RosterEntry(Record):
    """One racer of the round: its start slot and the digest of its car (``loadout_digest``)."""

    peer: PeerId
    slot: int
    loadout: str


class KeyAnnounce(Record):
    """A racer's race key announce, forwarded as the racer signed it (master key, ``key_digest``)."""

    peer: PeerId
    raceId: str
    publicKey: bytes
    signature: bytes


@message("spectate-round")
class SpectateRound(Message):
    """The round descriptor: which round of which match on which track, its roster with loadouts, and
    the race keys the source holds (announces that reach it later follow as ``spectate-key``)."""

    sourceEpoch: int
    matchId: str
    round: int
    trackRef: str
    roster: list[RosterEntry]
    keys: list[KeyAnnounce]


@message("spectate-key")
class SpectateKey(Message):
    """A race key announce that reached the source after the round descriptor was sent."""

    sourceEpoch: int
    round: int
    key: KeyAnnounce


@message("spectate-checkpoint")
class SpectateCheckpoint(Message):
    """The source's newest checkpoint: the saved state whose world is at ``frame`` (the state right
    after the vote frame ``frame − 1``), and its SHA-256. It carries no signature of its own (the spec
    leaves open what one would cover): the players' signed votes of frame ``frame − 1`` vouch for the hash."""

    sourceEpoch: int
    round: int
    frame: int
    stateHash: bytes
    state: bytes


class FrameInput(Record):
    """One racer's input of a confirmed frame as the racer signed it (``prev`` as in ``RaceInput``);
    ``prev`` and ``signature`` None for a final prediction of a lost racer (nothing was signed; the next
    vote's hash vouches for it)."""

    peer: PeerId
    events: list[list[Any]]
    prev: bytes | None
    signature: bytes | None


@message("spectate-inputs")
class SpectateInputs(Message):
    """Every racer's input of one confirmed ``frame``."""

    sourceEpoch: int
    round: int
    frame: int
    inputs: list[FrameInput]


class SignedVote(Record):
    """A racer's checksum vote as it signed it (race key, ``checksum_digest``)."""

    peer: PeerId
    hash: bytes
    signature: bytes


@message("spectate-vote")
class SpectateVote(Message):
    """The signed checksum votes of vote frame ``frame`` that the source tallied."""

    sourceEpoch: int
    round: int
    frame: int
    votes: list[SignedVote]


@message("spectate-round-end")
class SpectateRoundEnd(Message):
    """The round ended at ``frame`` for the source; ``left`` names the racers removed from it and why
    (``LeaveReason`` values), so the viewer ranks them as the players do."""

    sourceEpoch: int
    round: int
    frame: int
    left: dict[PeerId, str]


@message("session-end")
class SessionEnd(Message):
    """The source's stream ends, once (``SpectateEndReason``)."""

    sourceEpoch: int
    reason: str


SOURCE_MESSAGES = (SpectateRound, SpectateKey, SpectateCheckpoint, SpectateInputs, SpectateVote, SpectateRoundEnd,
                   SessionEnd)
"""What a source may send on a spectator link (anything else is refused by the viewer)."""
