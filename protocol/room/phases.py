"""The host's room phases as one transition table (in the manner of h11's ``_state.py``).

Every phase change of ``HostRoom`` is a ``PhaseChange`` (what happened) looked up in ``TRANSITIONS``
for the phase the room is in, through ``next_phase``; nothing else assigns a phase. Why one table: the
legal moves of the Ready ceremony (collecting → verifying → grid commit → grid reveal → countdown →
started, and the ways back to collecting) are read in one place, and a move the table does not hold
is caught where it is attempted instead of leaving the room in a phase no rule expects.

An illegal move is a bug of this node (``LocalError`` ``room-phase-illegal``), never a peer's fault:
the host judges each peer's message against the current phase before it decides on a change, so a
message out of turn is refused (or dropped) as that peer's, and never reaches the table.

The member never changes a phase: it shows the phase of the host's ``room-state`` (a peer's word).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Final

from protocol.errors import LocalError
from protocol.room.states import RoomPhase


class PhaseChange(Enum):
    """What moves the host's room from one phase to the next."""

    READY_SET_FORMED = "ready-set-formed"  # every participant (at least the minimum) declared Ready
    ALL_ACKED = "all-acked"  # every participant acknowledged the ReadySet: the grid commitments open
    ALL_COMMITTED = "all-committed"  # every commitment is in: the reveals open
    ALL_REVEALED = "all-revealed"  # every nonce is revealed: the LockedStartPackage is out, 5 s to the start
    COUNTDOWN_ENDED = "countdown-ended"  # match-start
    CEREMONY_DROPPED = "ceremony-dropped"  # a participant joined or left, or a Ready changed, mid-ceremony
    READY_SET_JUDGED = "ready-set-judged"  # refused or not answered in time: whoever it failed on is un-Ready
    GRID_TIMED_OUT = "grid-timed-out"  # a grid phase ran out with participants missing
    COUNTDOWN_CANCELLED = "countdown-cancelled"  # too few of the locked roster remain (everyone un-Ready)


INITIAL_PHASE: Final = RoomPhase.COLLECTING
"""Where every room starts, a successor's too."""

TRANSITIONS: Final[Mapping[RoomPhase, Mapping[PhaseChange, RoomPhase]]] = {
    RoomPhase.COLLECTING: {PhaseChange.READY_SET_FORMED: RoomPhase.VERIFYING},
    RoomPhase.VERIFYING: {
        PhaseChange.ALL_ACKED: RoomPhase.GRID_COMMIT,
        PhaseChange.CEREMONY_DROPPED: RoomPhase.COLLECTING,
        PhaseChange.READY_SET_JUDGED: RoomPhase.COLLECTING,
    },
    RoomPhase.GRID_COMMIT: {
        PhaseChange.ALL_COMMITTED: RoomPhase.GRID_REVEAL,
        PhaseChange.CEREMONY_DROPPED: RoomPhase.COLLECTING,
        PhaseChange.GRID_TIMED_OUT: RoomPhase.COLLECTING,
    },
    RoomPhase.GRID_REVEAL: {
        PhaseChange.ALL_REVEALED: RoomPhase.COUNTDOWN,
        PhaseChange.CEREMONY_DROPPED: RoomPhase.COLLECTING,
        PhaseChange.GRID_TIMED_OUT: RoomPhase.COLLECTING,
    },
    RoomPhase.COUNTDOWN: {
        PhaseChange.COUNTDOWN_ENDED: RoomPhase.STARTED,
        PhaseChange.COUNTDOWN_CANCELLED: RoomPhase.COLLECTING,
    },
    RoomPhase.STARTED: {},  # the race runs in its own session; the room admits nobody any more
    RoomPhase.CLOSED: {},  # a wire value for a room nobody hosts any more: a host never moves into it
}
"""Phase → {what happened → the next phase}: every legal move, and nothing else."""


def next_phase(phase: RoomPhase, change: PhaseChange) -> RoomPhase:
    """The phase ``change`` moves the room to from ``phase``. Raises ``LocalError``
    ``room-phase-illegal`` for a move the table does not hold: a bug of this node."""
    target = TRANSITIONS[phase].get(change)
    if target is None:
        raise LocalError("room-phase-illegal", f"{change.value} cannot happen in phase {phase.value} (a bug of this node)")
    return target
