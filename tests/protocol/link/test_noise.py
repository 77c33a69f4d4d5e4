"""The Noise XX state machine against the published test vectors, and what it refuses."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import LocalError, PeerError
from protocol.link.noise import NoiseXX, Role
from tests.layout import TESTS_DIR
from tests.coded import raises_coded

VECTOR_FILE = TESTS_DIR / "protocol" / "link" / "vectors" / "noise_xx_25519_chachapoly_sha256.json"
VECTORS = json.loads(VECTOR_FILE.read_text())["vectors"]


def pair(vector):
    h = bytes.fromhex
    initiator = NoiseXX(Role.INITIATOR, h(vector["init_static"]), prologue=h(vector["init_prologue"]),
                        ephemeral_private=h(vector["init_ephemeral"]))
    responder = NoiseXX(Role.RESPONDER, h(vector["resp_static"]), prologue=h(vector["resp_prologue"]),
                        ephemeral_private=h(vector["resp_ephemeral"]))
    return initiator, responder


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["init_prologue"][:8] + "…")
def test_the_published_vectors(vector):
    initiator, responder = pair(vector)
    ciphers = {}
    for index, message in enumerate(vector["messages"]):
        sender, receiver = (initiator, responder) if index % 2 == 0 else (responder, initiator)
        payload, expected = bytes.fromhex(message["payload"]), bytes.fromhex(message["ciphertext"])
        if index < 3:
            written = sender.write_message(payload)
            assert written == expected, f"handshake message {index}"
            assert receiver.read_message(written) == payload
            if index == 2:
                assert initiator.handshake_hash == responder.handshake_hash
                if "handshake_hash" in vector:  # cacophony's vectors carry it, snow's do not
                    assert initiator.handshake_hash == bytes.fromhex(vector["handshake_hash"])
                ciphers = {id(initiator): initiator.split(), id(responder): responder.split()}
        else:
            sealed = ciphers[id(sender)][0].seal(payload)
            assert sealed == expected, f"transport message {index}"
            assert ciphers[id(receiver)][1].open(sealed) == payload
    assert initiator.remote_static is not None and responder.remote_static is not None


def established():
    initiator, responder = NoiseXX(Role.INITIATOR, bytes(range(32))), NoiseXX(Role.RESPONDER, bytes(range(1, 33)))
    responder.read_message(initiator.write_message(b"hello"))
    initiator.read_message(responder.write_message(b"it is me"))
    responder.read_message(initiator.write_message(b"and me"))
    return initiator.split(), responder.split()


def test_a_changed_replayed_reordered_or_dropped_message_does_not_open():
    (i_send, _), (_, r_receive) = established()
    first, second, third = (i_send.seal(f"frame {n}".encode()) for n in range(3))
    assert r_receive.open(first) == b"frame 0"
    for bad in (first, third, second[:-1] + bytes([second[-1] ^ 1])):  # replayed, one dropped, altered
        with pytest.raises(PeerError) as info:
            r_receive.open(bad)
        assert info.value.code == "link-tampered"


def test_a_tampered_handshake_message_is_a_peer_error():
    initiator, responder = NoiseXX(Role.INITIATOR, bytes(32)), NoiseXX(Role.RESPONDER, bytes([7]) * 32)
    responder.read_message(initiator.write_message())
    second = bytearray(responder.write_message(b"payload"))
    second[40] ^= 0x01  # inside the encrypted static key
    with pytest.raises(PeerError) as info:
        initiator.read_message(bytes(second))
    assert info.value.code == "noise-handshake-failed"
    with raises_coded(PeerError, "noise-handshake-failed"):
        NoiseXX(Role.RESPONDER, bytes(32)).read_message(b"short")


def test_out_of_order_calls_are_local_errors_never_a_peers_fault():
    initiator = NoiseXX(Role.INITIATOR, bytes(32))
    with raises_coded(LocalError, "noise-misuse"):
        initiator.read_message(b"\x00" * 48)
    with raises_coded(LocalError, "noise-misuse"):
        initiator.split()
    with raises_coded(LocalError, "noise-misuse"):
        NoiseXX(Role.RESPONDER, bytes(32)).write_message()


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_as_a_handshake_message_are_refused_or_read_never_crash(data):
    responder = NoiseXX(Role.RESPONDER, bytes([9]) * 32)
    try:
        responder.read_message(data)  # message 1 is unauthenticated: any 32+ bytes are an ephemeral key
    except PeerError:
        assert len(data) < 32
