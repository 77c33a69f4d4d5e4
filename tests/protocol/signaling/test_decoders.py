"""Hypothesis over the decoders and validators of the signaling wire: whatever arrives, only a coded
``ProtocolError`` comes out; what this node makes decodes to itself; lengths are counted as JavaScript
counts them; JSON numbers are read as JavaScript reads them."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.signaling.envelope import IceCandidate, Sdp, SdpKind, SignalEnvelope, normalise_message, sign_envelope
from protocol.signaling.frames import ErrorFrame, RoomStateFrame, decode_client_frame, decode_server_frame
from protocol.signaling.proof import RegisterProof
from protocol.signaling.turn import decode_turn_reply, decode_turn_request
from protocol.signaling.values import js_number, safe_integer, utf16_length
from tests.protocol.signaling.helpers import ALICE, BOB, NOW, SCOPE

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
                    max_leaves=20)
KEYS = st.sampled_from(["type", "sender", "payload", "peerId", "proof", "timestamp", "nonce", "signatureHex", "scope",
                        "target", "message", "nonceHex", "signer", "candidate", "sdp", "sdpMid", "sdpMLineIndex",
                        "usernameFragment", "peers", "code", "urls", "username", "credential", "ttlSec"])
TYPES = st.sampled_from(["register", "signal-v1", "leave", "room-state", "peer-joined", "peer-left", "error",
                         "sdp-offer", "sdp-answer", "ice-candidate"])
SHAPED = st.recursive(JSON | TYPES, lambda inner: st.dictionaries(KEYS, inner, max_size=8) | st.lists(inner, max_size=3),
                      max_leaves=30)


def only_coded(call, *args) -> None:
    try:
        call(*args)
    except ProtocolError:
        pass


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300), st.text(max_size=300), SHAPED.map(json.dumps)))
def test_the_frame_decoders_raise_only_coded_refusals(data):
    for decode in (decode_client_frame, decode_server_frame):
        only_coded(decode, data)
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    only_coded(decode_turn_request, raw)
    only_coded(decode_turn_reply, raw)


@settings(max_examples=200, deadline=None)
@given(SHAPED)
def test_message_and_proof_validators_raise_only_coded_refusals(value):
    only_coded(normalise_message, value)
    only_coded(RegisterProof.from_register, value)
    only_coded(RegisterProof.from_turn_request, value)
    if isinstance(value, dict):
        only_coded(SignalEnvelope.from_wire, value)


CANDIDATES = st.builds(IceCandidate, st.text(min_size=1, max_size=50), st.none() | st.text(max_size=10),
                       st.none() | st.integers(0, 2**31), st.none() | st.text(max_size=10))


@settings(max_examples=100, deadline=None)
@given(CANDIDATES | st.builds(Sdp, st.sampled_from(SdpKind), st.text(min_size=1, max_size=200)),
       st.booleans())
def test_what_this_node_signs_decodes_and_verifies_with_or_without_absent_keys(message, omit):
    try:
        envelope = sign_envelope(ALICE, SCOPE, BOB.peer_id, message, NOW, omit_absent=omit)
    except ProtocolError:  # a lone surrogate cannot be encoded, so it cannot be signed
        return
    decoded = decode_client_frame(envelope.wire_text())
    assert decoded.envelope.message == message
    from protocol.identity.signed import check_signature
    check_signature(decoded.envelope.signed())


@given(st.lists(st.text(min_size=1, max_size=10), max_size=64), st.text(min_size=1, max_size=20))
def test_server_frames_round_trip(peers, code):
    assert decode_server_frame(RoomStateFrame(tuple(peers)).encode()) == RoomStateFrame(tuple(peers))
    assert decode_server_frame(ErrorFrame(code).encode()) == ErrorFrame(code)


@given(st.text(max_size=40))
def test_utf16_length_is_javascripts(text):
    assert utf16_length(text) == len(text.encode("utf-16-le", "surrogatepass")) // 2


@given(st.integers() | st.floats() | st.booleans() | st.text(max_size=3))
def test_numbers_are_read_as_javascript_reads_them(value):
    number = js_number(value)
    if isinstance(value, bool) or isinstance(value, str):
        assert number is None
    elif isinstance(value, float) and value.is_integer():
        assert number == int(value) and type(number) is int
    if safe_integer(value) is not None:
        assert abs(safe_integer(value)) <= 2**53 - 1
    assert js_number(2**53 + 1) == 2**53  # the nearest double, as JSON.parse reads it
