"""The link handshake, sans-IO: Noise XX with identity payloads, every refusal code, the transcript."""

import hashlib
import json

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoding import dagcbor
from protocol.encoding.wire import encode_message
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.keys import Identity, verify_signature
from protocol.link.handshake import (
    DIALER,
    LISTENER,
    Handshake,
    HandshakeState,
    LinkClose,
    LinkIdentity,
    LinkNoise,
    LinkVersion,
    close_reason,
    decode_handshake_message,
    peek_protocol_version,
    static_key_message,
    transcript_digest,
)
from protocol.link.noise import NoiseXX, Role
from protocol.room.invitation import role_proof, check_role_proof
from protocol.versions.collection import VersionRequest
from protocol.versions.record import PROTOCOL_VERSION
from tests.layout import TESTS_DIR
from tests.coded import raises_coded

DIALER_ID = Identity(bytes([1]) * 32)
LISTENER_ID = Identity(bytes([2]) * 32)
OTHER_ID = Identity(bytes([3]) * 32)

# Frozen: changing the payloads, the signed message or the transcript layout breaks every deployed peer.
VECTOR = json.loads((TESTS_DIR / "protocol" / "link" / "vectors" / "open4wd_link_v2.json").read_text())["vector"]


def wire(msg):
    """Every frame crosses the real codec, as it would on a link."""
    return decode_handshake_message(encode_message(msg))


def pair(dialer=DIALER_ID, listener=LISTENER_ID, **dialer_options):
    return Handshake(dialer, DIALER, 0, **dialer_options), Handshake(listener, LISTENER, 0)


def run(d, lis, now_ms=0):
    """Deliver frames back and forth until both sides are done; returns every frame sent, in order."""
    sent = []
    to_listener, to_dialer = list(d.start()), list(lis.start())
    while to_listener or to_dialer:
        if to_listener:
            msg = wire(to_listener.pop(0))
            sent.append((DIALER, msg))
            to_dialer += lis.receive(msg, now_ms)
        if to_dialer:
            msg = wire(to_dialer.pop(0))
            sent.append((LISTENER, msg))
            to_listener += d.receive(msg, now_ms)
    return sent


def code_of(call, *args):
    with pytest.raises(ProtocolError) as info:
        call(*args)
    return info.value


def local_code_of(call, *args):
    """A misuse by this node's own code: a ``LocalError``, never one that could be blamed on the peer."""
    with pytest.raises(LocalError) as info:
        call(*args)
    assert not isinstance(info.value, PeerError)
    return info.value


class Forger:
    """A party that runs XX itself (any static key) and writes whatever payloads it likes."""

    def __init__(self, role, static=bytes([0x55]) * 32):
        self.noise = NoiseXX(role, static)

    def write(self, payload):
        return LinkNoise(self.noise.write_message(payload if isinstance(payload, bytes) else encode_message(payload)))

    def read(self, msg):
        return self.noise.read_message(msg.noise)


def identity_payload(identity, static_public, version=PROTOCOL_VERSION, peer_id=None):
    return LinkIdentity(version, peer_id or identity.peer_id, identity.sign(static_key_message(static_public)))


def test_success_gives_both_sides_the_same_transcript_the_other_peer_and_working_ciphers():
    d, lis = pair(expected_peer=LISTENER_ID.peer_id)
    sent = run(d, lis)
    assert [(side, type(m)) for side, m in sent] == [(DIALER, LinkNoise), (LISTENER, LinkNoise), (DIALER, LinkNoise)]
    assert d.done and lis.done and d.state == lis.state == HandshakeState.DONE
    assert d.result.peer_id == LISTENER_ID.peer_id and lis.result.peer_id == DIALER_ID.peer_id
    assert d.result.transcript == lis.result.transcript and len(d.result.transcript) == 32
    assert d.result.handshake_hash == lis.result.handshake_hash
    assert d.result.transcript == transcript_digest(PROTOCOL_VERSION, d.result.handshake_hash, DIALER_ID.peer_id,
                                                    LISTENER_ID.peer_id)
    assert (d.result.role, lis.result.role) == (DIALER, LISTENER)
    assert lis.result.receive.open(d.result.send.seal(b"to the listener")) == b"to the listener"
    assert d.result.receive.open(lis.result.send.seal(b"to the dialer")) == b"to the dialer"
    assert d.result.send.overhead == 16


def test_the_identities_travel_encrypted():
    d, lis = pair()
    sent = run(d, lis)
    for _, msg in sent:
        assert DIALER_ID.peer_id.encode() not in msg.noise and LISTENER_ID.peer_id.encode() not in msg.noise


def test_every_session_gets_a_fresh_transcript_and_a_role_proof_of_one_fails_in_another():
    first, second = pair(), pair()
    run(*first)
    run(*second)
    one, two = first[0].result.transcript, second[0].result.transcript
    assert one != two
    secret, room = bytes(24), "0b6f2f7c-0a5e-4c39-9d0b-6f8f3f0e7e11"
    proof = role_proof(secret, one, room, "participant", DIALER_ID.peer_id, LISTENER_ID.peer_id)
    assert check_role_proof(proof, secret, one, room, "participant", DIALER_ID.peer_id, LISTENER_ID.peer_id)
    assert not check_role_proof(proof, secret, two, room, "participant", DIALER_ID.peer_id, LISTENER_ID.peer_id)


def test_frozen_vector():
    h = bytes.fromhex
    v = VECTOR
    assert (Identity(h(v["dialer_seed"])).peer_id, Identity(h(v["listener_seed"])).peer_id) == (
        v["dialer_peer_id"], v["listener_peer_id"])
    d = Handshake(Identity(h(v["dialer_seed"])), DIALER, 0, protocol_version=v["protocol_version"],
                  static_key=h(v["dialer_static"]), ephemeral_key=h(v["dialer_ephemeral"]))
    lis = Handshake(Identity(h(v["listener_seed"])), LISTENER, 0, protocol_version=v["protocol_version"],
                    static_key=h(v["listener_static"]), ephemeral_key=h(v["listener_ephemeral"]))
    sent = [m.noise.hex() for _, m in run(d, lis)]
    assert sent == [v["message_1"], v["message_2"], v["message_3"]]
    assert d.result.handshake_hash.hex() == lis.result.handshake_hash.hex() == v["handshake_hash"]
    assert d.result.transcript.hex() == lis.result.transcript.hex() == v["transcript"]
    assert d.result.send.seal(h(v["dialer_frame_0"]["plaintext"])).hex() == v["dialer_frame_0"]["sealed"]
    assert lis.result.send.seal(h(v["listener_frame_0"]["plaintext"])).hex() == v["listener_frame_0"]["sealed"]

    # The layout, spelled out independently of handshake.py: plain Noise XX (checked against the
    # published vectors) carrying msgpack payloads, the signed domain string, the transcript map.
    payload_1 = msgpack.packb({"type": "link-version", "protocolVersion": "2.0.0"})
    assert payload_1.hex() == v["payload_1"]
    for role, payload_hex in ((LISTENER, v["payload_2"]), (DIALER, v["payload_3"])):
        payload = msgpack.unpackb(h(payload_hex))
        assert list(payload) == ["type", "protocolVersion", "peerId", "signature"]
        assert payload["type"] == "link-identity" and payload["peerId"] == v[f"{role}_peer_id"]
        signed = b"open4wd-node-noise-static-key-v1:" + h(v[f"{role}_static_public"])
        assert verify_signature(payload["peerId"], signed, payload["signature"])
    initiator = NoiseXX(Role.INITIATOR, h(v["dialer_static"]), ephemeral_private=h(v["dialer_ephemeral"]))
    responder = NoiseXX(Role.RESPONDER, h(v["listener_static"]), ephemeral_private=h(v["listener_ephemeral"]))
    assert initiator.write_message(payload_1).hex() == v["message_1"]
    responder.read_message(h(v["message_1"]))
    assert responder.write_message(h(v["payload_2"])).hex() == v["message_2"]
    initiator.read_message(h(v["message_2"]))
    assert initiator.write_message(h(v["payload_3"])).hex() == v["message_3"]
    transcript_map = dagcbor.encode({
        "domain": "open4wd-node-link-v2", "protocolVersion": "2.0.0", "handshakeHash": initiator.handshake_hash,
        "dialer": v["dialer_peer_id"], "listener": v["listener_peer_id"],
    })
    assert hashlib.sha256(transcript_map).hexdigest() == v["transcript"]


# ---- refusals, in the order the checks run -----------------------------------------------------

def test_version_mismatch_names_both_versions_on_both_sides():
    d = Handshake(DIALER_ID, DIALER, 0, protocol_version="9.0.0")
    lis = Handshake(LISTENER_ID, LISTENER, 0)
    lis.start()
    error = code_of(lis.receive, wire(d.start()[0]), 0)
    assert error.code == "handshake-version-mismatch"
    assert f"listener '{PROTOCOL_VERSION}'" in error.message and "dialer '9.0.0'" in error.message
    assert lis.state == HandshakeState.FAILED
    # a listener of another version that answers anyway: the dialer checks too, before anything else
    d2, second = _forged_listener(lambda f: LinkIdentity("9.9.9", "zNotAPeer", b""))
    error = code_of(d2.receive, wire(second), 0)
    assert error.code == "handshake-version-mismatch"
    assert "listener '9.9.9'" in error.message and f"dialer '{PROTOCOL_VERSION}'" in error.message


def test_a_protocol_1_hello_is_a_version_mismatch_naming_its_version():
    legacy = msgpack.packb({"type": "link-hello", "protocolVersion": "1.0.0", "peerId": DIALER_ID.peer_id,
                            "nonce": bytes(32)})
    error = code_of(decode_handshake_message, legacy)
    assert error.code == "handshake-version-mismatch" and "'1.0.0'" in error.message and f"'{PROTOCOL_VERSION}'" in error.message


def _listener_after_first(listener=LISTENER_ID):
    """A listener that has answered a real dialer's message 1; returns (dialer, listener, message 2)."""
    d, lis = pair(listener=listener)
    (first,) = d.start()
    lis.start()
    (second,) = lis.receive(wire(first), 0)
    return d, lis, second


def _forged_listener(payload_for):
    """A dialer against a forging listener whose message-2 payload is ``payload_for(forger)``."""
    d = Handshake(DIALER_ID, DIALER, 0, expected_peer=LISTENER_ID.peer_id)
    forger = Forger(Role.RESPONDER)
    forger.read(d.start()[0])
    return d, forger.write(payload_for(forger))


def test_dialer_refuses_a_listener_with_an_invalid_peer_id():
    d, second = _forged_listener(lambda f: LinkIdentity(PROTOCOL_VERSION, "zNotAPeer", bytes(64)))
    assert code_of(d.receive, wire(second), 0).code == "handshake-malformed"


def test_dialer_refuses_itself():
    d, lis = pair(listener=DIALER_ID)
    assert code_of(run, d, lis).code == "handshake-self"
    # our own identity payload reflected back by a forger holding its own static key
    d2, second = _forged_listener(lambda f: identity_payload(DIALER_ID, f.noise.static_public))
    assert code_of(d2.receive, wire(second), 0).code == "handshake-self"


def test_dialer_refuses_a_listener_that_is_not_the_expected_peer():
    d, lis = pair(expected_peer=OTHER_ID.peer_id)
    error = code_of(run, d, lis)
    assert error.code == "handshake-wrong-peer"
    assert OTHER_ID.peer_id in error.message and LISTENER_ID.peer_id in error.message
    assert not d.done


def test_an_impostor_cannot_prove_a_peer_id_it_does_not_hold():
    # it claims LISTENER's PeerId and signs its own static key with another identity
    d, second = _forged_listener(lambda f: identity_payload(OTHER_ID, f.noise.static_public, peer_id=LISTENER_ID.peer_id))
    assert code_of(d.receive, wire(second), 0).code == "handshake-invalid-signature"
    assert not d.done


def test_a_genuine_identity_payload_replayed_with_another_static_key_is_refused():
    # LISTENER's real payload from an earlier session signs that session's static key, not the forger's
    earlier, lis = pair()
    run(earlier, lis)
    genuine = identity_payload(LISTENER_ID, lis._noise.static_public)
    d, second = _forged_listener(lambda f: genuine)
    assert code_of(d.receive, wire(second), 0).code == "handshake-invalid-signature"


@pytest.mark.parametrize("signature", [bytes(64), b"\x01" * 63, b"", OTHER_ID.sign(b"anything")])
def test_forged_signatures_are_refused_by_the_listener(signature):
    lis = Handshake(LISTENER_ID, LISTENER, 0)
    lis.start()
    forger = Forger(Role.INITIATOR)
    (second,) = lis.receive(forger.write(LinkVersion(PROTOCOL_VERSION)), 0)
    forger.read(second)
    third = forger.write(LinkIdentity(PROTOCOL_VERSION, DIALER_ID.peer_id, signature))
    assert code_of(lis.receive, wire(third), 0).code == "handshake-invalid-signature"
    assert not lis.done
    # the forger's side of Noise is complete (its link would be open): the refusal is sealed for it
    _, forger_receive = forger.noise.split()
    assert forger_receive.open(lis.refusal_cipher.seal(b"refused")) == b"refused"


def test_refusals_before_message_3_go_in_the_clear():
    d, lis = pair(expected_peer=OTHER_ID.peer_id)
    assert code_of(run, d, lis).code == "handshake-wrong-peer"
    assert d.refusal_cipher is None and lis.refusal_cipher is None


def test_a_changed_handshake_message_does_not_authenticate():
    d, lis, second = _listener_after_first()
    changed = bytearray(second.noise)
    changed[100] ^= 0x01  # inside the encrypted static key or payload
    error = code_of(d.receive, LinkNoise(bytes(changed)), 0)
    assert error.code == "noise-handshake-failed" and "listener" in error.message
    # a changed message 1 (the clear ephemeral key) makes message 2 fail on the dialer
    d, lis = pair()
    (first,) = d.start()
    lis.start()
    swapped = bytearray(first.noise)
    swapped[0] ^= 0x01
    (second,) = lis.receive(LinkNoise(bytes(swapped)), 0)
    assert code_of(d.receive, second, 0).code == "noise-handshake-failed"


def test_malformed_payloads_are_refused():
    lis = Handshake(LISTENER_ID, LISTENER, 0)
    lis.start()
    assert code_of(lis.receive, Forger(Role.INITIATOR).write(b"\xc1"), 0).code == "handshake-malformed"
    lis = Handshake(LISTENER_ID, LISTENER, 0)
    lis.start()
    wrong_kind = Forger(Role.INITIATOR).write(VersionRequest(sender="x"))
    assert code_of(lis.receive, wrong_kind, 0).code == "handshake-malformed"
    d, second = _forged_listener(lambda f: LinkVersion(PROTOCOL_VERSION))  # message 2 must carry an identity
    assert code_of(d.receive, wire(second), 0).code == "handshake-malformed"


def test_too_short_and_low_order_keys_are_refused():
    lis = Handshake(LISTENER_ID, LISTENER, 0)
    lis.start()
    assert code_of(lis.receive, LinkNoise(b"short"), 0).code == "noise-handshake-failed"
    lis = Handshake(LISTENER_ID, LISTENER, 0)
    lis.start()
    low_order = bytes(32) + encode_message(LinkVersion(PROTOCOL_VERSION))  # the all-zero point: no shared secret
    assert code_of(lis.receive, LinkNoise(low_order), 0).code == "noise-handshake-failed"


def test_messages_out_of_order_are_unexpected():
    d, lis = pair()
    lis.start()
    assert code_of(lis.receive, LinkClose("x", "y"), 0).code == "handshake-unexpected"
    d, lis = pair()
    run(d, lis)
    assert code_of(d.receive, LinkNoise(bytes(64)), 0).code == "handshake-unexpected"
    fresh = Handshake(LISTENER_ID, LISTENER, 0)
    assert code_of(fresh.receive, LinkNoise(bytes(64)), 0).code == "handshake-unexpected"  # not started
    assert local_code_of(fresh.start).code == "handshake-unexpected"  # a failed attempt stays failed
    started = Handshake(DIALER_ID, DIALER, 0)
    started.start()
    assert local_code_of(started.start).code == "handshake-unexpected"  # starting twice is this node's misuse


def test_non_handshake_messages_cannot_open_a_link():
    error = code_of(decode_handshake_message, encode_message(VersionRequest(sender="z")))
    assert error.code == "handshake-unexpected"
    same_version = msgpack.packb({"type": "link-hello", "protocolVersion": PROTOCOL_VERSION})
    assert code_of(decode_handshake_message, same_version).code == "handshake-unexpected"


def test_deadline():
    d, lis = pair()
    d.start()
    lis.start()
    d.expire(4_999)
    (first,) = Handshake(DIALER_ID, DIALER, 0).start()
    assert code_of(lis.receive, first, 5_000).code == "handshake-timeout"
    assert code_of(d.expire, 5_000).code == "handshake-timeout"


def test_a_finished_handshake_does_not_expire():
    d, lis = pair()
    run(d, lis)
    d.expire(10**9)


def test_construction_guards():
    with raises_coded(ProtocolError, "peer-id-invalid"):  # the PeerId may come from a peer's room state
        Handshake(DIALER_ID, DIALER, 0, expected_peer="zbad")
    with raises_coded(LocalError, "handshake-misuse"):  # the node's own call: never blamed on the peer
        Handshake(LISTENER_ID, LISTENER, 0, expected_peer=DIALER_ID.peer_id)
    assert local_code_of(Handshake, DIALER_ID, "relay", 0).code == "handshake-misuse"
    with pytest.raises(LocalError) as info:
        Handshake(DIALER_ID, DIALER, 0, static_key=bytes(16))
    assert info.value.code == "handshake-misuse"
    with raises_coded(LocalError, "handshake-misuse"):
        Handshake(DIALER_ID, DIALER, 0, ephemeral_key=bytes(33))


def test_close_reasons_from_a_peer_are_sanitised():
    assert close_reason(LinkClose("link-flooded", "too much")) == ("link-flooded", "too much")
    assert close_reason(LinkClose("Not A Code", "x")) == ("link-closed", "x")
    assert close_reason(LinkClose("a" * 65, "x"))[0] == "link-closed"
    assert close_reason(LinkClose("c", "\x1b[2Jbye" + "!" * 500)) == ("c", "?[2Jbye" + "!" * 193)


def test_peek_protocol_version_never_raises():
    assert peek_protocol_version(msgpack.packb({"protocolVersion": "x" * 100})) == "x" * 64
    for junk in (b"", b"\xc1", msgpack.packb([1]), msgpack.packb({"protocolVersion": 3}), msgpack.packb({1: 2}),
                 b"\xd4\x01\x00"):
        assert peek_protocol_version(junk) is None


# ---- hypothesis: any bytes, any sequence: a coded refusal, never a crash -----------------------------

HANDSHAKE_CODES = {
    "handshake-unexpected",
    "handshake-malformed",
    "handshake-version-mismatch",
    "handshake-self",
    "handshake-invalid-signature",
    "handshake-wrong-peer",
    "noise-handshake-failed",
    "malformed-frame",
    "missing-field",
    "extra-field",
    "mistyped-field",
}


def _feed(handshake, msg):
    try:
        handshake.receive(msg, 0)
    except ProtocolError as exc:
        assert exc.code in HANDSHAKE_CODES, exc.code


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_as_a_frame_only_raise_coded_errors(raw):
    try:
        msg = decode_handshake_message(raw)
    except ProtocolError as exc:
        assert exc.code in HANDSHAKE_CODES
        return
    for role in (DIALER, LISTENER):
        handshake = Handshake(DIALER_ID, role, 0)
        handshake.start()
        _feed(handshake, msg)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=400), min_size=1, max_size=3), st.sampled_from([DIALER, LISTENER]))
def test_arbitrary_bytes_as_noise_messages_only_raise_coded_errors(messages, role):
    handshake = Handshake(OTHER_ID, role, 0, expected_peer=LISTENER_ID.peer_id if role == DIALER else None)
    handshake.start()
    for data in messages:
        _feed(handshake, LinkNoise(data))
    assert not handshake.done


payloads = st.one_of(
    st.builds(LinkVersion, st.one_of(st.just(PROTOCOL_VERSION), st.text(max_size=10))),
    st.builds(LinkIdentity, st.one_of(st.just(PROTOCOL_VERSION), st.text(max_size=10)),
              st.one_of(st.sampled_from([DIALER_ID.peer_id, LISTENER_ID.peer_id, OTHER_ID.peer_id]), st.text(max_size=60)),
              st.binary(max_size=80)),
    st.binary(max_size=200),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(payloads, min_size=1, max_size=3), st.sampled_from([DIALER, LISTENER]))
def test_a_forger_with_valid_noise_and_any_payloads_only_gets_coded_refusals(sequence, role):
    """Payloads that do authenticate as Noise (the forger runs XX properly) but say anything at all."""
    handshake = Handshake(OTHER_ID, role, 0)
    forger = Forger(Role.RESPONDER if role == DIALER else Role.INITIATOR)
    outgoing = handshake.start()
    for payload in sequence:
        try:
            if outgoing:
                forger.read(outgoing[0])
            frame = forger.write(payload)
        except (LocalError, PeerError):
            return  # the forger's own machine is out of turns (or refuses): nothing more to send
        try:
            outgoing = handshake.receive(frame, 0)
        except ProtocolError as exc:
            assert exc.code in HANDSHAKE_CODES, exc.code
            return
    if handshake.done:  # only a payload that is a valid identity of OTHER's... which a forger cannot sign
        pytest.fail("a forger completed a handshake")
