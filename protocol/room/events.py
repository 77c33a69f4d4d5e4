"""What the room machines tell the user: one frozen dataclass per ``--json`` event (docs/rooms.md, Events).

Each class's ``EVENT`` is the stable event name and its fields are exactly that event's JSON keys, in
the order the stream has always printed them; the shell prints ``{"event": e.EVENT, **e.data()}``. Where
the host's and a member's view of one event differ (the host knows why a member left, a member learns
why a grid ceremony was cancelled), the key the other view never had is ``None`` and left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from protocol.actions import UserEvent
from protocol.room.messages import RoomDecision
from protocol.identity.keys import PeerId


@dataclass(frozen=True)
class Joined(UserEvent):
    """The host admitted this node to room ``room_id`` as ``role``."""

    EVENT = "joined"
    room_id: str
    role: str


@dataclass(frozen=True)
class MemberJoined(UserEvent):
    """``peer`` joined the room (reported by the host, and by each member from the room state)."""

    EVENT = "member-joined"
    peer: PeerId
    role: str
    nickname: str


@dataclass(frozen=True)
class MemberLeft(UserEvent):
    """``peer`` left the room; only the host knows the ``reason`` (a member sees it vanish from the
    room state, and its event has no ``reason`` key)."""

    EVENT = "member-left"
    peer: PeerId
    reason: str | None = None

    def data(self) -> dict[str, Any]:
        """``peer``, and ``reason`` when this view knows it."""
        return {"peer": self.peer} if self.reason is None else {"peer": self.peer, "reason": self.reason}


@dataclass(frozen=True)
class CompatibilityChecked(UserEvent):
    """This node's verdict on ``peer``'s build: the reason tokens and both values of each differing field."""

    EVENT = "compatibility"
    peer: PeerId
    compatible: bool
    reasons: list[str]
    differences: list[str]


@dataclass(frozen=True)
class ReadyChanged(UserEvent):
    """``peer`` declared Ready (``ready``) or withdrew it (host view)."""

    EVENT = "ready"
    peer: PeerId
    ready: bool


@dataclass(frozen=True)
class ReadyRefused(UserEvent):
    """The host refused this node's Ready declaration (``code``, ``message``): it is not Ready, and
    ``--auto-ready`` declares again once the room has changed (member view)."""

    EVENT = "ready-refused"
    code: str
    message: str


@dataclass(frozen=True)
class ReadyWithdrawn(UserEvent):
    """This node was listed Ready and no longer is: ``reason`` (a ``ReadyWithdrawal``) and ``message``
    (member view; whatever withdrew it, the member says so)."""

    EVENT = "ready-withdrawn"
    reason: str
    message: str


@dataclass(frozen=True)
class RoomDecided(UserEvent):
    """The host's ``ruling`` about a participant's Ready (the host's view, and every member's from its
    ``room-decision``, bounded): the event's data are the message's fields, ``participant``, ``decision``,
    ``code``, ``detail``, ``by``, ``strikes``, ``removed``."""

    EVENT = "room-decision"
    ruling: RoomDecision

    def data(self) -> dict[str, Any]:
        """The ruling's fields, in the message's order."""
        return {name: getattr(self.ruling, name) for name in self.ruling.__struct_fields__}


@dataclass(frozen=True)
class ReadySetFormed(UserEvent):
    """Every participant is Ready: the host sent the ReadySet with this ``digest`` over ``roster``."""

    EVENT = "ready-set"
    digest: str
    roster: list[PeerId]


@dataclass(frozen=True)
class ReadySetRefused(UserEvent):
    """``peer`` refused to acknowledge the ReadySet, saying ``code`` and ``detail`` (host view)."""

    EVENT = "ready-set-refused"
    peer: PeerId
    code: str
    detail: str


@dataclass(frozen=True)
class GridCancelled(UserEvent):
    """A start-grid ceremony was dropped. The host reports the ``missing`` peers of a timed-out phase;
    a member reports the host's ``reason`` first (the host's own event has no ``reason`` key)."""

    EVENT = "grid-cancelled"
    missing: list[PeerId]
    reason: str | None = None

    def data(self) -> dict[str, Any]:
        """``reason`` (when known) then ``missing``, the order the stream has always had."""
        return {"missing": self.missing} if self.reason is None else {"reason": self.reason, "missing": self.missing}


@dataclass(frozen=True)
class CountdownStarted(UserEvent):
    """The start is locked: match ``match_id`` starts at ``deadline_ms``."""

    EVENT = "countdown"
    match_id: str
    deadline_ms: int


@dataclass(frozen=True)
class CountdownCancelled(UserEvent):
    """Too few of the locked roster remained (``leavers`` went): the room waits again."""

    EVENT = "countdown-cancelled"
    leavers: list[PeerId]


@dataclass(frozen=True)
class SuccessorChosen(UserEvent):
    """The host ``lost`` was lost while waiting; ``successor`` hosts the room from now on."""

    EVENT = "host-succession"
    lost: str
    successor: PeerId


@dataclass(frozen=True)
class MatchBegan(UserEvent):
    """The match started with ``roster``; ``pre_start_disconnects`` left during the countdown."""

    EVENT = "match-start"
    match_id: str
    roster: list[PeerId]
    pre_start_disconnects: list[PeerId]


@dataclass(frozen=True)
class ErrorReported(UserEvent):
    """Something went wrong that the user should see: a refusal (``code`` is stable), a peer's bad
    message, or the end of the room."""

    EVENT = "error"
    code: str
    message: str


RoomEvent: TypeAlias = (
    Joined | MemberJoined | MemberLeft | CompatibilityChecked | ReadyChanged | ReadyRefused | ReadyWithdrawn
    | RoomDecided | ReadySetFormed | ReadySetRefused | GridCancelled | CountdownStarted | CountdownCancelled
    | SuccessorChosen | MatchBegan | ErrorReported
)
"""Every user-visible event a room machine reports."""
