"""The campaigns' remembered signature checks answer exactly as the real check does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fuzz.memo import forget_signature_checks, remember_signature_checks
from protocol.identity.ed25519 import PrivateKey, PublicKey


@pytest.fixture
def remembering() -> Iterator[None]:
    remember_signature_checks(capacity=2)
    try:
        yield
    finally:
        forget_signature_checks()


def test_remembered_answers_are_the_real_ones_and_a_changed_byte_is_checked_again(remembering: None) -> None:
    signer = PrivateKey(bytes([5]) * 32)
    key = PublicKey(signer.public_key)
    signature = signer.sign(b"input 42")
    forged = bytes([signature[0] ^ 1]) + signature[1:]
    for _ in range(3):  # asked again, past the capacity of 2 (the memory starts again): the same answers
        assert key.verify(b"input 42", signature)
        assert not key.verify(b"input 42", forged)
        assert not key.verify(b"input 43", signature)
        assert not PublicKey(bytes(32)).verify(b"input 42", signature)
        assert not key.verify(b"input 42", "not bytes")
