"""Interop vectors written from the exact byte shapes of spec/signaling.md §3 and §9: the canonical
DAG-CBOR of the register proof and of ``signal-v1`` (key orders, heads), the normal form of an ICE
candidate, and the observed shape of a ``/turn-token`` reply with coturn's REST credential."""

from __future__ import annotations

import hashlib
import json

from protocol.encoding import dagcbor
from protocol.identity.keys import verify_signature
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, SignalEnvelope, sign_envelope
from protocol.signaling.proof import TURN_TOKEN_ROOM, build_proof, register_digest
from protocol.signaling.turn import mint, turn_credential
from tests.protocol.signaling.helpers import ALICE, BOB, NOW, SCOPE

NONCE_HEX = "00112233445566778899aabbccddeeff"


def register_map(room: str) -> bytes:
    return dagcbor.encode({"type": "signaling-register", "peerId": ALICE.peer_id, "room": room,
                           "timestamp": NOW, "nonce": NONCE_HEX})


def test_register_proof_map_has_the_spec_heads_and_order():
    body = register_map(SCOPE)
    expected = (b"\xa5" + b"\x64room" + b"\x78\x29" + SCOPE.encode()
                + b"\x64type" + b"\x72signaling-register"
                + b"\x65nonce" + b"\x78\x20" + NONCE_HEX.encode()
                + b"\x66peerId" + b"\x78\x30" + ALICE.peer_id.encode()
                + b"\x69timestamp" + b"\x1b" + NOW.to_bytes(8, "big"))
    assert len(SCOPE) == 41 and len(ALICE.peer_id) == 48
    assert body == expected
    assert register_digest(ALICE.peer_id, SCOPE, NOW, NONCE_HEX) == hashlib.sha256(expected).digest()


def test_turn_proof_room_is_the_eleven_byte_text():
    body = register_map(TURN_TOKEN_ROOM)
    assert body.startswith(b"\xa5\x64room\x6b/turn-token\x64type")


def test_the_nonce_is_signed_as_the_text_sent():
    proof = build_proof(ALICE, SCOPE, NOW, nonce=NONCE_HEX)
    text_digest = register_digest(ALICE.peer_id, SCOPE, NOW, NONCE_HEX)
    assert verify_signature(ALICE.peer_id, text_digest, bytes.fromhex(proof.signature_hex))
    bytes_digest = hashlib.sha256(dagcbor.encode({"type": "signaling-register", "peerId": ALICE.peer_id, "room": SCOPE,
                                                  "timestamp": NOW, "nonce": bytes.fromhex(NONCE_HEX)})).digest()
    assert not verify_signature(ALICE.peer_id, bytes_digest, bytes.fromhex(proof.signature_hex))


def signal_digest_input(message: dict) -> bytes:
    payload = {"type": "signal-v1", "scope": SCOPE, "target": BOB.peer_id, "message": message}
    return dagcbor.encode({"nonce": bytes.fromhex(NONCE_HEX), "payload": payload, "signer": ALICE.peer_id,
                           "timestamp": NOW})


def test_signal_map_orders_outer_payload_and_sdp_keys():
    body = signal_digest_input(Sdp(SdpKind.OFFER, "v=0").to_json())
    expected = (b"\xa4\x65nonce\x50" + bytes.fromhex(NONCE_HEX)
                + b"\x66signer\x78\x30" + ALICE.peer_id.encode()
                + b"\x67payload\xa4" + b"\x64type\x69signal-v1" + b"\x65scope\x78\x29" + SCOPE.encode()
                + b"\x66target\x78\x30" + BOB.peer_id.encode()
                + b"\x67message\xa2" + b"\x63sdp\x63v=0" + b"\x64type\x69sdp-offer"
                + b"\x69timestamp\x1b" + NOW.to_bytes(8, "big"))
    assert body == expected


def test_ice_candidate_normal_form_fills_nulls_in_canonical_order_and_index_is_an_integer():
    message = IceCandidate("candidate:1 1 udp 2122260223 192.0.2.1 54400 typ host", sdp_mline_index=0).to_json()
    body = dagcbor.encode(message)
    line = message["candidate"]["candidate"].encode()
    assert body == (b"\xa2\x64type\x6dice-candidate" + b"\x69candidate\xa4"
                    + b"\x66sdpMid\xf6" + b"\x69candidate\x78" + bytes([len(line)]) + line
                    + b"\x6dsdpMLineIndex\x00" + b"\x70usernameFragment\xf6")


def test_a_candidate_sent_without_its_optional_keys_verifies_in_its_normal_form():
    envelope = sign_envelope(ALICE, SCOPE, BOB.peer_id, IceCandidate("candidate:x", "0", 0), NOW,
                             bytes.fromhex(NONCE_HEX))
    wire = json.loads(envelope.wire_text())
    assert wire["message"] == {"type": "ice-candidate", "candidate": {"candidate": "candidate:x", "sdpMid": "0",
                                                                       "sdpMLineIndex": 0}}
    assert list(wire) == ["type", "scope", "target", "message", "timestamp", "nonceHex", "signer", "signatureHex"]
    received = SignalEnvelope.from_wire(wire)
    digest = hashlib.sha256(signal_digest_input(IceCandidate("candidate:x", "0", 0).to_json())).digest()
    assert verify_signature(ALICE.peer_id, digest, received.signature)
    wire["message"]["candidate"]["sdpMLineIndex"] = 0.0  # JavaScript's 0.0 is the integer 0
    assert SignalEnvelope.from_wire(wire).message == received.message


def test_turn_reply_has_the_observed_shape_and_coturns_credential():
    peer = "z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"
    minted = mint("open4wd-test-secret", peer, 1_796_535_282_999, ("turn:127.0.0.1:3478",))
    text = json.dumps(minted.to_json(), separators=(",", ":"))
    # openssl dgst -sha1 -hmac open4wd-test-secret -binary <<< username | base64 (an oracle outside this code)
    assert text == ('{"urls":["turn:127.0.0.1:3478"],"username":"1796535582:' + peer
                    + '","credential":"OonK9WeMVc1s0tr07RaGjnW/BS0=","ttlSec":300}')
    assert minted.expires_s == 1_796_535_582
    assert turn_credential("s3cret", "hello") == "+HWtFl2Xq6a2jiwvfqMUrrKgCC8="
