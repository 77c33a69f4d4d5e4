"""The roster of one race round as the session sees it: each peer's status and the first frame from
which its real input is required.

Why an object of its own: the session (stepping, finality, votes) and the recovery (lost peers,
rejoin, catch-up) both read and change these two facts, and nothing else of each other's state; the
table is what they share, passed to both, instead of one reaching into the other's attributes.
"""

from __future__ import annotations

from enum import StrEnum
from protocol.identity.keys import PeerId


class PeerStatus(StrEnum):
    """A peer's place in the round (``RaceSession.status``)."""

    ACTIVE = "active"  # linked: its real inputs are waited for
    LOST = "lost"  # link broken: predicted during the reconnect window
    REJOINING = "rejoining"  # linked again but catching up: still predicted, window still running
    REMOVED = "removed"  # out of the round for good (it left, or its window closed)


ACTIVE, LOST, REJOINING, REMOVED = PeerStatus.ACTIVE, PeerStatus.LOST, PeerStatus.REJOINING, PeerStatus.REMOVED
"""Module-level names for the hot paths (a plain global read instead of an enum class attribute)."""


class PeerTable:
    """Status and ``active_from`` of every peer of the roster, this node included (always active).

    ``statuses`` and ``active_from`` are plain dicts by PeerId that the session and the recovery update
    directly; the methods are the questions both ask."""

    __slots__ = ("me", "roster", "others", "statuses", "active_from")

    def __init__(self, me: PeerId, roster: tuple[PeerId, ...]) -> None:
        self.me = me
        self.roster = roster
        self.others = tuple(p for p in roster if p != me)
        self.statuses = {p: ACTIVE for p in roster}
        self.active_from = {p: 0 for p in roster}
        """The first frame from which the peer's real input is required (after a rejoin or resume)."""

    def is_active(self, peer: PeerId) -> bool:
        """True for a linked peer whose inputs are real (KeyError for a peer off the roster)."""
        return self.statuses[peer] is ACTIVE

    def required(self, peer: PeerId, frame: int) -> bool:
        """Whether ``peer``'s real input of ``frame`` must be in before the frame can be final."""
        return self.statuses[peer] is ACTIVE and frame >= self.active_from[peer]

    def active_others(self) -> list[PeerId]:
        """The other peers that are active, in roster order."""
        return [p for p in self.others if self.statuses[p] is ACTIVE]

    def remaining_others(self) -> list[PeerId]:
        """The other peers not removed (they still get this node's messages and still vote)."""
        return [p for p in self.others if self.statuses[p] is not REMOVED]

    def present_count(self) -> int:
        """This node plus its active peers: the side of a partition this node is on."""
        return 1 + sum(1 for p in self.others if self.statuses[p] is ACTIVE)

    def removed_count(self) -> int:
        """How many peers are out of the round for good."""
        return sum(1 for s in self.statuses.values() if s is REMOVED)

    def any_lost(self) -> bool:
        """Whether some peer is predicted for lack of a link (lost, or rejoining and catching up)."""
        return any(s is LOST or s is REJOINING for s in self.statuses.values())
