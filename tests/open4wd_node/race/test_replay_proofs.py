"""Replay checks a log's inputs by the racers' rule: a run of a peer's inputs is proven by one signature
that reaches it through the ``prev`` chain (docs/race.md, "Chained inputs")."""

import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from open4wd_node.race.replay import _InputProofs
from open4wd_node.runtime.errors import UserError
from protocol.identity.keys import race_id
from protocol.race.keys import RaceKeyBook, announce, verify_race_signature
from protocol.race.signing import NO_PREVIOUS_INPUT, input_digest
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


class EveryInputChecked:
    """The rule checked one input at a time, every signature verified: what the run-at-a-time check must
    agree with, input for input."""

    def __init__(self, keys: RaceKeyBook, race: str) -> None:
        self.keys, self.race = keys, race
        self._last: dict[str, tuple[int, bytes]] = {}
        self._unproven: dict[str, int] = {}

    def add(self, frame, peer, events, prev, signature) -> None:
        if not isinstance(prev, bytes) or len(prev) != 32:
            raise UserError("replay-signature-invalid", f"frame {frame}")
        digest = input_digest(self.race, frame, tuple((skill, hold) for skill, hold in events), prev)
        first = self._unproven.get(peer)
        if first is not None and self._last.get(peer) != (frame - 1, prev):
            raise UserError("replay-signature-invalid", f"frame {first}")
        self._last[peer] = (frame, digest)
        key = self.keys.key(self.race, peer)
        if key is not None and verify_race_signature(key, digest, signature):
            self._unproven.pop(peer, None)
        else:
            self._unproven.setdefault(peer, frame)

    def fail_unproven(self) -> None:
        if self._unproven:
            raise UserError("replay-signature-invalid", f"frame {min(self._unproven.values())}")

    @property
    def open_tail(self) -> int:
        return len(self._unproven)


def outcome(call, *args) -> str | None:
    """The frame a refusal of ``call(*args)`` names (None: no refusal)."""
    try:
        call(*args)
    except UserError as refused:
        assert refused.code == "replay-signature-invalid"
        return re.search(r"frame \d+", refused.message)[0]
    return None


STEP = st.tuples(st.integers(0, 1), st.sampled_from(["good", "garbage", "unchained", "altered"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=24), st.integers(0, 24))
def test_checking_a_run_at_a_time_refuses_and_accepts_exactly_what_checking_every_input_does(steps, key_from):
    ids = identities(3)
    keys = RaceKeyBook([i.peer_id for i in ids])
    keys.add(ids[1].peer_id, announce(ids[1], RACE))
    chains = {1: InputChain(ids[1], RACE), 2: InputChain(ids[2], RACE)}
    runs, every = _InputProofs(keys, RACE), EveryInputChecked(keys, RACE)
    for frame, (who, kind) in enumerate(steps):
        if frame == key_from:  # the second peer's race key logged only now: what came before it stays unproven
            keys.add(ids[2].peer_id, announce(ids[2], RACE))
        peer, signed = ids[1 + who].peer_id, chains[1 + who].input(frame, [("weapon", True)] if frame % 3 else [])
        events, prev, signature = signed.events, signed.prev, signed.signature
        if kind == "garbage":
            signature = GARBAGE
        elif kind == "unchained":
            prev = NO_PREVIOUS_INPUT
        elif kind == "altered":
            events = [] if events else [("weapon", True)]
        expected = outcome(every.add, frame, peer, events, prev, signature)
        assert outcome(runs.add, frame, peer, events, prev, signature) == expected
        if expected is not None:
            return
    assert runs.open_tail == every.open_tail
    assert outcome(runs.fail_unproven) == outcome(every.fail_unproven)


def test_a_chained_run_costs_one_verification(monkeypatch):
    proofs, chain, peer = proofs_and_chain()
    checked = []
    counted = lambda *args: checked.append(args) or verify_race_signature(*args)  # noqa: E731
    monkeypatch.setattr(sys.modules[_InputProofs.__module__], "verify_race_signature", counted)
    for frame in range(300):
        add(proofs, peer, chain.input(frame))
    proofs.fail_unproven()
    assert len(checked) == 1 and proofs.open_tail == 0
