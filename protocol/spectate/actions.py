"""What the spectator viewer asks of its shell: typed actions, one frozen dataclass each.

``Send`` and ``Misbehaviour`` are every machine's (``protocol/actions.py``); the rest are the viewer's
own. ``ViewerAction`` is their union, which the shell routes exhaustively."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from protocol.actions import Misbehaviour
from protocol.spectate.messages import FrameInput, KeyAnnounce, ModeSelect, SpectateEndReason
from protocol.identity.keys import PeerId


@dataclass(frozen=True)
class DialSource:
    """Open a spectator link to ``peer`` and send ``select`` as its first message (the previous source's
    link, if any, is closed: its messages are refused from now on)."""

    peer: PeerId
    select: ModeSelect


@dataclass(frozen=True)
class DropSource:
    """Close the link to the source ``peer`` with ``code``: it failed (a refused message, a lost link)."""

    peer: PeerId
    code: str


@dataclass(frozen=True)
class RoundBegan:
    """The viewer built the world of round ``round`` (``slots``: PeerId → start slot)."""

    round: int
    slots: Mapping[PeerId, int]


@dataclass(frozen=True)
class KeyVerified:
    """A racer's race key announce verified under its master key (the race log keeps it for ``replay``)."""

    round: int
    key: KeyAnnounce


@dataclass(frozen=True)
class CheckpointLoaded:
    """The world now holds the checkpoint of ``frame`` (``reason``: ``source`` for the source's, on
    joining or after a change of source; ``hash-mismatch`` for the viewer's newest verified one)."""

    round: int
    frame: int
    state: bytes
    state_hash: bytes
    reason: str


@dataclass(frozen=True)
class FrameShown:
    """The viewer stepped ``frame`` with these inputs (verified); ``buffered`` frames wait behind it and
    ``target`` is the jitter buffer's depth now."""

    round: int
    frame: int
    inputs: tuple[FrameInput, ...]
    buffered: int
    target: int


@dataclass(frozen=True)
class HashChecked:
    """The viewer's state hash after vote frame ``frame`` against the players' agreed one (a strict
    majority of the round's roster, each vote's signature verified)."""

    round: int
    frame: int
    agreed: bool
    own: bytes
    votes: Mapping[str, bytes]


@dataclass(frozen=True)
class RoundOver:
    """The world of round ``round`` is done at ``frame``; ``left`` the racers removed from it, with why."""

    round: int
    frame: int
    left: Mapping[PeerId, str]


@dataclass(frozen=True)
class ViewEnded:
    """The spectator session is over (``reason``), once."""

    reason: SpectateEndReason
    detail: str


ViewerAction = (DialSource | DropSource | RoundBegan | KeyVerified | CheckpointLoaded | FrameShown | HashChecked | RoundOver
                | ViewEnded | Misbehaviour)
