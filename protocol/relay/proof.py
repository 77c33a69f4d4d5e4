"""The reservation proof: a node's signature, with its master identity, binding a reservation request to
one link with one relay, so a proof cannot be replayed on another link or at another relay.

The signed bytes are SHA-256 of the canonical DAG-CBOR map ``{domain, relay, transcript}`` where
``transcript`` is the Noise link's transcript (unique per session, the same on both ends).
"""

from __future__ import annotations

import hashlib

from protocol.encoding.dagcbor import encode
from protocol.identity.keys import Identity, verify_signature
from protocol.identity.keys import PeerId

RESERVATION_DOMAIN = "open4wd-node-relay-reservation-v1"


def reservation_digest(relay_peer: str, transcript: bytes) -> bytes:
    """What a reservation proof signs: this relay and this link's transcript."""
    return hashlib.sha256(encode({"domain": RESERVATION_DOMAIN, "relay": relay_peer, "transcript": transcript})).digest()


def sign_reservation(identity: Identity, relay_peer: str, transcript: bytes) -> bytes:
    """The proof a node sends in ``relay-reserve`` on the link with transcript ``transcript``."""
    return identity.sign(reservation_digest(relay_peer, transcript))


def check_reservation(peer: PeerId, proof: bytes, relay_peer: str, transcript: bytes) -> bool:
    """Whether ``proof`` is ``peer``'s signature over this relay and this link (never raises)."""
    return verify_signature(peer, reservation_digest(relay_peer, transcript), proof)
