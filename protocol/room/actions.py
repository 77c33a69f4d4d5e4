"""What the room machines ask their shell to do: the shared link actions, a member's own actions, and
the user events; ``RoomAction`` is their union, the element type of every list a room machine returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from protocol.actions import CloseLink, Misbehaviour, Send
from protocol.encoding.wire import Message
from protocol.room.events import ErrorReported, RoomEvent
from protocol.room.locked_start import LockedStart
from protocol.room.messages import RoomState
from protocol.identity.keys import PeerId

__all__ = [
    "CloseLink", "FetchAssets", "HostSuccession", "MatchStarted", "Misbehaviour", "RelayedIn", "RoomAction",
    "Send", "refused",
]


@dataclass(frozen=True)
class RelayedIn:
    """An asset message from ``origin`` (attested by the host) for the shell's asset transfer."""

    origin: PeerId
    message: Message


@dataclass(frozen=True)
class FetchAssets:
    """Refs this node lacks, with the member that declared them (the shell fetches and stores them)."""

    owner: PeerId
    refs: list[str]


@dataclass(frozen=True)
class HostSuccession:
    """The host was lost while waiting: ``successor`` (listening at ``listen``) hosts from now on."""

    successor: PeerId
    listen: str
    state: RoomState


@dataclass(frozen=True)
class MatchStarted:
    """The verified start: the race runs from ``locked``; ``pre_start_disconnects`` left in the countdown;
    ``spectator_sources`` maps each spectator to the racer that streams the race to it."""

    locked: LockedStart
    pre_start_disconnects: list[PeerId]
    spectator_sources: dict[PeerId, PeerId] = field(default_factory=dict)


RoomAction: TypeAlias = Send | CloseLink | Misbehaviour | RelayedIn | FetchAssets | HostSuccession | MatchStarted | RoomEvent
"""Everything ``HostRoom`` and ``MemberRoom`` return. A ``Misbehaviour`` names a peer whose message broke
a rule; the room's user-visible answer to it (an ``error`` event) comes beside it."""


def refused(peer: PeerId, code: str, message: str, *, blame: bool) -> list[RoomAction]:
    """A room's answer to a message from ``peer`` that broke a rule (``code``): the ``error`` event the
    user has always seen, after a ``Misbehaviour`` that blames ``peer`` when ``blame`` (False for a
    message from this node's own seat: the host's member and host machines talk in process, and a
    mistake there is never a peer's)."""
    actions: list[RoomAction] = [Misbehaviour(peer, code)] if blame else []
    actions.append(ErrorReported(code, message))
    return actions

