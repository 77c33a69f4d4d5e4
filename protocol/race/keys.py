"""Race sign keys: announce this node's key for a round and keep the verified keys of the others.

A key is bound to its owner by a master-key signature over ``key_digest(raceId, peerId, publicKey)``.
The book lives for the whole match, so an announce for a round that has not started yet waits there
(at most 8 per peer, spec/netcode.md §3.3) instead of being lost between two sessions.
"""

from __future__ import annotations

from collections.abc import Iterable

from protocol.errors import ProtocolError
from protocol.identity.ed25519 import PUBLIC_KEY_BYTES, PublicKey
from protocol.identity.keys import Identity, verify_signature
from protocol.race.messages import LeaveReason, RaceKey, RaceLeave
from protocol.race.signing import key_digest, leave_digest
from protocol.identity.keys import PeerId

MAX_KEYS_PER_PEER = 8
MAX_RACE_ID_BYTES = 256


def announce(identity: Identity, race_id: str) -> RaceKey:
    """This node's race key announce for ``race_id``."""
    key = identity.race_key(race_id)
    return RaceKey(race_id, key.public_key, identity.sign(key_digest(race_id, identity.peer_id, key.public_key)))


def signed_leave(race_key: Identity, race_id: str, reason: LeaveReason) -> RaceLeave:
    """This node's ``race-leave`` for ``reason``, signed by its race key of ``race_id`` (``leave_digest``)."""
    return RaceLeave(reason.value, race_key.sign(leave_digest(race_id, reason.value)))


class RaceKeyBook:
    """Verified race keys of the roster by (raceId, peer), kept parsed so each input verifies cheaply."""

    def __init__(self, roster: Iterable[PeerId]) -> None:
        self._keys: dict[PeerId, dict[str, tuple[bytes, PublicKey]]] = {peer: {} for peer in roster}

    def add(self, peer: PeerId, msg: RaceKey) -> bool:
        """Verify and keep ``peer``'s announce; True if it is new, False for a repeat. Raises
        ``ProtocolError`` ``untrusted-peer`` (off the roster), ``race-key-invalid``, ``race-key-conflict``
        or ``race-key-capacity``."""
        keys = self._keys.get(peer)
        if keys is None:
            raise ProtocolError("untrusted-peer", "race keys are only taken from the roster")
        if not msg.raceId or len(msg.raceId.encode("utf-8", "replace")) > MAX_RACE_ID_BYTES:
            raise ProtocolError("race-key-invalid", "a raceId is non-empty text of at most 256 bytes")
        if len(msg.publicKey) != PUBLIC_KEY_BYTES:
            raise ProtocolError("race-key-invalid", f"a race key has {PUBLIC_KEY_BYTES} bytes")
        if not verify_signature(peer, key_digest(msg.raceId, peer, msg.publicKey), msg.signature):
            raise ProtocolError("race-key-invalid", "the announce is not signed by the peer's master key")
        public = PublicKey(msg.publicKey)  # 32 bytes: checked above
        known = keys.get(msg.raceId)
        if known is not None:
            if known[0] != msg.publicKey:
                raise ProtocolError("race-key-conflict", "the peer announced two different keys for one round")
            return False
        if len(keys) >= MAX_KEYS_PER_PEER:
            raise ProtocolError("race-key-capacity", f"at most {MAX_KEYS_PER_PEER} race keys are kept per peer")
        keys[msg.raceId] = (msg.publicKey, public)
        return True

    def key(self, race_id: str, peer: PeerId) -> PublicKey | None:
        """``peer``'s verified race key for ``race_id``, or None while it has not been announced."""
        entry = self._keys.get(peer, {}).get(race_id)
        return None if entry is None else entry[1]


def verify_race_signature(key: PublicKey, digest: bytes, signature: bytes) -> bool:
    """True only for a valid signature by ``key``; never raises on what a peer sent."""
    return key.verify(digest, signature)
