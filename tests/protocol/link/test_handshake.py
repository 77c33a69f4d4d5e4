import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoding import dagcbor
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.link.handshake import (
    DIALER,
    LISTENER,
    Handshake,
    LinkAuth,
    LinkClose,
    LinkHello,
    auth_message,
    close_reason,
    decode_handshake_message,
    transcript_digest,
)
from protocol.identity.keys import Identity
from protocol.versions.collection import VersionRequest
from protocol.encoding.wire import encode_message

DIALER_ID = Identity(bytes([1]) * 32)
LISTENER_ID = Identity(bytes([2]) * 32)
OTHER_ID = Identity(bytes([3]) * 32)
DIALER_NONCE = bytes([0x11]) * 32
LISTENER_NONCE = bytes([0x22]) * 32

# Frozen: changing the transcript layout or the auth message breaks every deployed peer.
VECTOR_DIGEST = "71d6478d6c200a7e19ec5d0133fd8ce3e603c8598fd48296019f62599e9363db"
VECTOR_TRANSCRIPT_CBOR = (
    "a4666469616c6572a2656e6f6e63655820" + "11" * 32 + "6670656572496478307a364d6b6f6e334e656364364e6b6b79666f476f48"
    "786964327a6e476335394c55334b376d756261526346624c664c5866646f6d61696e746f70656e3477642d6e6f64652d6c696e6b2d7631"
    "686c697374656e6572a2656e6f6e63655820" + "22" * 32 + "6670656572496478307a364d6b6f39685467674d776a535445614a6150"
    "55664536747163793278765536426e4e713365336f387156426979486f70726f746f636f6c56657273696f6e65312e302e30"
)
VECTOR_DIALER_SIGNATURE = (
    "784712d092b484ba4e4c770575251bd9ad9796ddfee5aacde2b0d8eeb8270c20"
    "2ee738146106a5cf5ef05efccdffe64f34b45c4b5a0c186460ed79c104339a06"
)
VECTOR_LISTENER_SIGNATURE = (
    "3ce534517b620bafe5786836c7bc0287430afb48bdda3ccc6d4fd6b2d26c82c7"
    "6833e4d4c47878eee90d9316128a3d7d6033602f4c27f8841887554d9b4e1605"
)


def wire(msg):
    """Every message crosses the real codec, as it would on a link."""
    return decode_handshake_message(encode_message(msg))


def pair(dialer=DIALER_ID, listener=LISTENER_ID, **dialer_options):
    d = Handshake(dialer, DIALER, 0, **dialer_options)
    lis = Handshake(listener, LISTENER, 0)
    return d, lis


def run(d, lis, now_ms=0):
    """Deliver messages back and forth until both sides are done; returns every message sent, in order."""
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


def test_success_gives_both_sides_the_same_transcript_and_the_other_peer():
    d, lis = pair(expected_peer=LISTENER_ID.peer_id)
    sent = run(d, lis)
    assert sorted((side, type(m).__name__) for side, m in sent) == [
        (DIALER, "LinkAuth"),
        (DIALER, "LinkHello"),
        (LISTENER, "LinkAuth"),
        (LISTENER, "LinkHello"),
    ]
    assert sent[0] == (DIALER, LinkHello("1.0.0", DIALER_ID.peer_id, d.nonce))
    assert d.done and lis.done
    assert d.result.peer_id == LISTENER_ID.peer_id and lis.result.peer_id == DIALER_ID.peer_id
    assert d.result.transcript == lis.result.transcript and len(d.result.transcript) == 32
    assert (d.result.role, lis.result.role) == (DIALER, LISTENER)


def test_every_link_gets_a_fresh_transcript():
    first, second = pair(), pair()
    run(*first)
    run(*second)
    assert first[0].result.transcript != second[0].result.transcript


def test_frozen_vector():
    assert dagcbor.encode(
        {
            "domain": "open4wd-node-link-v1",
            "protocolVersion": "1.0.0",
            "dialer": {"peerId": DIALER_ID.peer_id, "nonce": DIALER_NONCE},
            "listener": {"peerId": LISTENER_ID.peer_id, "nonce": LISTENER_NONCE},
        }
    ).hex() == VECTOR_TRANSCRIPT_CBOR
    digest = transcript_digest("1.0.0", DIALER_ID.peer_id, DIALER_NONCE, LISTENER_ID.peer_id, LISTENER_NONCE)
    assert digest.hex() == VECTOR_DIGEST
    d = Handshake(DIALER_ID, DIALER, 0, protocol_version="1.0.0", nonce=DIALER_NONCE)
    lis = Handshake(LISTENER_ID, LISTENER, 0, protocol_version="1.0.0", nonce=LISTENER_NONCE)
    auths = {side: m.signature.hex() for side, m in run(d, lis) if isinstance(m, LinkAuth)}
    assert auths == {DIALER: VECTOR_DIALER_SIGNATURE, LISTENER: VECTOR_LISTENER_SIGNATURE}
    assert d.result.transcript.hex() == lis.result.transcript.hex() == VECTOR_DIGEST
    assert auth_message(DIALER, digest) == dagcbor.encode(
        {"domain": "open4wd-node-link-auth-v1", "role": "dialer", "transcript": digest}
    )


def test_dialer_refuses_a_listener_that_is_not_the_expected_peer():
    d, lis = pair(expected_peer=OTHER_ID.peer_id)
    error = code_of(run, d, lis)
    assert error.code == "handshake-wrong-peer"
    assert OTHER_ID.peer_id in error.message and LISTENER_ID.peer_id in error.message
    assert not d.done


def test_version_mismatch_names_both_versions_on_both_sides():
    d = Handshake(DIALER_ID, DIALER, 0, protocol_version="2.0.0")
    lis = Handshake(LISTENER_ID, LISTENER, 0)
    lis.start()
    error = code_of(lis.receive, wire(d.start()[0]), 0)
    assert error.code == "handshake-version-mismatch"
    assert "'2.0.0'" in error.message and "'1.0.0'" in error.message
    d2 = Handshake(DIALER_ID, DIALER, 0)
    d2.start()
    l2 = Handshake(LISTENER_ID, LISTENER, 0, protocol_version="9.9.9")
    l2.start()
    error = code_of(d2.receive, LinkHello("9.9.9", LISTENER_ID.peer_id, LISTENER_NONCE), 0)
    assert error.code == "handshake-version-mismatch" and "'9.9.9'" in error.message and "'1.0.0'" in error.message


def _listener_waiting_for_auth():
    d, lis = pair()
    (hello,) = d.start()
    lis.start()
    l_hello, l_auth = lis.receive(wire(hello), 0)
    assert d.receive(wire(l_hello), 0) == []
    (d_auth,) = d.receive(wire(l_auth), 0)
    return d, lis, l_auth, d_auth


@pytest.mark.parametrize(
    "signature",
    [
        bytes(64),
        b"\x01" * 63,
        b"",
        OTHER_ID.sign(b"anything"),
    ],
)
def test_forged_signatures_are_refused(signature):
    _, lis, _, _ = _listener_waiting_for_auth()
    assert code_of(lis.receive, LinkAuth(signature), 0).code == "handshake-invalid-signature"
    assert not lis.done


def test_a_signature_by_the_right_key_over_another_transcript_is_refused():
    d, lis, _, d_auth = _listener_waiting_for_auth()
    tampered = bytearray(d_auth.signature)
    tampered[0] ^= 1
    assert code_of(lis.receive, LinkAuth(bytes(tampered)), 0).code == "handshake-invalid-signature"
    wrong_digest = transcript_digest("1.0.0", DIALER_ID.peer_id, bytes(32), LISTENER_ID.peer_id, bytes(32))
    _, l2, _, _ = _listener_waiting_for_auth()
    forged = DIALER_ID.sign(auth_message(DIALER, wrong_digest))
    assert code_of(l2.receive, LinkAuth(forged), 0).code == "handshake-invalid-signature"


def test_an_auth_replayed_from_an_earlier_link_is_refused():
    _, _, _, old_auth = _listener_waiting_for_auth()
    _, lis, _, _ = _listener_waiting_for_auth()
    assert code_of(lis.receive, wire(old_auth), 0).code == "handshake-invalid-signature"


def test_a_reflected_auth_is_refused():
    # the listener's own proof sent back to it
    _, lis, l_auth, _ = _listener_waiting_for_auth()
    assert code_of(lis.receive, wire(l_auth), 0).code == "handshake-invalid-signature"
    # the right key and transcript, but signed in the other role
    d, lis, _, _ = _listener_waiting_for_auth()
    wrong_role = DIALER_ID.sign(auth_message(LISTENER, d._transcript))
    assert code_of(lis.receive, LinkAuth(wrong_role), 0).code == "handshake-invalid-signature"


def test_messages_out_of_order_are_unexpected():
    d, lis = pair()
    lis.start()
    assert code_of(lis.receive, LinkAuth(bytes(64)), 0).code == "handshake-unexpected"
    assert code_of(lis.receive, LinkHello("1.0.0", DIALER_ID.peer_id, DIALER_NONCE), 0).code == "handshake-unexpected"
    d, lis, _, _ = _listener_waiting_for_auth()
    assert code_of(lis.receive, LinkHello("1.0.0", DIALER_ID.peer_id, DIALER_NONCE), 0).code == "handshake-unexpected"
    assert local_code_of(d.start).code == "handshake-unexpected"  # starting twice is this node's own misuse
    d, lis = pair()
    run(d, lis)
    assert code_of(d.receive, LinkAuth(bytes(64)), 0).code == "handshake-unexpected"
    fresh = Handshake(LISTENER_ID, LISTENER, 0)
    assert code_of(fresh.receive, LinkHello("1.0.0", DIALER_ID.peer_id, DIALER_NONCE), 0).code == "handshake-unexpected"
    assert local_code_of(fresh.start).code == "handshake-unexpected"  # a failed attempt stays failed
    started = Handshake(LISTENER_ID, LISTENER, 0)
    started.start()
    assert code_of(started.receive, LinkClose("x", "y"), 0).code == "handshake-unexpected"


def test_non_handshake_messages_cannot_open_a_link():
    error = code_of(decode_handshake_message, encode_message(VersionRequest(sender="z")))
    assert error.code == "handshake-unexpected"


def test_self_dial_and_reflected_hello_are_refused():
    d, lis = pair(listener=DIALER_ID)
    assert code_of(run, d, lis).code == "handshake-self"
    d = Handshake(DIALER_ID, DIALER, 0)
    (hello,) = d.start()
    assert code_of(d.receive, wire(hello), 0).code == "handshake-self"


@pytest.mark.parametrize(
    "hello",
    [
        LinkHello("1.0.0", "zNotAPeer", LISTENER_NONCE),
        LinkHello("1.0.0", LISTENER_ID.peer_id, bytes(31)),
        LinkHello("1.0.0", LISTENER_ID.peer_id, bytes(33)),
    ],
)
def test_malformed_hellos_are_refused(hello):
    d = Handshake(DIALER_ID, DIALER, 0)
    d.start()
    assert code_of(d.receive, hello, 0).code == "handshake-malformed"


def test_deadline():
    d, lis = pair()
    d.start()
    lis.start()
    d.expire(4_999)
    (hello,) = Handshake(DIALER_ID, DIALER, 0).start()
    assert code_of(lis.receive, hello, 5_000).code == "handshake-timeout"
    assert code_of(d.expire, 5_000).code == "handshake-timeout"


def test_a_finished_handshake_does_not_expire():
    d, lis = pair()
    run(d, lis)
    d.expire(10**9)


def test_construction_guards():
    with pytest.raises(ProtocolError):
        Handshake(DIALER_ID, DIALER, 0, expected_peer="zbad")
    with pytest.raises(ProtocolError):
        Handshake(LISTENER_ID, LISTENER, 0, expected_peer=DIALER_ID.peer_id)
    assert local_code_of(Handshake, DIALER_ID, "relay", 0).code == "handshake-misuse"
    with pytest.raises(LocalError) as info:
        Handshake(DIALER_ID, DIALER, 0, nonce=bytes(16))
    assert info.value.code == "handshake-misuse"


def test_close_reasons_from_a_peer_are_sanitised():
    assert close_reason(LinkClose("link-flooded", "too much")) == ("link-flooded", "too much")
    assert close_reason(LinkClose("Not A Code", "x")) == ("link-closed", "x")
    assert close_reason(LinkClose("a" * 65, "x"))[0] == "link-closed"
    assert close_reason(LinkClose("c", "\x1b[2Jbye" + "!" * 500)) == ("c", "?[2Jbye" + "!" * 193)


HANDSHAKE_CODES = {
    "handshake-unexpected",
    "handshake-malformed",
    "handshake-version-mismatch",
    "handshake-self",
    "handshake-invalid-signature",
    "malformed-frame",
    "missing-field",
    "extra-field",
    "mistyped-field",
}


def _feed(handshake, msg):
    try:
        handshake.receive(msg, 0)
    except ProtocolError as exc:
        assert exc.code in HANDSHAKE_CODES


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_only_raise_coded_errors(raw):
    try:
        msg = decode_handshake_message(raw)
    except ProtocolError as exc:
        assert exc.code in HANDSHAKE_CODES
        return
    for role in (DIALER, LISTENER):
        handshake = Handshake(DIALER_ID, role, 0)
        handshake.start()
        _feed(handshake, msg)


hellos = st.builds(
    LinkHello,
    st.one_of(st.just("1.0.0"), st.text(max_size=80)),
    st.one_of(st.sampled_from([DIALER_ID.peer_id, LISTENER_ID.peer_id]), st.text(max_size=60)),
    st.binary(min_size=0, max_size=40),
)
auths = st.builds(LinkAuth, st.binary(max_size=80))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(hellos, auths), max_size=4), st.sampled_from([DIALER, LISTENER]))
def test_arbitrary_message_sequences_only_raise_coded_errors(messages, role):
    handshake = Handshake(OTHER_ID, role, 0)
    handshake.start()
    for msg in messages:
        _feed(handshake, msg)
