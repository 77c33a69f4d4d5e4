"""The room's closed sets of states and reasons (spec/rooms.md §4), as enums instead of loose strings.

Every value here reaches the wire (``room-state.phase``, a member's ``role``, a verdict's ``reason``,
a cancel's ``reason``) or the ``--json`` events, so they are ``StrEnum``: a member compares, hashes,
encodes (msgpack, DAG-CBOR, JSON) and prints exactly as its string value, and the bytes stay the same.
Values read from a peer stay plain ``str`` in the wire messages; they compare equal to these members.
"""

from __future__ import annotations

from enum import StrEnum


class RoomPhase(StrEnum):
    """Where the host's room stands (``room-state.phase``): waiting, the Ready ceremony, the start."""

    COLLECTING = "collecting"  # members join, choose cars and declare Ready
    VERIFYING = "verifying"  # the ReadySet is out; waiting for every participant's ack
    GRID_COMMIT = "grid-commit"  # start-grid ceremony, first half: signed commitments
    GRID_REVEAL = "grid-reveal"  # second half: the nonces behind them
    COUNTDOWN = "countdown"  # the LockedStartPackage is out; 5 s to the start
    STARTED = "started"  # match-start sent; the room admits nobody any more
    CLOSED = "closed"


#: The phases before the start is locked: cars may change, Ready may be declared or cancelled, and a
#: lost host is succeeded (spec/rooms.md §4.2).
WAITING_PHASES = frozenset({RoomPhase.COLLECTING, RoomPhase.VERIFYING, RoomPhase.GRID_COMMIT, RoomPhase.GRID_REVEAL})


class Role(StrEnum):
    """A member's role, chosen by the invitation it joined with."""

    PARTICIPANT = "participant"
    SPECTATOR = "spectator"


class JoinReason(StrEnum):
    """``join-verdict.reason``: ``ok``, or the spec's closed set of refusals (also the link's close code)."""

    OK = "ok"
    JOIN_REJECTED = "join-rejected"
    ROOM_CLOSED = "room-closed"
    SPECTATORS_DISABLED = "spectators-disabled"
    SPECTATOR_FULL = "spectator-full"


class CeremonyCancel(StrEnum):
    """Why the host dropped a Ready ceremony (``grid-ceremony-cancel.reason``)."""

    MEMBERSHIP_CHANGED = "membership-changed"  # a participant joined or left
    READY_CHANGED = "ready-changed"  # a new declaration replaced one the ceremony was built on
    READY_CANCELLED = "ready-cancelled"
    TIMEOUT = "timeout"  # a grid phase ran out (PHASE_TIMEOUT_MS) with peers missing


class CountdownCancelReason(StrEnum):
    """Why the host dropped the countdown (``countdown-cancel.reason``)."""

    NO_MAJORITY = "no-majority"  # too few of the locked roster are still connected (spec §4.6)


class Departure(StrEnum):
    """The reasons this node gives when a member goes (``member-left.reason``, ``leave.reason``, the
    link's close code). A peer's own ``leave`` reason is free text and is reported as sent."""

    LINK_CLOSED = "link-closed"
    LEFT = "left"  # a leave message without a reason
    VOLUNTARY = "voluntary"  # what this node sends when its player leaves
    COUNTDOWN_DISCONNECT = "countdown-disconnect"
    STALLED = "room-stalled"  # the host removed it: a member the Ready ceremony kept failing on (stalls.py)
    ROOM_ENDED = "room-ended"  # the normal end of every room link when the room ends (match start, close, leave)


class StallDecision(StrEnum):
    """Why the host withdrew a participant's Ready (``room-decision.decision``, protocol/room/stalls.py)."""

    DECLARATION_REFUSED = "declaration-refused"  # more participants refused its car or build than accept it
    REFUSAL_OVERRULED = "refusal-overruled"  # it refused a declaration (or the set) the room accepts
    NO_ANSWER = "no-answer"  # neither an ack nor a refusal of the ReadySet within the answer timeout
    GRID_TIMEOUT = "grid-timeout"  # it missed a start-grid phase
    READY_NOT_RENEWED = "ready-not-renewed"  # a participant with a strike that was not Ready again in time


class ReadyCancel(StrEnum):
    """``cancel-ready.reason``."""

    PLAYER = "player"  # the player withdrew Ready


class ReadyWithdrawal(StrEnum):
    """Why a member's own Ready is gone (the member's ``ready-withdrawn`` event, ``reason``): what the
    member saw just before the host's room state stopped listing it Ready."""

    PLAYER = "player"  # this node sent cancel-ready
    GRID_TIMEOUT = "grid-timeout"  # the host withdrew it: this node missed a start-grid phase
    DECLARATION_REFUSED = "declaration-refused"  # the room refused this node's car or build
    REFUSAL_OVERRULED = "refusal-overruled"  # this node refused what the room accepts
    NO_ANSWER = "no-answer"  # this node did not answer the ReadySet in time
    COUNTDOWN_CANCELLED = "countdown-cancelled"  # too few of the locked roster remained: everyone un-Ready
    HOST_LOST = "host-lost"  # the host was lost while waiting: its successor starts with nobody Ready
    UNEXPLAINED = "unexplained"  # the room state stopped listing it Ready and nothing said why
