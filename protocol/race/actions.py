"""What a race session returns: the link actions every machine shares (``Send``, ``CloseLink``,
``Misbehaviour``), the race's own actions for the shell (race log, state files, round and session end),
and the typed user-visible events; ``RaceAction`` is the union of all of them.

Why typed: the shell routes each kind exhaustively (a new action that the shell forgets is a type
error, not a silently dropped one), and the ``--json`` event stream is pinned by each event's ``EVENT``
name and fields. The string values of the enums below are what reaches the wire, the JSON output and
the race log, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, TypeAlias

from protocol.actions import CloseLink, Misbehaviour, Send, UserEvent
from protocol.race.messages import LeaveReason, RaceInput
from protocol.race.signing import Event
from protocol.race.votes import VoteKind
from protocol.identity.keys import PeerId

__all__ = [
    "AnchorDecided", "AnchorReached", "CaughtUp", "ChecksumVoted", "CloseLink", "ConfirmedInput", "DesyncDetected",
    "DesyncRecord", "FrameConfirmed", "FrameReport", "InputsDropped", "Misbehaviour", "PeerLeft", "PeerLost", "PeerRejoined",
    "RaceAction", "RaceEvent", "RoundEnded", "Send", "SessionEndReason", "SessionEnded", "VoteDecided",
    "WaitReason", "WriteState",
]


class WaitReason(StrEnum):
    """Why ``advance_frame`` stepped nothing (``FrameReport.waiting``)."""

    INPUTS = "inputs"  # a connected peer's input is missing beyond max_prediction frames
    KEYS = "keys"  # a peer's race key has not arrived yet
    CATCH_UP = "catch-up"  # this node waits for a snapshot
    ROUND_OVER = "round-over"  # the world is done
    ENDED = "ended"  # the session is over


class SessionEndReason(StrEnum):
    """Why this node's race is over (``SessionEnded.reason``, ``RaceSession.ended``; the JSON and log value)."""

    EQUIVOCATION = "equivocation"  # a peer signed two different inputs for one frame
    CONSENSUS_INVALID = "consensus-invalid"  # a checksum vote without a strict majority
    PERSISTENT_DESYNC = "persistent-desync"  # three minority votes in a row
    PARTITION_VOID = "partition-void"  # this node's side of a partition is not the race's
    CATCH_UP_IMPOSSIBLE = "catch-up-impossible"  # too few players to vouch for a snapshot
    CATCH_UP_FAILED = "catch-up-failed"  # no quorum of offers, or no voter delivered the snapshot
    ROLLBACK_TOO_DEEP = "rollback-too-deep"  # a correction older than the saved states
    LEFT = "left"  # this node left (``RaceSession.leave``)
    INTERNAL_ERROR = "internal-error"  # a bug of this node broke the session (protocol/transaction.py)


# ---- the race's own actions ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ConfirmedInput:
    """What a frame used for one peer: its signed input, or ``signed=None`` for a final prediction."""

    peer: PeerId
    slot: int
    events: tuple[Event, ...]
    signed: RaceInput | None

    @property
    def proof(self) -> tuple[bytes | None, bytes | None]:
        """``(prev, signature)`` as its owner signed them, ``(None, None)`` for a final prediction: what
        the race log and a spectator stream carry beside the events."""
        return (None, None) if self.signed is None else (self.signed.prev, self.signed.signature)


@dataclass(frozen=True, slots=True)
class FrameConfirmed:
    """Frame ``frame`` is final: no rollback can change it (what the race log records)."""

    frame: int
    inputs: tuple[ConfirmedInput, ...]


@dataclass(frozen=True)
class VoteDecided:
    """A checksum vote was tallied (``kind``), with every counted hash by peer and the dissenters."""

    frame: int
    kind: VoteKind
    hashes: dict[PeerId, bytes]
    dissenters: tuple[str, ...]


@dataclass(frozen=True)
class WriteState:
    """Write this node's saved state of ``frame`` (after a vote mismatch), for ``state-diff``."""

    frame: int
    state: bytes
    reason: str


@dataclass(frozen=True)
class DesyncRecord:
    """The self-signed DesyncEvent of a node that leaves after three minority votes."""

    event: dict[str, Any]


@dataclass(frozen=True)
class CaughtUp:
    """A snapshot replaced the state: frames restart at ``frame`` from ``state`` (the race log keeps it
    so a replay can start there); real local inputs resume at ``resume_frame``."""

    frame: int
    state: bytes
    state_hash: bytes
    resume_frame: int


@dataclass(frozen=True)
class InputsDropped:
    """Inputs of ``peer`` set aside without blame (``frames``): ``reason`` is ``race-input-stale`` (behind
    the input window), ``race-input-ahead`` (ahead of it: this node is the one behind),
    ``race-input-not-active`` (the peer is lost, rejoining, or before the frame its real inputs resume
    at) or ``race-input-catching-up`` (this node waits for a snapshot). None of them is acknowledged,
    so the peer sends them again if they are still needed. The shell logs it."""

    peer: PeerId
    reason: str
    frames: tuple[int, ...]


@dataclass(frozen=True)
class RoundEnded:
    """The world reported the round over at ``frame`` and every input before it is final."""

    frame: int


@dataclass(frozen=True)
class AnchorDecided:
    """The round's consensus anchor with its quorum of signatures, or ``event=None`` after the timeout."""

    round_index: int
    event: dict[str, Any] | None


@dataclass(frozen=True)
class SessionEnded:
    """The race is over for this node: ``reason`` says why, ``detail`` in words, ``evidence`` explains it."""

    reason: SessionEndReason
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)


# ---- user-visible events (the ``--json`` stream; fields = the event's data keys) ---------------------

@dataclass(frozen=True)
class ChecksumVoted(UserEvent):
    """A checksum vote at ``frame`` was decided; ``agreed`` is true when every counted hash was equal."""

    EVENT: ClassVar[str] = "checksum"
    frame: int
    agreed: bool


@dataclass(frozen=True)
class DesyncDetected(UserEvent):
    """A checksum vote at ``frame`` did not agree: ``peers`` are the minority (empty on a tie),
    ``hashes`` every counted hash (hex) by peer."""

    EVENT: ClassVar[str] = "desync"
    frame: int
    peers: list[PeerId]
    hashes: dict[PeerId, str]


@dataclass(frozen=True)
class PeerLeft(UserEvent):
    """``peer`` is out of the race for good: it said so (``voluntary``, ``desync``) or its reconnect
    window closed (``disconnect``)."""

    EVENT: ClassVar[str] = "leave"
    peer: PeerId
    reason: LeaveReason

    def data(self) -> dict[str, Any]:
        """``peer`` and the reason's plain string: nested in a report (``leaves``) an enum member would
        print as its repr in the text view."""
        return {"peer": self.peer, "reason": self.reason.value}


@dataclass(frozen=True)
class PeerLost(UserEvent):
    """The link to ``peer`` broke: it is predicted for the reconnect window."""

    EVENT: ClassVar[str] = "peer-lost"
    peer: PeerId


@dataclass(frozen=True)
class PeerRejoined(UserEvent):
    """``peer`` is real again from ``frame`` on: back on a new link within the reconnect window, or caught up."""

    EVENT: ClassVar[str] = "rejoin"
    peer: PeerId
    frame: int


@dataclass(frozen=True)
class AnchorReached(UserEvent):
    """The anchor of round ``round`` was decided at ``frame`` (``None``: no quorum in time)."""

    EVENT: ClassVar[str] = "anchor"
    round: int
    frame: int | None


RaceEvent: TypeAlias = ChecksumVoted | DesyncDetected | PeerLeft | PeerLost | PeerRejoined | AnchorReached
"""Every user-visible event of a race session."""

RaceAction: TypeAlias = (
    Send | CloseLink | Misbehaviour | InputsDropped | FrameConfirmed | VoteDecided | WriteState | DesyncRecord
    | CaughtUp | RoundEnded | AnchorDecided | SessionEnded | RaceEvent
)
"""Everything a race session may return: carry out every ``Send`` of a batch before acting on a
``SessionEnded`` in it (docs/race.md)."""


@dataclass
class FrameReport:
    """The result of one ``advance_frame`` call: whether a frame was stepped (``frame`` is then the one
    just stepped, else ``current_frame``), why not (``waiting``), the depth of a rollback done first,
    and the actions to carry out."""

    stepped: bool
    frame: int
    waiting: WaitReason | None
    rollback_frames: int
    actions: list[RaceAction]
