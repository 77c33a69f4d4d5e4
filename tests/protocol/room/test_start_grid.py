"""The project's start-grid byte layout, frozen by vectors (docs/rooms.md)."""

import hashlib

import pytest

from protocol.encoding.dagcbor import signing_digest as context_digest
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.room.start_grid import (
    base_order,
    build_commit,
    build_reveal,
    commitment,
    grid_context,
    grid_seed,
    slot_for,
    verify_grid_proof,
)
from tests.coded import raises_coded

PEERS = [Identity(bytes([i]) * 32) for i in (1, 2, 3)]
NONCES = {p.peer_id: bytes([i]) * 32 for i, p in enumerate(PEERS, start=10)}
CONTEXT = grid_context("3b2f0b6e-6f37-4a86-9a55-2c8d2d5e4d31", [p.peer_id for p in PEERS], ["aa" * 32], 1)


def test_frozen_vectors():
    digest = context_digest(CONTEXT)
    assert digest.hex() == FROZEN["context"]
    first = PEERS[0].peer_id
    assert commitment(digest, first, NONCES[first]).hex() == FROZEN["commitment"]
    seed = grid_seed(digest, NONCES)
    assert seed.hex() == FROZEN["seed"]
    assert base_order(seed, list(NONCES)) == [PEERS[i].peer_id for i in FROZEN["order"]]


def test_layout_matches_its_description():
    digest = context_digest(CONTEXT)
    first = PEERS[0].peer_id
    expected = hashlib.sha256(b"open4wd-node-grid-commit-v1\x00" + digest + first.encode() + b"\x00" + NONCES[first]).digest()
    assert commitment(digest, first, NONCES[first]) == expected


def test_slots_rotate_by_round():
    seed = grid_seed(context_digest(CONTEXT), NONCES)
    roster = list(NONCES)
    for r in range(4):
        slots = sorted(slot_for(seed, roster, p, r) for p in roster)
        assert slots == [0, 1, 2]
    p = roster[0]
    assert slot_for(seed, roster, p, 1) == (slot_for(seed, roster, p, 0) + 1) % 3


def test_proof_checks():
    digest = context_digest(CONTEXT)
    commits = [build_commit(p, digest, NONCES[p.peer_id], 1) for p in PEERS]
    reveals = [build_reveal(p, digest, NONCES[p.peer_id], 2) for p in PEERS]
    assert verify_grid_proof(CONTEXT, commits, reveals) == (digest, grid_seed(digest, NONCES))
    lying = build_reveal(PEERS[0], digest, b"\x99" * 32, 2)
    with pytest.raises(ProtocolError) as info:
        verify_grid_proof(CONTEXT, commits, [lying] + reveals[1:])
    assert info.value.code == "grid-invalid"
    with raises_coded(ProtocolError, "grid-invalid"):
        verify_grid_proof(CONTEXT, commits[:2], reveals[:2])
    other = grid_context("3b2f0b6e-6f37-4a86-9a55-2c8d2d5e4d31", [p.peer_id for p in PEERS], ["bb" * 32], 1)
    with raises_coded(ProtocolError, "grid-invalid"):
        verify_grid_proof(other, commits, reveals)


FROZEN = {
    "context": "f7a01a28ae0f205a70264bb4e5369acb9ceb0b2dc042598709745846742256ba",
    "commitment": "5e1d004506c9fbc4f0e07a66e2416eafc4be658af6829d25ab360306fb89dd71",
    "seed": "ed276eb85ee749b3bb0fce2ef5a4ecc7ea8e4ffa035f7182123d8b9829e3f99d",
    "order": [1, 2, 0],
}
