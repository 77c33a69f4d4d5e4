"""What a race session asks its shell to do, besides the room actions it shares (Send, CloseLink, Notify)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.race.messages import RaceInput
from protocol.race.signing import Event
from protocol.actions import CloseLink, Misbehaviour, Send
from protocol.room.actions import Notify

__all__ = [
    "AnchorDecided", "CaughtUp", "CloseLink", "ConfirmedInput", "DesyncRecord", "FrameConfirmed", "FrameReport", "Misbehaviour",
    "Notify", "RoundEnded", "Send", "SessionEnded", "VoteDecided", "WriteState",
]


@dataclass(frozen=True, slots=True)
class ConfirmedInput:
    """What a frame used for one peer: its signed input, or ``signed=None`` for a final prediction."""

    peer: str
    slot: int
    events: tuple[Event, ...]
    signed: RaceInput | None


@dataclass(frozen=True, slots=True)
class FrameConfirmed:
    """Frame ``frame`` is final: no rollback can change it (what the race log records)."""

    frame: int
    inputs: tuple[ConfirmedInput, ...]


@dataclass(frozen=True)
class VoteDecided:
    """A checksum vote was tallied: ``kind`` is agreed, majority, minority or tie; hashes by peer."""

    frame: int
    kind: str
    hashes: dict[str, bytes]
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
    """The race is over for this node: ``reason`` is a coded outcome, ``evidence`` explains it."""

    reason: str
    detail: str
    evidence: dict[str, Any] = field(default_factory=dict)


@dataclass
class FrameReport:
    """The result of one ``advance_frame`` call."""

    stepped: bool
    frame: int
    waiting: str | None
    rollback_frames: int
    actions: list[Any]
