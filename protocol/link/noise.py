"""Noise XX (``Noise_XX_25519_ChaChaPoly_SHA256``), sans-IO, on the ``cryptography`` primitives.

The Noise Protocol Framework (revision 34) state machines, exactly as the specification writes them:
``CipherState`` (a key and a 64-bit nonce counter), ``SymmetricState`` (the chaining key and the
handshake hash), and the XX handshake:

    -> e
    <- e, ee, s, es
    -> s, se

``NoiseXX`` writes and reads the three handshake messages (each may carry a payload, encrypted from
the second message on), then ``split()`` gives the two ``TransportCipher``s. A transport message is
ChaCha20-Poly1305 under the direction's key with the direction's counter as nonce, so a changed,
injected, replayed, reordered or dropped message fails to open. Checked against the Noise test
vectors (``tests/protocol/link/vectors/``). Ephemeral keys may be given, for those vectors only.

One deliberate extension, for this project's links: a transport message may be longer than Noise's
65,535 bytes (a race-mesh frame carries a saved state of up to 4 MiB). ChaCha20-Poly1305 itself has no
such limit; both ends of a link are this program.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from enum import Enum

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from protocol.errors import LocalError, PeerError

PROTOCOL_NAME = b"Noise_XX_25519_ChaChaPoly_SHA256"
DHLEN = 32
HASHLEN = 32
TAGLEN = 16
MAX_NONCE = 2**64 - 1  # reserved by the specification: a counter never reaches it


def _hkdf(chaining_key: bytes, key_material: bytes, outputs: int) -> list[bytes]:
    """Noise's HKDF with HMAC-SHA256: two or three 32-byte outputs."""
    temp_key = hmac.digest(chaining_key, key_material, "sha256")
    out: list[bytes] = []
    previous = b""
    for index in range(1, outputs + 1):
        previous = hmac.digest(temp_key, previous + bytes([index]), "sha256")
        out.append(previous)
    return out


def _nonce(n: int) -> bytes:
    return b"\x00\x00\x00\x00" + n.to_bytes(8, "little")


def public_bytes(private: X25519PrivateKey) -> bytes:
    """The raw 32-byte X25519 public key of ``private``."""
    return private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def _dh(private: X25519PrivateKey, public: bytes) -> bytes:
    try:
        return private.exchange(X25519PublicKey.from_public_bytes(public))
    except ValueError:  # an all-zero shared secret: a low-order point the peer chose
        raise PeerError("noise-handshake-failed", "the peer sent an invalid Diffie-Hellman public key") from None


class CipherState:
    """A key (or none yet) and the nonce counter of one direction."""

    def __init__(self, key: bytes | None = None) -> None:
        self._aead = None if key is None else ChaCha20Poly1305(key)
        self.n = 0

    @property
    def has_key(self) -> bool:
        """Whether a key is set (before the first ``mix_key`` a handshake sends in the clear)."""
        return self._aead is not None

    def encrypt_with_ad(self, ad: bytes, plaintext: bytes) -> bytes:
        """Seal ``plaintext`` with ``ad`` under nonce ``n`` (then ``n + 1``); the plaintext itself without
        a key. ``LocalError`` once the counter would reach its reserved last value."""
        if self._aead is None:
            return plaintext
        if self.n >= MAX_NONCE:
            raise LocalError("noise-nonce-exhausted", "this link sent 2^64 - 1 messages; open a new one")
        ciphertext = self._aead.encrypt(_nonce(self.n), plaintext, ad)
        self.n += 1
        return ciphertext

    def decrypt_with_ad(self, ad: bytes, ciphertext: bytes) -> bytes:
        """Raises ``InvalidTag`` when the message was changed, forged, replayed or reordered."""
        if self._aead is None:
            return ciphertext
        if self.n >= MAX_NONCE:
            raise PeerError("noise-nonce-exhausted", "the peer sent 2^64 - 1 messages on one link")
        plaintext = self._aead.decrypt(_nonce(self.n), ciphertext, ad)
        self.n += 1
        return plaintext


class SymmetricState:
    """The chaining key, the handshake hash and the handshake's cipher (Noise §5.2)."""

    def __init__(self, protocol_name: bytes) -> None:
        short = len(protocol_name) <= HASHLEN
        self.h = protocol_name.ljust(HASHLEN, b"\x00") if short else hashlib.sha256(protocol_name).digest()
        self.ck = self.h
        self.cipher = CipherState()

    def mix_key(self, key_material: bytes) -> None:
        """Feed a Diffie-Hellman result into the chaining key; the handshake cipher gets a new key."""
        self.ck, temp_key = _hkdf(self.ck, key_material, 2)
        self.cipher = CipherState(temp_key)

    def mix_hash(self, data: bytes) -> None:
        """Fold ``data`` into the handshake hash (everything sent is, in order)."""
        self.h = hashlib.sha256(self.h + data).digest()

    def encrypt_and_hash(self, plaintext: bytes) -> bytes:
        """Seal with the handshake hash as associated data, then hash the ciphertext."""
        ciphertext = self.cipher.encrypt_with_ad(self.h, plaintext)
        self.mix_hash(ciphertext)
        return ciphertext

    def decrypt_and_hash(self, ciphertext: bytes) -> bytes:
        """Open with the handshake hash as associated data, then hash the ciphertext; ``PeerError``
        (``noise-handshake-failed``) when it does not authenticate."""
        try:
            plaintext = self.cipher.decrypt_with_ad(self.h, ciphertext)
        except InvalidTag:
            raise PeerError("noise-handshake-failed", "a handshake message did not authenticate (altered, or "
                                                      "not from the holder of the key it claims)") from None
        self.mix_hash(ciphertext)
        return plaintext

    def split(self) -> tuple[CipherState, CipherState]:
        """The two transport ciphers (initiator→responder, responder→initiator) from the chaining key."""
        first, second = _hkdf(self.ck, b"", 2)
        return CipherState(first), CipherState(second)


class Role(Enum):
    """Which side of the handshake: the initiator writes the first message (a link's dialer)."""

    INITIATOR = "initiator"
    RESPONDER = "responder"


@dataclass(frozen=True)
class TransportCipher:
    """One direction of an established link: seals what this side sends, or opens what it receives."""

    state: CipherState

    def seal(self, plaintext: bytes) -> bytes:
        """The next message of this direction, sealed (the counter is its nonce)."""
        return self.state.encrypt_with_ad(b"", plaintext)

    def open(self, ciphertext: bytes) -> bytes:
        """Raises ``PeerError("link-tampered")`` for a message that was changed, injected, replayed,
        reordered, or follows a dropped one: the link cannot be trusted any more."""
        try:
            return self.state.decrypt_with_ad(b"", ciphertext)
        except InvalidTag:
            raise PeerError("link-tampered", f"message {self.state.n} of the link did not authenticate: "
                                             "it was altered, injected, replayed or reordered on the way") from None

    @property
    def count(self) -> int:
        """Messages sealed or opened so far."""
        return self.state.n

    @property
    def overhead(self) -> int:
        """Bytes a sealed message adds to its plaintext: the 16-byte authentication tag."""
        return TAGLEN


class NoiseXX:
    """One side of a Noise XX handshake. Call ``write_message`` / ``read_message`` in the pattern's
    order (initiator writes first); after the third message ``complete`` is true, ``remote_static``
    is the peer's static public key and ``split()`` gives (send, receive) ciphers.

    Raises ``LocalError`` when called out of order, ``PeerError`` (``noise-handshake-failed``) when a
    message from the peer is malformed or does not authenticate."""

    def __init__(self, role: Role, static_private: bytes, *, prologue: bytes = b"",
                 ephemeral_private: bytes | None = None) -> None:
        self.role = role
        self._s = X25519PrivateKey.from_private_bytes(static_private)
        self._e_given = None if ephemeral_private is None else X25519PrivateKey.from_private_bytes(ephemeral_private)
        self._e: X25519PrivateKey | None = None
        self._re: bytes | None = None
        self.remote_static: bytes | None = None
        self._symmetric = SymmetricState(PROTOCOL_NAME)
        self._symmetric.mix_hash(prologue)
        self._step = 0  # messages of the pattern done

    @property
    def static_public(self) -> bytes:
        """This side's static public key (what the link's identity payload signs)."""
        return public_bytes(self._s)

    @property
    def complete(self) -> bool:
        """Whether all three messages of the pattern are done."""
        return self._step == 3

    @property
    def handshake_hash(self) -> bytes:
        """``h`` at the end of the handshake: unique to this session, the same on both sides (the
        channel binding that the link's identity proofs and room role proofs sign or MAC)."""
        if not self.complete:
            raise LocalError("noise-misuse", "the handshake hash is final only after the third message")
        return self._symmetric.h

    def _writes(self) -> bool:
        return (self._step % 2 == 0) == (self.role is Role.INITIATOR)

    def write_message(self, payload: bytes = b"") -> bytes:
        """This side's next handshake message carrying ``payload`` (in the clear in the first message,
        sealed in the second and third). ``LocalError`` when it is not this side's turn."""
        if self.complete or not self._writes():
            raise LocalError("noise-misuse", f"the {self.role.value} does not write message {self._step + 1} of XX")
        sym = self._symmetric
        out = b""
        if self._step in (0, 1):  # e
            self._e = self._e_given or X25519PrivateKey.generate()
            e_pub = public_bytes(self._e)
            sym.mix_hash(e_pub)
            out += e_pub
        if self._step == 1:  # ee, s, es (responder)
            assert self._e is not None and self._re is not None
            sym.mix_key(_dh(self._e, self._re))
            out += sym.encrypt_and_hash(public_bytes(self._s))
            sym.mix_key(_dh(self._s, self._re))
        if self._step == 2:  # s, se (initiator)
            assert self._re is not None
            out += sym.encrypt_and_hash(public_bytes(self._s))
            sym.mix_key(_dh(self._s, self._re))
        out += sym.encrypt_and_hash(payload)
        self._step += 1
        return out

    def read_message(self, message: bytes) -> bytes:
        """The payload of the peer's next handshake message."""
        if self.complete or self._writes():
            raise LocalError("noise-misuse", f"the {self.role.value} does not read message {self._step + 1} of XX")
        sym = self._symmetric
        rest = message
        if self._step in (0, 1):  # e
            self._re, rest = self._take(rest, DHLEN)
            sym.mix_hash(self._re)
        if self._step == 1:  # ee, s, es (initiator reads)
            assert self._e is not None and self._re is not None
            sym.mix_key(_dh(self._e, self._re))
            encrypted_s, rest = self._take(rest, DHLEN + TAGLEN)
            self.remote_static = sym.decrypt_and_hash(encrypted_s)
            sym.mix_key(_dh(self._e, self.remote_static))
        if self._step == 2:  # s, se (responder reads)
            assert self._e is not None
            encrypted_s, rest = self._take(rest, DHLEN + TAGLEN)
            self.remote_static = sym.decrypt_and_hash(encrypted_s)
            sym.mix_key(_dh(self._e, self.remote_static))
        payload = sym.decrypt_and_hash(rest)
        self._step += 1
        return payload

    @staticmethod
    def _take(data: bytes, count: int) -> tuple[bytes, bytes]:
        if len(data) < count:
            raise PeerError("noise-handshake-failed", f"a handshake message of {len(data)} bytes is too short")
        return data[:count], data[count:]

    def split(self) -> tuple[TransportCipher, TransportCipher]:
        """(send, receive) for this side; the handshake state is spent."""
        if not self.complete:
            raise LocalError("noise-misuse", "split() comes after the third handshake message")
        first, second = self._symmetric.split()
        if self.role is Role.INITIATOR:
            return TransportCipher(first), TransportCipher(second)
        return TransportCipher(second), TransportCipher(first)
