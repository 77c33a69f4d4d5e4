"""Start-grid commit/reveal ceremony (spec/rooms.md §4.6, D-20260814-20), with this project's byte layout.

The spec fixes the shape (32-byte nonces, commit then reveal, seed over the locked context and the
sorted reveals, slot order from a per-peer hash, rotated by round) but not the bytes; these are ours,
frozen by tests/protocol/room/test_start_grid.py vectors and documented in docs/rooms.md:

    contextDigest = signing_digest(GridLockedContext)                      (32 bytes; dagcbor.signing_digest)
    commitment    = SHA-256("open4wd-node-grid-commit-v1" 00 ‖ contextDigest ‖ utf8(peerId) 00 ‖ nonce)
    gridSeed      = SHA-256("open4wd-node-grid-seed-v1" 00 ‖ contextDigest ‖
                            for each peer in sorted order: u16be(len(peerId)) ‖ utf8(peerId) ‖ nonce)
    slotKey(peer) = SHA-256("open4wd-node-grid-slot-v1" 00 ‖ gridSeed ‖ utf8(peerId))
    base order    = peers sorted by (slotKey, peerId); slot in round r = (baseIndex + r) mod N
"""

from __future__ import annotations

import hashlib
import secrets
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from protocol.encoding.dagcbor import signing_digest
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.identity.signed import SignedPayload, build_signed, check_signature
from protocol.identity.keys import PeerId

GRID_NONCE_BYTES = 32
PHASE_TIMEOUT_MS = 15_000
COMMIT_DOMAIN = b"open4wd-node-grid-commit-v1\x00"
SEED_DOMAIN = b"open4wd-node-grid-seed-v1\x00"
SLOT_DOMAIN = b"open4wd-node-grid-slot-v1\x00"
COMMIT_TYPE = "grid-commit"
REVEAL_TYPE = "grid-reveal"


def grid_context(room_id: str, roster: Sequence[PeerId], track_digests: Sequence[str], round_count: int) -> dict[str, Any]:
    """GridLockedContext: version, series (room) id, canonical roster, per-round track digests, rules, rounds.

    Its digest (``contextDigest``) is ``protocol.encoding.dagcbor.signing_digest(context)``, like every
    other context and package digest of the room.
    """
    return {
        "version": 1,
        "seriesId": room_id,
        "roster": sorted(set(roster)),
        "trackDigests": list(track_digests),
        "matchRules": {},
        "roundCount": round_count,
    }


def new_nonce() -> bytes:
    """A fresh 32-byte grid nonce."""
    return secrets.token_bytes(GRID_NONCE_BYTES)


def commitment(context_digest_bytes: bytes, peer_id: PeerId, nonce: bytes) -> bytes:
    """What a peer commits to: its nonce, hidden behind the context and its PeerId."""
    return hashlib.sha256(COMMIT_DOMAIN + context_digest_bytes + peer_id.encode() + b"\x00" + nonce).digest()


def grid_seed(context_digest_bytes: bytes, reveals: Mapping[PeerId, bytes]) -> bytes:
    """The seed every peer derives from the context and everyone's revealed nonce."""
    parts = [SEED_DOMAIN, context_digest_bytes]
    for peer in sorted(reveals):
        raw = peer.encode()
        parts += [struct.pack(">H", len(raw)), raw, reveals[peer]]
    return hashlib.sha256(b"".join(parts)).digest()


def base_order(seed: bytes, roster: Sequence[PeerId]) -> list[PeerId]:
    """The roster in round-0 slot order: by (slot key, PeerId)."""
    return sorted(set(roster), key=lambda p: (hashlib.sha256(SLOT_DOMAIN + seed + p.encode()).digest(), p))


def slot_for(seed: bytes, roster: Sequence[PeerId], peer_id: PeerId, round_index: int) -> int:
    """``peer_id``'s start slot in round ``round_index`` (the base order rotated by the round)."""
    order = base_order(seed, roster)
    return (order.index(peer_id) + round_index) % len(order)


def build_commit(identity: Identity, digest: bytes, nonce: bytes, now_ms: int) -> SignedPayload:
    """This node's signed commitment to ``nonce`` for the context with ``digest``."""
    payload = {
        "type": COMMIT_TYPE, "contextDigest": digest.hex(), "commitment": commitment(digest, identity.peer_id, nonce).hex()
    }
    return build_signed(identity, payload, now_ms)


def build_reveal(identity: Identity, digest: bytes, nonce: bytes, now_ms: int) -> SignedPayload:
    """This node's signed reveal of the nonce it committed to."""
    return build_signed(identity, {"type": REVEAL_TYPE, "contextDigest": digest.hex(), "nonce": nonce}, now_ms)


def check_commit(envelope: SignedPayload, digest: bytes) -> bytes:
    """The commitment bytes of a commit for this context, signed by its peer.

    Raises ``ProtocolError`` (``invalid-signature``, ``grid-invalid``).
    """
    check_signature(envelope)
    p = envelope.payload
    if not isinstance(p, Mapping) or set(p) != {"type", "contextDigest", "commitment"} or p["type"] != COMMIT_TYPE:
        raise ProtocolError("grid-invalid", "malformed grid commit")
    if p["contextDigest"] != digest.hex():
        raise ProtocolError("grid-invalid", "the grid commit is for another context")
    try:
        value = bytes.fromhex(p["commitment"]) if isinstance(p["commitment"], str) else b""
    except ValueError:
        value = b""
    if len(value) != 32:
        raise ProtocolError("grid-invalid", "a grid commitment is 32 bytes of hex")
    return value


def check_reveal(envelope: SignedPayload, digest: bytes, committed: bytes) -> bytes:
    """The revealed nonce, checked against the peer's locked commitment.

    Raises ``ProtocolError`` (``invalid-signature``, ``grid-invalid``).
    """
    check_signature(envelope)
    p = envelope.payload
    if not isinstance(p, Mapping) or set(p) != {"type", "contextDigest", "nonce"} or p["type"] != REVEAL_TYPE:
        raise ProtocolError("grid-invalid", "malformed grid reveal")
    if p["contextDigest"] != digest.hex():
        raise ProtocolError("grid-invalid", "the grid reveal is for another context")
    nonce = p["nonce"]
    if not isinstance(nonce, bytes) or len(nonce) != GRID_NONCE_BYTES:
        raise ProtocolError("grid-invalid", f"a grid nonce is {GRID_NONCE_BYTES} bytes")
    if commitment(digest, envelope.signer, nonce) != committed:
        raise ProtocolError("grid-invalid", f"{envelope.signer[-4:]} revealed a nonce that does not match its commitment")
    return nonce


def verify_grid_proof(context: Mapping[str, Any], commits: Sequence[object], reveals: Sequence[object]) -> tuple[bytes, bytes]:
    """(contextDigest, gridSeed) of a complete proof: one commit and one matching reveal per roster peer.

    Raises ``ProtocolError`` (``envelope-invalid``, ``invalid-signature``, ``grid-invalid``).
    """
    digest = signing_digest(context)
    roster = list(context["roster"])
    committed: dict[PeerId, bytes] = {}
    for raw in commits:
        env = raw if isinstance(raw, SignedPayload) else SignedPayload.from_wire(raw)
        committed[env.signer] = check_commit(env, digest)
    revealed: dict[PeerId, bytes] = {}
    for raw in reveals:
        env = raw if isinstance(raw, SignedPayload) else SignedPayload.from_wire(raw)
        if env.signer not in committed:
            raise ProtocolError("grid-invalid", "a reveal from a peer without a commitment")
        revealed[env.signer] = check_reveal(env, digest, committed[env.signer])
    if sorted(committed) != roster or sorted(revealed) != roster or len(commits) != len(roster) or len(reveals) != len(roster):
        raise ProtocolError("grid-invalid", "the grid proof must hold exactly one commit and reveal per roster peer")
    return digest, grid_seed(digest, revealed)
