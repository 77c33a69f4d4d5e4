"""Replay checks a log's inputs by the racers' rule: a run of a peer's inputs is proven by one signature
that reaches it through the ``prev`` chain (docs/race.md, "Chained inputs")."""

import pytest

from open4wd_node.race.replay import _InputProofs
from open4wd_node.runtime.errors import UserError
from protocol.identity.keys import race_id
from protocol.race.keys import RaceKeyBook, announce
from protocol.race.signing import NO_PREVIOUS_INPUT
from tests.protocol.race.harness import MATCH_ID, InputChain, identities
from tests.coded import raises_coded

RACE = race_id(MATCH_ID, 0)
GARBAGE = bytes(64)


def proofs_and_chain():
    ids = identities(2)
    keys = RaceKeyBook([i.peer_id for i in ids])
    for identity in ids:
        keys.add(identity.peer_id, announce(identity, RACE))
    return _InputProofs(keys, RACE), InputChain(ids[1], RACE), ids[1].peer_id


def add(proofs, peer, signed, signature=None):
    proofs.add(signed.frame, peer, signed.events, signed.prev, signed.signature if signature is None else signature)


def test_a_run_is_proven_by_the_signature_that_closes_it():
    proofs, chain, peer = proofs_and_chain()
    for frame in range(6):  # only the last input's own signature verifies
        add(proofs, peer, chain.input(frame, [("weapon", True)] if frame % 2 else []), None if frame == 5 else GARBAGE)
    assert proofs.open_tail == 0
    proofs.fail_unproven()


def test_a_run_no_signature_reaches_fails_at_the_round_end_or_counts_as_an_open_tail():
    proofs, chain, peer = proofs_and_chain()
    add(proofs, peer, chain.input(0))
    add(proofs, peer, chain.input(1), GARBAGE)
    add(proofs, peer, chain.input(2), GARBAGE)
    assert proofs.open_tail == 1  # a log cut here: reported, not refused
    with pytest.raises(UserError) as info:
        proofs.fail_unproven()
    assert info.value.code == "replay-signature-invalid" and "frame 1" in info.value.message


def test_a_broken_chain_fails_the_unproven_run_below_it_at_once():
    proofs, chain, peer = proofs_and_chain()
    add(proofs, peer, chain.input(0), GARBAGE)
    later = chain.input(1)
    with raises_coded(UserError, "replay-signature-invalid") as info:  # a valid input, but chained to something else than frame 0
        proofs.add(1, peer, later.events, NO_PREVIOUS_INPUT, later.signature)
    assert "frame 0" in info.value.message


def test_an_altered_input_is_caught_even_under_a_valid_later_signature():
    proofs, chain, peer = proofs_and_chain()
    first, second = chain.input(0, [("weapon", True)]), chain.input(1)
    proofs.add(0, peer, [], first.prev, first.signature)  # its events rewritten: neither its signature nor the chain holds
    with raises_coded(UserError, "replay-signature-invalid") as info:
        add(proofs, peer, second)
    assert "frame 0" in info.value.message


def test_a_prev_that_is_not_a_digest_is_refused():
    proofs, chain, peer = proofs_and_chain()
    signed = chain.input(0)
    with raises_coded(UserError, "replay-signature-invalid"):
        proofs.add(0, peer, signed.events, b"short", signed.signature)
