"""Catch-up bookkeeping (spec/netcode.md §6.1): the requester's quorum of offers and the responder's pins.

Pure state, no signatures (the session verifies first). The requester groups signed offers by exact
(frame, hash); the first group that reaches a strict majority of the roster in *remote* votes is the
target, and its voters are asked in arrival order. Timers run on explicit ``now_ms`` because a peer that
waits for a snapshot does not step frames. A re-probe uses a fresh request id (links are reliable, so
repeating an id could only repeat the same candidates; a fresh one lets responders offer newer ones).
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from typing import NamedTuple

from protocol.errors import ProtocolError
from protocol.race.messages import InputRecord
from protocol.identity.keys import PeerId

PROBE_RETRY_MS = 1_000
PROBE_GIVE_UP_MS = 3_000
SNAPSHOT_TIMEOUT_MS = 5_000
RESUME_LEAD_FRAMES = 60
MAX_ADVANCE_FRAMES = 900
OFFER_TTL_FRAMES = 900
SYNC_COOLDOWN_FRAMES = 120


class CatchUpVerdict(StrEnum):
    """What a catch-up timer asks for (``CatchUpRequest.on_timer``)."""

    REPROBE = "reprobe"  # no quorum yet: probe again with a fresh request id
    NEXT_VOTER = "next-voter"  # the asked voter did not deliver in time: ask the next one
    FAILED = "failed"  # no quorum within the give-up time


class Offer(NamedTuple):
    """A final 8-aligned pre-step snapshot and, per peer, the newest signed input before its frame
    (captured together, while those inputs are still held)."""

    frame: int
    state: bytes
    bases: list[InputRecord]


class CatchUpRequest:
    """One catch-up attempt of this node: probes out, offers in, then one sync request at a time."""

    def __init__(self, request_id: int, voters: list[PeerId], need: int, now_ms: int, next_frame: int) -> None:
        self.voters = voters
        self.need = need
        self.next_frame = next_frame
        self.started_ms = now_ms
        self.probes = 1
        self.target: tuple[int, bytes] | None = None
        self.order: list[PeerId] = []
        self.pending: PeerId | None = None
        self.pending_since = 0
        self.request_id = request_id
        self.groups: dict[tuple[int, bytes], list[PeerId]] = {}
        self.answered: set[PeerId] = set()
        self.too_far: set[PeerId] = set()
        """Peers whose every candidate is more than ``MAX_ADVANCE_FRAMES`` ahead of this node."""

    @property
    def out_of_reach(self) -> bool:
        """True once a quorum of peers offered only snapshots too far ahead: this node is so far behind
        that no catch-up can bring it back (spec/netcode.md §6.2: more than 900 frames behind a strict
        majority), and it leaves instead."""
        return len(self.too_far) >= self.need

    def restart(self, request_id: int) -> None:
        """A new probe round: a fresh id, so every responder pins its newest candidates again."""
        self.request_id = request_id
        self.groups = {}
        self.answered = set()
        self.too_far = set()

    def add_voter(self, peer: PeerId) -> bool:
        """Ask one more peer while no target is chosen; True if it is new."""
        if self.target is not None or peer in self.voters:
            return False
        self.voters.append(peer)
        return True

    def add_offer(self, peer: PeerId, candidates: list[tuple[int, bytes]]) -> bool:
        """Count one peer's offer; True exactly when a (frame, hash) group first reaches the quorum. A
        candidate more than ``MAX_ADVANCE_FRAMES`` ahead is not counted (no blame: the offer is honest,
        this node is the one behind); a peer that offers only such candidates counts towards
        ``out_of_reach``."""
        if self.target is not None or peer in self.answered:
            return False
        self.answered.add(peer)
        near = [(frame, digest) for frame, digest in candidates if frame - self.next_frame <= MAX_ADVANCE_FRAMES]
        if candidates and not near:
            self.too_far.add(peer)
        for candidate in dict.fromkeys(near):
            group = self.groups.setdefault(candidate, [])
            group.append(peer)
            if len(group) >= self.need:
                self.target = candidate
                self.order = list(group)
                return True
        return False

    def next_voter(self, now_ms: int) -> PeerId | None:
        """The next voter of the target group to ask, or None when all of them failed."""
        self.pending = self.order.pop(0) if self.order else None
        self.pending_since = now_ms
        return self.pending

    def on_timer(self, now_ms: int) -> CatchUpVerdict | None:
        """What is due at ``now_ms``, or None (nothing)."""
        if self.target is None:
            if now_ms - self.started_ms >= PROBE_GIVE_UP_MS:
                return CatchUpVerdict.FAILED
            if now_ms - self.started_ms >= self.probes * PROBE_RETRY_MS:
                self.probes += 1
                return CatchUpVerdict.REPROBE
            return None
        if self.pending is not None and now_ms - self.pending_since >= SNAPSHOT_TIMEOUT_MS:
            return CatchUpVerdict.NEXT_VOTER
        return None

    def next_deadline_ms(self) -> int | None:
        """When ``on_timer`` next has something to say (a re-probe, giving up, the next voter), or None
        while a target is chosen and no snapshot is awaited."""
        if self.target is None:
            return self.started_ms + min(PROBE_GIVE_UP_MS, self.probes * PROBE_RETRY_MS)
        if self.pending is not None:
            return self.pending_since + SNAPSHOT_TIMEOUT_MS
        return None


class OfferPins:
    """Snapshots this node promised to requesters: one pin per requester, until served or expired."""

    def __init__(self) -> None:
        self._pins: dict[PeerId, tuple[int, dict[tuple[int, bytes], Offer], int]] = {}
        self._served: dict[PeerId, int] = {}

    def pin(self, peer: PeerId, request_id: int, offered: list[Offer], next_frame: int) -> list[tuple[int, bytes]]:
        """Pin the ``offered`` snapshots for ``peer``; a repeated id gets the same (frame, hash) candidates.
        Raises ``ProtocolError`` ``race-probe-stale`` for an id older than the pinned one."""
        known = self._pins.get(peer)
        if known is not None and request_id < known[0]:
            raise ProtocolError("race-probe-stale", "an older catch-up request id")
        if known is None or known[0] != request_id:
            states = {(offer.frame, hashlib.sha256(offer.state).digest()): offer for offer in offered}
            known = (request_id, states, next_frame)
            self._pins[peer] = known
        return list(known[1])

    def take(self, peer: PeerId, request_id: int, candidate: tuple[int, bytes], next_frame: int) -> Offer:
        """The pinned offer for an exact sync request; the pin is consumed and a cooldown starts.
        Raises ``ProtocolError`` ``race-sync-request-unknown``, ``race-sync-request-expired`` or
        ``race-sync-cooldown``."""
        pin = self._pins.get(peer)
        if pin is None or pin[0] != request_id or candidate not in pin[1]:
            raise ProtocolError("race-sync-request-unknown", "no pinned offer matches this sync request")
        if next_frame - pin[2] > OFFER_TTL_FRAMES:
            del self._pins[peer]
            raise ProtocolError("race-sync-request-expired", "the pinned offer expired")
        served = self._served.get(peer)
        if served is not None and next_frame - served < SYNC_COOLDOWN_FRAMES:
            raise ProtocolError("race-sync-cooldown", "this peer was served a snapshot moments ago")
        del self._pins[peer]
        self._served[peer] = next_frame
        return pin[1][candidate]

    def drop(self, peer: PeerId) -> None:
        """Forget ``peer``'s pin (it left the round)."""
        self._pins.pop(peer, None)
