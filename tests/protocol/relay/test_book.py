"""The relay's book: every limit refuses with its code and is counted (sans-IO, no sockets)."""

import pytest

from protocol.identity.keys import Identity
from protocol.relay.book import RelayBook
from protocol.relay.limits import Refusal, RelayLimits, RelayRefused
from protocol.relay.proof import sign_reservation

RELAY = Identity(bytes([9]) * 32)
PEERS = [Identity(bytes([i]) * 32) for i in range(1, 8)]
T = b"t" * 32  # a link transcript


def proof(identity, transcript=T):
    return sign_reservation(identity, RELAY.peer_id, transcript)


def book(**limits):
    return RelayBook(RELAY.peer_id, RelayLimits(**limits))


def refused(code, call, *args):
    with pytest.raises(RelayRefused) as caught:
        call(*args)
    assert caught.value.code == code.value
    return caught.value


def test_a_reservation_needs_the_peers_own_signature_over_this_link_and_relay():
    b = book()
    a, other = PEERS[:2]
    refused(Refusal.RESERVATION_REFUSED, b.reserve, a.peer_id, "10.0.0.1", proof(other), T, 0)  # someone else's
    refused(Refusal.RESERVATION_REFUSED, b.reserve, a.peer_id, "10.0.0.1", proof(a, b"u" * 32), T, 0)  # another link
    elsewhere = sign_reservation(a, PEERS[6].peer_id, T)  # made for another relay
    refused(Refusal.RESERVATION_REFUSED, b.reserve, a.peer_id, "10.0.0.1", elsewhere, T, 0)
    granted = b.reserve(a.peer_id, "10.0.0.1", proof(a), T, 1_000)
    assert granted.expires_ms == 1_000 + 3_600_000  # the default TTL is one hour
    assert b.refusals[Refusal.RESERVATION_REFUSED] == 3


def test_reservations_in_total_and_per_source():
    b = book(max_reservations=3, max_reservations_per_source=2)
    b.reserve(PEERS[0].peer_id, "10.0.0.1", proof(PEERS[0]), T, 0)
    b.reserve(PEERS[1].peer_id, "10.0.0.1", proof(PEERS[1]), T, 0)
    refused(Refusal.SOURCE_LIMIT, b.reserve, PEERS[2].peer_id, "10.0.0.1", proof(PEERS[2]), T, 0)
    b.reserve(PEERS[0].peer_id, "10.0.0.1", proof(PEERS[0]), T, 10)  # a refresh keeps its place
    b.reserve(PEERS[2].peer_id, "10.0.0.2", proof(PEERS[2]), T, 0)
    refused(Refusal.RELAY_FULL, b.reserve, PEERS[3].peer_id, "10.0.0.3", proof(PEERS[3]), T, 0)
    b.release(PEERS[2].peer_id)
    b.reserve(PEERS[3].peer_id, "10.0.0.3", proof(PEERS[3]), T, 0)
    assert b.refusals == {Refusal.SOURCE_LIMIT: 1, Refusal.RELAY_FULL: 1}


def test_a_reservation_expires_unless_refreshed():
    b = book(reservation_ttl_ms=1_000)
    b.reserve(PEERS[0].peer_id, "s", proof(PEERS[0]), T, 0)
    b.reserve(PEERS[1].peer_id, "s", proof(PEERS[1]), T, 0)
    b.reserve(PEERS[1].peer_id, "s", proof(PEERS[1]), T, 900)  # refreshed
    assert b.next_expiry_ms() == 1_000
    assert b.expired(999) == [] and b.expired(1_000) == [PEERS[0].peer_id]
    assert set(b.reservations) == {PEERS[1].peer_id}


def test_allow_and_deny_lists():
    allowed = PEERS[0].peer_id
    b = book(allow=frozenset({allowed}), deny=frozenset({PEERS[2].peer_id}))
    b.reserve(allowed, "s", proof(PEERS[0]), T, 0)
    refused(Refusal.PEER_DENIED, b.reserve, PEERS[1].peer_id, "s", proof(PEERS[1]), T, 0)  # not on the allow list
    b.open_circuit(b"1" * 16, PEERS[1].peer_id, "s", allowed, 0)  # anyone not denied may connect
    refused(Refusal.PEER_DENIED, b.open_circuit, b"2" * 16, PEERS[2].peer_id, "s", allowed, 0)


def test_circuits_need_a_reservation_and_respect_every_share():
    b = book(max_circuits=4, max_circuits_per_peer=2, max_circuits_per_source=3)
    target, other = PEERS[0].peer_id, PEERS[1].peer_id
    refused(Refusal.PEER_NOT_RESERVED, b.open_circuit, b"0" * 16, PEERS[2].peer_id, "a", target, 0)
    refused(Refusal.PEER_NOT_RESERVED, b.open_circuit, b"0" * 16, PEERS[2].peer_id, "a", "not-a-peer-id", 0)
    b.reserve(target, "t", proof(PEERS[0]), T, 0)
    b.reserve(other, "t", proof(PEERS[1]), T, 0)
    refused(Refusal.CIRCUIT_SELF, b.open_circuit, b"0" * 16, target, "a", target, 0)
    b.open_circuit(b"1" * 16, PEERS[2].peer_id, "a", target, 0)
    b.open_circuit(b"2" * 16, PEERS[3].peer_id, "a", target, 0)
    refused(Refusal.CIRCUIT_LIMIT, b.open_circuit, b"3" * 16, PEERS[4].peer_id, "b", target, 0)
    b.open_circuit(b"3" * 16, PEERS[4].peer_id, "a", other, 0)
    refused(Refusal.SOURCE_LIMIT, b.open_circuit, b"4" * 16, PEERS[5].peer_id, "a", other, 0)
    b.open_circuit(b"4" * 16, PEERS[5].peer_id, "b", other, 0)
    b.reserve(PEERS[6].peer_id, "t", proof(PEERS[6]), T, 0)
    refused(Refusal.RELAY_FULL, b.open_circuit, b"5" * 16, PEERS[5].peer_id, "c", PEERS[6].peer_id, 0)
    b.close_circuit(b"1" * 16)
    b.open_circuit(b"5" * 16, PEERS[5].peer_id, "c", PEERS[6].peer_id, 0)
    assert b.refusals == {Refusal.PEER_NOT_RESERVED: 2, Refusal.CIRCUIT_SELF: 1, Refusal.CIRCUIT_LIMIT: 1,
                          Refusal.SOURCE_LIMIT: 1, Refusal.RELAY_FULL: 1}


def test_only_the_target_answers_a_circuit_and_a_drain_refuses_everything_new():
    b = book()
    b.reserve(PEERS[0].peer_id, "t", proof(PEERS[0]), T, 0)
    circuit = b.open_circuit(b"1" * 16, PEERS[1].peer_id, "a", PEERS[0].peer_id, 0)
    assert b.answer(b"1" * 16, PEERS[0].peer_id) == circuit
    refused(Refusal.CIRCUIT_UNKNOWN, b.answer, b"1" * 16, PEERS[2].peer_id)
    refused(Refusal.CIRCUIT_UNKNOWN, b.answer, b"2" * 16, PEERS[0].peer_id)
    b.draining = True
    refused(Refusal.RELAY_DRAINING, b.reserve, PEERS[3].peer_id, "s", proof(PEERS[3]), T, 0)
    refused(Refusal.RELAY_DRAINING, b.open_circuit, b"3" * 16, PEERS[1].peer_id, "a", PEERS[0].peer_id, 0)
