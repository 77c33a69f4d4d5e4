import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoding import dagcbor
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.identity.signed import NonceSet, SignedPayload, SignedVerifier, build_signed, signed_message

ALICE = Identity(bytes([1]) * 32)
MALLORY = Identity(bytes([2]) * 32)
NOW = 1_700_000_000_000


def verifier(**kwargs) -> SignedVerifier:
    return SignedVerifier({ALICE.peer_id}, **kwargs)


def code_of(call) -> str:
    with pytest.raises(ProtocolError) as info:
        call()
    return info.value.code


def test_digest_layout_is_the_spec_map():
    nonce = bytes(16)
    body = dagcbor.encode({"nonce": nonce, "payload": {"k": 1}, "signer": ALICE.peer_id, "timestamp": NOW})
    assert body.startswith(b"\xa4\x65nonce\x50" + nonce + b"\x66signer")
    assert body.endswith(b"\x69timestamp\x1b\x00\x00\x01\x8b\xcf\xe5\x68\x00")
    import hashlib

    assert signed_message({"k": 1}, NOW, nonce, ALICE.peer_id) == hashlib.sha256(body).digest()


def test_round_trip_and_replay():
    env = build_signed(ALICE, {"ready": True}, NOW).to_wire()
    v = verifier()
    assert v.verify(env, NOW + 5).payload == {"ready": True}
    assert code_of(lambda: v.verify(env, NOW + 6)) == "nonce-replay"


def test_check_order_and_codes():
    v = verifier()
    env = build_signed(ALICE, "x", NOW)
    assert code_of(lambda: v.verify(build_signed(MALLORY, "x", NOW), NOW)) == "untrusted-peer"
    assert code_of(lambda: v.verify(env, NOW + 30_001)) == "timestamp-out-of-range"
    assert code_of(lambda: v.verify(env, NOW - 30_001)) == "timestamp-out-of-range"
    v.verify(env, NOW + 30_000)
    forged = SignedPayload("y", env.timestamp, bytes(16), env.signer, env.signature)
    assert code_of(lambda: v.verify(forged, NOW)) == "invalid-signature"
    # an untrusted signer is refused before its signature is even looked at
    assert code_of(lambda: v.verify(SignedPayload("x", NOW, bytes(16), MALLORY.peer_id, bytes(64)), NOW)) == "untrusted-peer"


def test_check_does_not_commit_the_nonce():
    v = verifier()
    env = build_signed(ALICE, "x", NOW)
    v.check(env, NOW)
    assert len(v.nonces) == 0
    v.commit(env, NOW)
    assert code_of(lambda: v.check(env, NOW)) == "nonce-replay"


def test_nonce_set_fails_closed_when_full_and_frees_after_the_window():
    v = verifier(nonces=NonceSet(capacity=3))
    for _ in range(3):
        v.verify(build_signed(ALICE, "x", NOW), NOW)
    assert code_of(lambda: v.verify(build_signed(ALICE, "x", NOW), NOW)) == "nonce-capacity"
    later = NOW + 30_001
    v.verify(build_signed(ALICE, "x", later), later)
    assert len(v.nonces) == 1


def test_nonce_lives_until_its_timestamp_leaves_the_window():
    v = verifier()
    env = build_signed(ALICE, "x", NOW + 20_000)  # from a clock 20 s ahead
    v.verify(env, NOW)
    assert code_of(lambda: v.verify(env, NOW + 45_000)) == "nonce-replay"
    assert code_of(lambda: v.verify(env, NOW + 50_001)) == "timestamp-out-of-range"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda w: w.pop("nonce"),
        lambda w: w.update(extra=1),
        lambda w: w.update(timestamp=2**53),
        lambda w: w.update(timestamp=1.5),
        lambda w: w.update(timestamp=True),
        lambda w: w.update(nonce=bytes(15)),
        lambda w: w.update(signature=bytes(63)),
        lambda w: w.update(signature="x" * 64),
        lambda w: w.update(signer=5),
    ],
)
def test_envelope_shape(mutate):
    wire = build_signed(ALICE, "x", NOW).to_wire()
    mutate(wire)
    assert code_of(lambda: verifier().verify(wire, NOW)) == "envelope-invalid"


def test_unencodable_payload_is_an_invalid_signature():
    env = build_signed(ALICE, "x", NOW)
    bad = SignedPayload(1.5, env.timestamp, env.nonce, env.signer, env.signature)
    assert code_of(lambda: verifier().verify(bad, NOW)) == "invalid-signature"


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_any_flipped_byte_fails_verification(data):
    env = build_signed(ALICE, {"frame": 7, "skills": ["boost"], "blob": b"\x00\x01"}, NOW)
    field = data.draw(st.sampled_from(["nonce", "signature", "signer", "timestamp", "payload"]))
    wire = env.to_wire()
    if field in ("nonce", "signature"):
        raw = bytearray(wire[field])
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= 1 << data.draw(st.integers(0, 7))
        wire[field] = bytes(raw)
    elif field == "signer":
        wire["signer"] = data.draw(st.sampled_from([MALLORY.peer_id, ALICE.peer_id[:-1] + "A"]))
    elif field == "timestamp":
        wire["timestamp"] = NOW + data.draw(st.integers(1, 1000))
    else:
        wire["payload"] = {"frame": data.draw(st.integers(0, 6)), "skills": ["boost"], "blob": b"\x00\x01"}
    v = SignedVerifier({ALICE.peer_id, MALLORY.peer_id, wire["signer"]})
    with pytest.raises(ProtocolError) as info:
        v.verify(wire, NOW)
    assert info.value.code in {"invalid-signature", "envelope-invalid"}
