"""End-of-round consensus anchor (spec/identity.md §4.4): one strict-majority certificate per round.

The proposer is the first present peer in PeerId order; every ``FALLBACK_SLOT_MS`` the next one may
propose if no proposal was seen. A signer endorses a proposal only if it agrees on every fact (match,
round, grid, the frame is in the tail of the round's final checksum frames, its own checksum there, the
present peers) and has signed no anchor for this (matchId, round) yet, whatever the frame or checksum.
Signatures are by master keys over ``ledger_signing_digest`` of the event. Without a quorum within
``COLLECTION_TIMEOUT_MS`` the round's anchor is null.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from protocol.identity.consensus import canonical_peers, quorum, within_tail
from protocol.encoding.dagcbor import ledger_signing_digest
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity, verify_signature
from protocol.race.actions import AnchorDecided, AnchorReached, RaceAction, Send
from protocol.race.messages import RaceAnchorProposal, RaceAnchorSignature
from protocol.identity.keys import PeerId

ANCHOR_TYPE = "race-consensus-anchor"
FALLBACK_SLOT_MS = 2_000
COLLECTION_TIMEOUT_MS = 12_000
EVENT_KEYS = frozenset({
    "type", "matchId", "gridContextDigest", "gridSeed", "roundIndex", "frame", "checksum", "presentPeers",
    "timestamp", "peerId", "signature", "signatures",
})


@dataclass(frozen=True)
class AnchorFacts:
    """What this node saw of the round: every field a signer must agree on, except who proposes when."""

    match_id: str
    grid_context_digest: str
    grid_seed: str
    round_index: int
    terminal_frame: int
    checksums: Mapping[int, str]
    """This node's own hex state hash of each final checksum frame it still holds (the tail candidates)."""
    present_peers: tuple[PeerId, ...]


def anchor_event(facts: AnchorFacts, frame: int, proposer: str, timestamp: int) -> dict[str, Any]:
    """The RaceConsensusAnchorEvent ``proposer`` would propose at ``frame`` from ``facts``, unsigned.
    Raises ``KeyError`` when ``facts`` hold no checksum of ``frame``."""
    return {
        "type": ANCHOR_TYPE, "matchId": facts.match_id, "gridContextDigest": facts.grid_context_digest,
        "gridSeed": facts.grid_seed, "roundIndex": facts.round_index, "frame": frame,
        "checksum": facts.checksums[frame], "presentPeers": list(facts.present_peers), "timestamp": timestamp,
        "peerId": proposer, "signature": b"", "signatures": [],
    }


class AnchorRound:
    """Proposes, endorses and collects the anchor of one round for one node.

    A small machine of its own (the session creates it when its round ends): ``tick(now_ms)`` for its
    slots and timeout, ``receive(peer, msg, now_ms)`` for the two anchor messages; it returns
    ``RaceAction`` values and raises ``ProtocolError`` for what a peer sent."""

    def __init__(self, identity: Identity, facts: AnchorFacts, ledger_address: str, now_ms: int) -> None:
        self.identity = identity
        self.facts = facts
        self.ledger_address = ledger_address
        self.started_ms = now_ms
        self.present = canonical_peers(facts.present_peers)
        self.need = quorum(len(self.present))
        self.decided = False
        self._event: dict[str, Any] | None = None
        self._digest: bytes | None = None
        self._signatures: dict[str, bytes] = {}
        self._early: dict[str, RaceAnchorSignature] = {}

    def _others(self) -> list[PeerId]:
        return [p for p in self.present if p != self.identity.peer_id]

    def tick(self, now_ms: int) -> list[RaceAction]:
        """Propose when this node's fallback slot comes and nothing was signed yet; time out at 12 s."""
        if self.decided:
            return []
        if now_ms - self.started_ms >= COLLECTION_TIMEOUT_MS:
            self.decided = True
            return [AnchorDecided(self.facts.round_index, None), AnchorReached(self.facts.round_index, None)]
        candidates = [f for f in self.facts.checksums if within_tail(f, self.facts.terminal_frame)]
        if self._event is not None or self.identity.peer_id not in self.present or not candidates:
            return []
        slot = self.present.index(self.identity.peer_id)
        if now_ms - self.started_ms < slot * FALLBACK_SLOT_MS:
            return []
        event = anchor_event(self.facts, max(candidates), self.identity.peer_id, now_ms)
        actions = self._endorse(event)
        proposals: list[RaceAction] = [Send(p, RaceAnchorProposal(event)) for p in self._others()]
        return proposals + actions

    def next_deadline_ms(self) -> int | None:
        """When ``tick`` next has something to do: this node's fallback proposal slot (while it has
        endorsed nothing and holds a candidate frame), else the collection timeout; None once decided.
        The shell sleeps until then instead of ticking on a fixed period."""
        if self.decided:
            return None
        timeout = self.started_ms + COLLECTION_TIMEOUT_MS
        candidates = [f for f in self.facts.checksums if within_tail(f, self.facts.terminal_frame)]
        if self._event is not None or self.identity.peer_id not in self.present or not candidates:
            return timeout
        return min(timeout, self.started_ms + self.present.index(self.identity.peer_id) * FALLBACK_SLOT_MS)

    def receive(self, peer: PeerId, msg: RaceAnchorProposal | RaceAnchorSignature, now_ms: int) -> list[RaceAction]:
        """One anchor message from the link's authenticated ``peer`` (``on_proposal`` or ``on_signature``)."""
        if isinstance(msg, RaceAnchorProposal):
            return self.on_proposal(peer, msg)
        return self.on_signature(peer, msg)

    def on_proposal(self, peer: PeerId, msg: RaceAnchorProposal) -> list[RaceAction]:
        """Endorse ``peer``'s proposal if it agrees with this node's view and no anchor was signed yet.
        Raises ``ProtocolError`` ``race-anchor-invalid`` or ``race-anchor-disagrees``."""
        event = msg.event
        if self.decided or self._event is not None:
            return []  # at most one anchor per (matchId, round), whatever the frame or checksum
        if set(event) != EVENT_KEYS or event.get("peerId") != peer or peer not in self.present:
            raise ProtocolError("race-anchor-invalid", "the proposal is not an anchor event by its sender")
        frame, timestamp = event["frame"], event["timestamp"]
        if type(frame) is not int or frame < 0 or not within_tail(frame, self.facts.terminal_frame):
            raise ProtocolError("race-anchor-disagrees", "the anchor frame is not one of the round's final checksum frames")
        if frame not in self.facts.checksums or type(timestamp) is not int or timestamp < 0:
            raise ProtocolError("race-anchor-disagrees", "this node holds no checksum of that frame")
        if event != anchor_event(self.facts, frame, peer, timestamp):
            raise ProtocolError("race-anchor-disagrees", "the proposed anchor differs from this node's view")
        return self._endorse(event)

    def on_signature(self, peer: PeerId, msg: RaceAnchorSignature) -> list[RaceAction]:
        """Count ``peer``'s signature of the endorsed proposal (kept until the proposal arrives). Raises
        ``ProtocolError`` ``race-anchor-bad-signature``."""
        if self.decided or peer not in self.present:
            return []
        if self._digest is None:
            if len(self._early) < len(self.present):
                self._early[peer] = msg  # it may come before the proposal it signs
            return []
        if msg.digest != self._digest:
            return []  # a signature for another proposal: not ours to count
        if not verify_signature(peer, self._digest, msg.signature):
            raise ProtocolError("race-anchor-bad-signature", "the anchor signature does not verify")
        self._signatures[peer] = msg.signature
        return self._check_quorum()

    def _endorse(self, event: dict[str, Any]) -> list[RaceAction]:
        self._event = event
        digest = self._digest = ledger_signing_digest(self.ledger_address, event)
        signature = self.identity.sign(digest)
        self._signatures[self.identity.peer_id] = signature
        actions: list[RaceAction] = [Send(p, RaceAnchorSignature(digest, signature)) for p in self._others()]
        early, self._early = self._early, {}
        for peer, msg in early.items():
            if msg.digest == digest and verify_signature(peer, digest, msg.signature):
                self._signatures[peer] = msg.signature
        return actions + self._check_quorum()

    def _check_quorum(self) -> list[RaceAction]:
        if self.decided or self._event is None or len(self._signatures) < self.need:
            return []
        self.decided = True
        event = dict(self._event)
        event["signatures"] = [{"signer": p, "sig": self._signatures[p]} for p in sorted(self._signatures)]
        return [AnchorDecided(self.facts.round_index, event), AnchorReached(self.facts.round_index, event["frame"])]


def verify_anchor(event: Mapping[str, Any], ledger_address: str) -> None:
    """Check a certificate on its own: shape, distinct present signers, a quorum of valid signatures.
    Raises ``ProtocolError`` ``race-anchor-invalid``, ``race-anchor-bad-signature`` or
    ``race-anchor-no-quorum`` (the certificate is the signers' work, not this node's)."""
    if not isinstance(event, Mapping) or set(event) != EVENT_KEYS or event["type"] != ANCHOR_TYPE:
        raise ProtocolError("race-anchor-invalid", "not a race consensus anchor")
    present = event["presentPeers"]
    if not isinstance(present, list) or present != canonical_peers(present):
        raise ProtocolError("race-anchor-invalid", "presentPeers must be canonical")
    digest = ledger_signing_digest(ledger_address, event)
    signers: set[str] = set()
    for entry in event["signatures"]:
        if not isinstance(entry, Mapping) or entry.get("signer") not in present or entry["signer"] in signers:
            raise ProtocolError("race-anchor-invalid", "every signer is a distinct present peer")
        if not verify_signature(entry["signer"], digest, entry.get("sig")):
            raise ProtocolError("race-anchor-bad-signature", f"the signature of {entry['signer']} does not verify")
        signers.add(entry["signer"])
    if len(signers) < quorum(len(present)):
        raise ProtocolError("race-anchor-no-quorum", "fewer signatures than a strict majority of the present peers")
