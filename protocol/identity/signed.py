"""SignedPayload envelopes: build, and verify in the spec's order with its codes (spec/identity.md §3.1, §5).

    msg32 = SHA-256(DAG-CBOR({nonce, payload, signer, timestamp})); signature = Ed25519(msg32)

Verification order: shape → signer trusted → timestamp window → nonce not replayed → signature →
commit the nonce. ``check`` stops before the commit so that a caller can rate-limit first; messages
dropped by the rate limit therefore never fill the replay set. Time is always passed in (ms).
"""

from __future__ import annotations

import hashlib
import heapq
import secrets
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from protocol.encoding import dagcbor
from protocol.errors import ProtocolError
from protocol.identity.ed25519 import SIGNATURE_BYTES
from protocol.identity.keys import Identity, verify_signature
from protocol.identity.keys import PeerId

NONCE_BYTES = 16
TIMESTAMP_TOLERANCE_MS = 30_000
NONCE_SET_MAX_ENTRIES = 8192
MAX_SAFE_INTEGER = 2**53 - 1
ENVELOPE_KEYS = frozenset({"payload", "timestamp", "nonce", "signer", "signature"})
NonceKey = tuple[str, bytes | str]
"""``(signer, nonce)``: the nonce as bytes (a SignedPayload's) or as text (a signaling register proof's)."""


@dataclass(frozen=True)
class SignedPayload:
    """The spec's signed envelope: a payload, when and by whom it was signed, a nonce, the signature."""

    payload: Any
    timestamp: int
    nonce: bytes
    signer: PeerId
    signature: bytes

    def to_wire(self) -> dict[str, Any]:
        """The envelope as the five-key map that travels (and that ``from_wire`` reads back)."""
        return {
            "payload": self.payload,
            "timestamp": self.timestamp,
            "nonce": self.nonce,
            "signer": self.signer,
            "signature": self.signature,
        }

    @classmethod
    def from_wire(cls, obj: object) -> "SignedPayload":
        """Strict envelope shape: exactly five fields, safe-integer timestamp, 16-byte nonce, 64-byte signature.

        Raises ``ProtocolError`` (``envelope-invalid``).
        """
        if not isinstance(obj, Mapping) or set(obj) != ENVELOPE_KEYS:
            raise ProtocolError("envelope-invalid", f"a signed envelope has exactly the fields {sorted(ENVELOPE_KEYS)}")
        timestamp, nonce, signer, signature = obj["timestamp"], obj["nonce"], obj["signer"], obj["signature"]
        if type(timestamp) is not int or abs(timestamp) > MAX_SAFE_INTEGER:
            raise ProtocolError("envelope-invalid", "timestamp must be a safe integer (ms since the epoch)")
        if not isinstance(nonce, bytes) or len(nonce) != NONCE_BYTES:
            raise ProtocolError("envelope-invalid", f"nonce must be {NONCE_BYTES} bytes")
        if not isinstance(signature, bytes) or len(signature) != SIGNATURE_BYTES:
            raise ProtocolError("envelope-invalid", f"signature must be {SIGNATURE_BYTES} bytes")
        if not isinstance(signer, str):
            raise ProtocolError("envelope-invalid", "signer must be a PeerId string")
        return cls(obj["payload"], timestamp, nonce, PeerId(signer), signature)


def signed_message(payload: Any, timestamp: int, nonce: bytes, signer: PeerId) -> bytes:
    """The 32-byte digest a SignedPayload signature covers."""
    body = {"nonce": nonce, "payload": payload, "signer": signer, "timestamp": timestamp}
    return hashlib.sha256(dagcbor.encode(body)).digest()


def build_signed(identity: Identity, payload: Any, now_ms: int, nonce: bytes | None = None) -> SignedPayload:
    """``payload`` signed by ``identity`` at ``now_ms`` with a fresh (or the given) 16-byte nonce."""
    nonce = secrets.token_bytes(NONCE_BYTES) if nonce is None else nonce
    message = signed_message(payload, now_ms, nonce, identity.peer_id)
    return SignedPayload(payload, now_ms, nonce, identity.peer_id, identity.sign(message))


def check_signature(signed: SignedPayload) -> None:
    """Step 5 alone: for envelopes kept as evidence (a ReadySet, a start package) long after receipt.

    Raises ``ProtocolError`` (``invalid-signature``).
    """
    try:
        message = signed_message(signed.payload, signed.timestamp, signed.nonce, signed.signer)
    except ProtocolError:
        raise ProtocolError("invalid-signature", "the payload cannot be canonically encoded") from None
    if not verify_signature(signed.signer, message, signed.signature):
        raise ProtocolError("invalid-signature", "the signature does not match the signer and content")


class NonceSet:
    """Bounded, fail-closed replay set: when full it refuses new nonces instead of evicting live ones.

    An entry lives until its message's timestamp leaves the tolerance window; after that a replay is
    refused by the timestamp check instead, so the entry is no longer needed.
    """

    def __init__(self, capacity: int = NONCE_SET_MAX_ENTRIES, window_ms: int = TIMESTAMP_TOLERANCE_MS) -> None:
        """At most ``capacity`` live nonces, each kept ``window_ms`` past its message's timestamp."""
        self.capacity = capacity
        self.window_ms = window_ms
        self._expiry: dict[NonceKey, int] = {}
        self._heap: list[tuple[int, NonceKey]] = []

    def __len__(self) -> int:
        return len(self._expiry)

    def prune(self, now_ms: int) -> None:
        """Forget every entry whose message has left the tolerance window by ``now_ms`` (each call that
        reads the set does this first; a holder sweeps with it too, so an idle set empties)."""
        while self._heap and self._heap[0][0] < now_ms:
            expires, key = heapq.heappop(self._heap)
            if self._expiry.get(key) == expires:
                del self._expiry[key]

    def seen(self, key: NonceKey, now_ms: int) -> bool:
        """Whether ``(signer, nonce)`` is still remembered at ``now_ms``."""
        self.prune(now_ms)
        return key in self._expiry

    def add(self, key: NonceKey, timestamp_ms: int, now_ms: int) -> None:
        """Remember ``(signer, nonce)``. Raises ``ProtocolError``: ``nonce-replay`` (already there) or
        ``nonce-capacity`` (full: refused rather than evicting a live entry)."""
        self.prune(now_ms)
        if key in self._expiry:
            raise ProtocolError("nonce-replay", "this nonce was already used by this signer")
        if len(self._expiry) >= self.capacity:
            raise ProtocolError("nonce-capacity", "the replay set is full; try again in a few seconds")
        expires = timestamp_ms + self.window_ms
        self._expiry[key] = expires
        heapq.heappush(self._heap, (expires, key))


class SignedVerifier:
    """Verifies envelopes from a set of trusted signers against one replay set."""

    def __init__(
        self,
        trusted: Collection[PeerId] | Callable[[PeerId], bool],
        nonces: NonceSet | None = None,
        tolerance_ms: int = TIMESTAMP_TOLERANCE_MS,
    ) -> None:
        """A verifier trusting ``trusted`` (a set of PeerIds, or a predicate asked at each check)."""
        self._is_trusted = trusted if callable(trusted) else trusted.__contains__
        self.nonces = nonces if nonces is not None else NonceSet(window_ms=tolerance_ms)
        self.tolerance_ms = tolerance_ms

    def check(self, envelope: object, now_ms: int) -> SignedPayload:
        """Steps 1–5: everything but committing the nonce. Raises ``ProtocolError`` (``envelope-invalid``,
        ``untrusted-peer``, ``timestamp-out-of-range``, ``nonce-replay``, ``invalid-signature``)."""
        signed = envelope if isinstance(envelope, SignedPayload) else SignedPayload.from_wire(envelope)
        if not self._is_trusted(signed.signer):
            raise ProtocolError("untrusted-peer", "the signer is not a member of this room")
        if abs(now_ms - signed.timestamp) > self.tolerance_ms:
            raise ProtocolError("timestamp-out-of-range", "the message is more than 30 s away from this node's clock")
        if self.nonces.seen((signed.signer, signed.nonce), now_ms):
            raise ProtocolError("nonce-replay", "this message was already received")
        check_signature(signed)
        return signed

    def commit(self, signed: SignedPayload, now_ms: int) -> None:
        """Step 6: remember the nonce (fails closed with ``nonce-capacity`` when full)."""
        self.nonces.add((signed.signer, signed.nonce), signed.timestamp, now_ms)

    def verify(self, envelope: object, now_ms: int) -> SignedPayload:
        """``check`` then ``commit``: the whole of the spec's order; raises as both do."""
        signed = self.check(envelope, now_ms)
        self.commit(signed, now_ms)
        return signed
