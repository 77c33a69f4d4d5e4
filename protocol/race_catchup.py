"""Catch-up bookkeeping (spec/netcode.md §6.1): the requester's quorum of offers and the responder's pins.

Pure state, no signatures (the session verifies first). The requester groups signed offers by exact
(frame, hash); the first group that reaches a strict majority of the roster in *remote* votes is the
target, and its voters are asked in arrival order. Timers run on explicit ``now_ms`` because a peer that
waits for a snapshot does not step frames.
"""

from __future__ import annotations

import hashlib

from protocol.errors import ProtocolError

PROBE_RETRY_MS = 1_000
PROBE_GIVE_UP_MS = 3_000
SNAPSHOT_TIMEOUT_MS = 5_000
RESUME_LEAD_FRAMES = 60
MAX_ADVANCE_FRAMES = 900
OFFER_TTL_FRAMES = 900
SYNC_COOLDOWN_FRAMES = 120


class CatchUpRequest:
    """One catch-up attempt of this node: probes out, offers in, then one sync request at a time."""

    def __init__(self, request_id: int, voters: list[str], need: int, now_ms: int, next_frame: int) -> None:
        self.request_id = request_id
        self.voters = voters
        self.need = need
        self.next_frame = next_frame
        self.started_ms = now_ms
        self.probes = 1
        self.groups: dict[tuple[int, bytes], list[str]] = {}
        self.answered: set[str] = set()
        self.target: tuple[int, bytes] | None = None
        self.order: list[str] = []
        self.pending: str | None = None
        self.pending_since = 0

    def add_offer(self, peer: str, frame: int, state_hash: bytes) -> bool:
        """Count one offer; True exactly when a group first reaches the quorum."""
        if self.target is not None or peer in self.answered:
            return False
        if frame - self.next_frame > MAX_ADVANCE_FRAMES:
            raise ProtocolError("race-offer-too-far", f"a snapshot may move this node at most {MAX_ADVANCE_FRAMES} frames ahead")
        self.answered.add(peer)
        group = self.groups.setdefault((frame, state_hash), [])
        group.append(peer)
        if len(group) < self.need:
            return False
        self.target = (frame, state_hash)
        self.order = list(group)
        return True

    def next_voter(self, now_ms: int) -> str | None:
        """The next voter of the target group to ask, or None when all of them failed."""
        self.pending = self.order.pop(0) if self.order else None
        self.pending_since = now_ms
        return self.pending

    def on_timer(self, now_ms: int) -> str | None:
        """``reprobe``, ``next-voter``, ``failed`` or None (nothing due)."""
        if self.target is None:
            if now_ms - self.started_ms >= PROBE_GIVE_UP_MS:
                return "failed"
            if now_ms - self.started_ms >= self.probes * PROBE_RETRY_MS:
                self.probes += 1
                return "reprobe"
            return None
        if self.pending is not None and now_ms - self.pending_since >= SNAPSHOT_TIMEOUT_MS:
            return "next-voter"
        return None


class OfferPins:
    """Snapshots this node promised to requesters: one pin per requester, until served or expired."""

    def __init__(self) -> None:
        self._pins: dict[str, tuple[int, int, bytes, bytes, int]] = {}
        self._served: dict[str, int] = {}

    def pin(self, peer: str, request_id: int, offered: tuple[int, bytes], next_frame: int) -> tuple[int, bytes]:
        """Pin ``offered`` (frame, state) for ``peer``; a retried request id gets the same commitment."""
        known = self._pins.get(peer)
        if known is not None and known[0] == request_id:
            return known[1], known[3]
        if known is not None and request_id < known[0]:
            raise ProtocolError("race-probe-stale", "an older catch-up request id")
        frame, state = offered
        digest = hashlib.sha256(state).digest()
        self._pins[peer] = (request_id, frame, state, digest, next_frame)
        return frame, digest

    def take(self, peer: str, request_id: int, frame: int, state_hash: bytes, next_frame: int) -> bytes:
        """The pinned state for an exact sync request; the pin is consumed and a cooldown starts."""
        pin = self._pins.get(peer)
        if pin is None or pin[0] != request_id or pin[1] != frame or pin[3] != state_hash:
            raise ProtocolError("race-sync-request-unknown", "no pinned offer matches this sync request")
        if next_frame - pin[4] > OFFER_TTL_FRAMES:
            del self._pins[peer]
            raise ProtocolError("race-sync-request-expired", "the pinned offer expired")
        served = self._served.get(peer)
        if served is not None and next_frame - served < SYNC_COOLDOWN_FRAMES:
            raise ProtocolError("race-sync-cooldown", "this peer was served a snapshot moments ago")
        del self._pins[peer]
        self._served[peer] = next_frame
        return pin[2]

    def drop(self, peer: str) -> None:
        self._pins.pop(peer, None)
