"""Checksum votes (spec/netcode.md §5.2): collect, wait, tally by strict majority; a mismatch never rolls back.

Pure bookkeeping, no signatures (the session verifies before it records). A peer's first vote for a
frame is locked; a different second one is refused. A frame is decided once every expected voter has
voted or ``VOTE_WAIT_FRAMES`` passed; after that, and past the 150-frame horizon, votes are dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum

from protocol.errors import ProtocolError
from protocol.identity.keys import PeerId

VOTE_INTERVAL_FRAMES = 120
VOTE_WAIT_FRAMES = 30
VOTE_HORIZON_FRAMES = 150
STRIKE_LIMIT = 3


class VoteKind(StrEnum):
    """How a tallied vote came out for this node (the race log's ``result``, and ``vote-<kind>`` state files)."""

    AGREED = "agreed"  # every counted hash equal
    MAJORITY = "majority"  # this node's hash won a strict majority, some differ
    MINORITY = "minority"  # this node's hash lost: a strike
    TIE = "tie"  # no strict majority: the match is consensus-invalid


@dataclass(frozen=True)
class VoteOutcome:
    """One tallied frame: ``kind`` for this node, every counted hash by peer, and the peers outside the
    majority (``dissenters``, empty on a tie)."""

    frame: int
    kind: VoteKind
    hashes: dict[PeerId, bytes]
    dissenters: tuple[PeerId, ...]


class VoteBook:
    """This node's checksum votes of one round: its own and the peers' hashes per vote frame, until decided.

    Why a book of its own: the rules of when a vote counts, when a frame is tallied and when votes are
    forgotten are pure bookkeeping, testable without signatures or a session."""

    def __init__(self, me: PeerId) -> None:
        self.me = me
        self._votes: dict[int, dict[PeerId, bytes]] = {}
        self._decided: set[int] = set()

    def accepts(self, frame: int, next_frame: int) -> bool:
        """Whether a vote for ``frame`` may still count: a vote frame, undecided, inside the horizon."""
        return (
            frame % VOTE_INTERVAL_FRAMES == 0
            and frame not in self._decided
            and next_frame - VOTE_HORIZON_FRAMES <= frame
        )

    def add(self, peer: PeerId, frame: int, state_hash: bytes) -> bool:
        """Record a vote; False for an identical repeat.

        Raises ``ProtocolError`` ``vote-conflict`` for a second, different vote of ``peer`` for ``frame``."""
        votes = self._votes.setdefault(frame, {})
        known = votes.get(peer)
        if known is not None:
            if known != state_hash:
                raise ProtocolError("vote-conflict", f"a second, different vote for frame {frame}")
            return False
        votes[peer] = state_hash
        return True

    def decide(self, next_frame: int, voters: Collection[PeerId]) -> list[VoteOutcome]:
        """Tally every frame whose own vote exists and whose wait is over (all ``voters`` in, or 30 frames)."""
        outcomes: list[VoteOutcome] = []
        for frame in sorted(self._votes):
            votes = self._votes[frame]
            if self.me not in votes:
                continue
            if not (all(v in votes for v in voters) or next_frame - frame >= VOTE_WAIT_FRAMES):
                continue
            outcomes.append(_tally(frame, self.me, votes))
            self._decided.add(frame)
            del self._votes[frame]
        horizon = next_frame - VOTE_HORIZON_FRAMES
        for frame in [f for f in self._votes if f < horizon]:
            del self._votes[frame]
        self._decided = {f for f in self._decided if f >= horizon}
        return outcomes


def _tally(frame: int, me: PeerId, votes: dict[PeerId, bytes]) -> VoteOutcome:
    kind: VoteKind
    counts = Counter(votes.values())
    top_hash, top = max(counts.items(), key=lambda item: (item[1], item[0]))
    received = len(votes)
    if 2 * top <= received:
        kind = VoteKind.TIE
    elif len(counts) == 1:
        kind = VoteKind.AGREED
    else:
        kind = VoteKind.MAJORITY if votes[me] == top_hash else VoteKind.MINORITY
    dissenters = tuple(sorted(p for p, h in votes.items() if h != top_hash)) if kind != VoteKind.TIE else ()
    return VoteOutcome(frame, kind, dict(votes), dissenters)
