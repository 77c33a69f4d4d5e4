"""Signature checks a campaign has already made, remembered.

A door that re-plays a real race (``race-log``, ``spectate-viewer``, ``race-session``) verifies the same
signed inputs and votes in every execution: hundreds of Ed25519 verifications per input, most of its
time uninstrumented (benchmarks/fuzz_cost.py --profile). Verification is a pure function of the key, the
message and the signature, so a campaign remembers its answers for byte-identical triples; any byte a
mutation changed makes a new triple, verified for real. Installed by the campaigns (``fuzz.run``), not by
the suite's smoke runs (which share their process with other tests).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.identity.ed25519 import PublicKey

CAPACITY = 1 << 16  # remembered answers; past it the memory starts again (bounded: a few tens of MB)

_original = PublicKey.verify


def _remembering(capacity: int) -> Callable[[PublicKey, bytes, object], bool]:
    answers: dict[tuple[bytes, bytes, bytes], bool] = {}

    def verify(self: PublicKey, message: bytes, signature: object) -> bool:
        """``PublicKey.verify``, its answer remembered for byte-identical (key, message, signature)."""
        if not isinstance(signature, (bytes, bytearray)) or not isinstance(message, (bytes, bytearray)):
            return _original(self, message, signature)
        triple = (self.raw, bytes(message), bytes(signature))
        known = answers.get(triple)
        if known is None:
            known = _original(self, message, signature)
            if len(answers) >= capacity:
                answers.clear()
            answers[triple] = known
        return known

    return verify


def remember_signature_checks(capacity: int = CAPACITY) -> None:
    """From now on in this process, ``PublicKey.verify`` remembers its answers (module docstring)."""
    setattr(PublicKey, "verify", _remembering(capacity))  # noqa: B010 (a method replaced on purpose)


def forget_signature_checks() -> None:
    """``PublicKey.verify`` as it was (its tests restore it)."""
    setattr(PublicKey, "verify", _original)  # noqa: B010
