"""The register proof: a peer proves, when it registers in a room or asks for TURN credentials, that it
holds the key of the PeerId it claims, now (spec/signaling.md §3, §4.1, §9).

    digest = SHA-256(DAG-CBOR({type: "signaling-register", peerId, room, timestamp, nonce}))

``room`` is the scope (or ``/turn-token`` for the TURN endpoint), ``timestamp`` the signer's epoch
milliseconds as a CBOR integer, and ``nonce`` the hex text exactly as sent (text, not its bytes). The
proof holds within ±30 s of the verifier's clock; replays within that window are the caller's cache.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

from protocol.encoding import dagcbor
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity, verify_signature
from protocol.signaling.codes import Refusal
from protocol.signaling.limits import MAX_ID_CHARS, MAX_SIGNATURE_HEX_CHARS, NONCE_HEX_CHARS, SIGNATURE_HEX_CHARS, \
    TIMESTAMP_TOLERANCE_MS
from protocol.signaling.values import even_lower_hex, js_number, lower_hex, safe_integer, text
from protocol.identity.keys import PeerId

REGISTER_TYPE = "signaling-register"
TURN_TOKEN_ROOM = "/turn-token"  # the ``room`` of a /turn-token proof (no scope may start with "/")


@dataclass(frozen=True)
class RegisterProof:
    """``{timestamp, nonce, signatureHex}`` as it travels. ``timestamp`` is what the JSON number is to
    JavaScript: an ``int``, or a ``float`` when it is not integral (such a proof never verifies here: the
    spec's client signs integers, and this node never signs a float)."""

    timestamp: int | float
    nonce: str
    signature_hex: str

    def to_json(self) -> dict[str, Any]:
        """The proof's JSON object."""
        return {"timestamp": self.timestamp, "nonce": self.nonce, "signatureHex": self.signature_hex}

    @classmethod
    def from_register(cls, value: object) -> RegisterProof:
        """A WebSocket register's proof, as loosely as the spec's parser takes it: a finite timestamp, a
        nonce of 1–256 characters, a signature text of at most 4096 (checked as hex when verified); extra
        keys tolerated. ``ProtocolError`` ``frame-invalid`` otherwise."""
        if not isinstance(value, dict):
            raise ProtocolError(Refusal.FRAME_INVALID, "a register proof is an object")
        timestamp = js_number(value.get("timestamp"))
        nonce = text(value.get("nonce"), MAX_ID_CHARS)
        signature = text(value.get("signatureHex"), MAX_SIGNATURE_HEX_CHARS)
        if timestamp is None or nonce is None or signature is None:
            raise ProtocolError(Refusal.FRAME_INVALID, "a register proof has a finite timestamp, a nonce of 1-256 "
                                                       "characters and a signatureHex of at most 4096")
        return cls(timestamp, nonce, signature)

    @classmethod
    def from_turn_request(cls, value: object) -> RegisterProof:
        """A /turn-token proof, strictly: exactly the three keys, a safe-integer timestamp, 32 and 128
        lowercase hex characters. ``ProtocolError`` ``turn-request-invalid`` otherwise."""
        if not isinstance(value, dict) or set(value) != {"timestamp", "nonce", "signatureHex"}:
            raise ProtocolError(Refusal.TURN_REQUEST_INVALID, "a proof is exactly {timestamp, nonce, signatureHex}")
        timestamp = safe_integer(value["timestamp"])
        if (timestamp is None or lower_hex(value["nonce"], NONCE_HEX_CHARS) is None
                or lower_hex(value["signatureHex"], SIGNATURE_HEX_CHARS) is None):
            raise ProtocolError(Refusal.TURN_REQUEST_INVALID, "a proof has a safe-integer timestamp, a 32-hex nonce "
                                                              "and a 128-hex signature")
        return cls(timestamp, value["nonce"], value["signatureHex"])


def register_digest(peer_id: PeerId, room: str, timestamp: int, nonce: str) -> bytes:
    """The 32 bytes a register proof signs (module docstring)."""
    body = {"type": REGISTER_TYPE, "peerId": peer_id, "room": room, "timestamp": timestamp, "nonce": nonce}
    return hashlib.sha256(dagcbor.encode(body)).digest()


def build_proof(identity: Identity, room: str, now_ms: int, nonce: str | None = None) -> RegisterProof:
    """A proof by ``identity`` for ``room`` at ``now_ms``, with a fresh 16-byte hex nonce (or the given one)."""
    nonce = secrets.token_hex(16) if nonce is None else nonce
    signature = identity.sign(register_digest(identity.peer_id, room, now_ms, nonce))
    return RegisterProof(now_ms, nonce, signature.hex())


def check_proof(peer_id: PeerId, room: str, proof: RegisterProof, now_ms: int, refusal: Refusal = Refusal.PROOF_INVALID) -> None:
    """Whether ``proof`` is ``peer_id``'s for ``room``, within ±30 s of ``now_ms``; ``ProtocolError`` with
    ``refusal`` (default ``proof-invalid``) saying what failed otherwise."""
    if not isinstance(proof.timestamp, int):
        raise ProtocolError(refusal, "the proof's timestamp is not an integer number of milliseconds")
    if abs(now_ms - proof.timestamp) > TIMESTAMP_TOLERANCE_MS:
        raise ProtocolError(refusal, "the proof's timestamp is more than 30 s from the server's clock")
    signature = even_lower_hex(proof.signature_hex)
    try:
        digest = register_digest(peer_id, room, proof.timestamp, proof.nonce)
    except ProtocolError:  # a lone surrogate in the nonce or the PeerId: nothing could have signed it
        raise ProtocolError(refusal, "the proof cannot be encoded") from None
    if signature is None or not verify_signature(peer_id, digest, signature):
        raise ProtocolError(refusal, "the proof is not this PeerId's signature for this room")
