"""Ed25519 through libsodium (PyNaCl): the one place that signs and verifies with it.

Why libsodium and not ``cryptography`` (OpenSSL), which the rest of the project's cryptography uses:
a race node verifies one signed input per peer per frame, 420 a second with 7 peers, and measured here
libsodium verifies in about half the CPU time and signs in about 60 % (benchmarks/race_bench.py
``--crypto``; docs/node.md, "CPU per frame"). Ed25519 signatures are deterministic (RFC 8032), so the
bytes signed are the same as before and every frozen vector still holds. libsodium's verification is
at least as strict as OpenSSL's (it also refuses small-order keys and points); every node runs the same
check, so a signature is accepted by all of them or by none.
"""

from __future__ import annotations

from nacl.exceptions import BadSignatureError, CryptoError
from nacl.bindings import crypto_sign_open
from nacl.signing import SigningKey

PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64


class PublicKey:
    """A parsed Ed25519 public key, kept so that each verification does not parse it again."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes) -> None:
        """The key of ``raw``; ``ValueError`` unless it has 32 bytes."""
        if len(raw) != PUBLIC_KEY_BYTES:
            raise ValueError(f"an Ed25519 public key has {PUBLIC_KEY_BYTES} bytes")
        self.raw = bytes(raw)

    def verify(self, message: bytes, signature: object) -> bool:
        """True only for a valid signature of ``message`` by this key; never raises on bad input.

        libsodium's ``crypto_sign_open`` on the raw bytes, the very check ``VerifyKey.verify`` makes,
        without its wrapper's encoder and copies (about 3 µs of the 60 a verification costs, seven
        times a frame with 7 peers: docs/node.md, "CPU per frame")."""
        if not isinstance(signature, (bytes, bytearray)) or len(signature) != SIGNATURE_BYTES:
            return False
        try:
            crypto_sign_open(bytes(signature) + message, self.raw)
        except (BadSignatureError, CryptoError):
            return False
        return True


class PrivateKey:
    """An Ed25519 key pair from a 32-byte seed (RFC 8032 private key form)."""

    __slots__ = ("public_key", "_key")

    def __init__(self, seed: bytes) -> None:
        """The key pair of ``seed`` (32 bytes: the caller checks)."""
        self._key = SigningKey(seed)
        self.public_key = bytes(self._key.verify_key)

    def sign(self, message: bytes) -> bytes:
        """The 64-byte signature of ``message``."""
        return bytes(self._key.sign(message).signature)  # bytes(): typed where nacl is not (the wheel's build)
