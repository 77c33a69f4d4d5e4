"""Whose fault a refusal is, at the session's edges: what a peer sent and broke a rule becomes that peer's
``Misbehaviour``; a misuse by this node's own shell, or a bug, raises ``LocalError`` and is never blamed
on a peer."""

import pytest

from protocol.transaction import FaultOutcome, MachineFault
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.keys import Identity, race_id
from protocol.race.keys import RaceKeyBook, signed_leave
from protocol.race.messages import LeaveReason, RaceLeave
from protocol.race.session import RaceSession

from tests.protocol.race.harness import (
    MATCH_ID, CounterWorld, Misbehaviour, Send, SessionEnded, identities, inputs_message, make_setup, signed_input,
)
from tests.coded import raises_coded

RACE = race_id(MATCH_ID, 0)


class FaultyKeyBook(RaceKeyBook):
    """A key book whose lookup fails with ``error`` once armed: a collaborator's bug, hit inside a handler."""

    def __init__(self, roster, error):
        super().__init__(roster)
        self.error = error
        self.armed = False

    def key(self, race, peer):
        if self.armed:
            raise self.error
        return super().key(race, peer)


def two(keys=None):
    ids = identities(2)
    setup = make_setup(ids)
    book = keys(setup.roster) if keys else RaceKeyBook(setup.roster)
    session = RaceSession(setup, ids[0], CounterWorld(2), book)
    session.start(0)
    return ids, session, book


def signed(identity, frame, events=()):
    entry = signed_input(identity, RACE, frame, events)
    return inputs_message(entry)


def test_a_local_error_inside_a_handler_propagates_and_is_not_blamed_on_the_peer():
    bug = LocalError("race-test-bug", "a lookup failed")
    ids, session, book = two(lambda roster: FaultyKeyBook(roster, bug))
    book.armed = True
    with raises_coded(MachineFault, "internal-error") as err:  # a bug breaks the session: it ends, nobody is blamed
        session.receive(ids[1].peer_id, signed(ids[1], 0), 0)
    assert err.value.__cause__ is bug and err.value.outcome is FaultOutcome.BROKEN
    assert not any(isinstance(a, Misbehaviour) for a in err.value.actions) and session.ended == "internal-error"


def test_the_same_place_raising_a_peer_error_is_that_peer_s_misbehaviour():
    ids, session, book = two(lambda roster: FaultyKeyBook(roster, ProtocolError("race-test-peer", "bad")))
    book.armed = True
    assert session.receive(ids[1].peer_id, signed(ids[1], 0), 0) == [Misbehaviour(ids[1].peer_id, "race-test-peer")]


def test_an_error_that_is_no_coded_error_is_not_swallowed_either():
    ids, session, book = two(lambda roster: FaultyKeyBook(roster, RuntimeError("boom")))
    book.armed = True
    with raises_coded(MachineFault, "internal-error") as err:
        session.receive(ids[1].peer_id, signed(ids[1], 0), 0)
    assert isinstance(err.value.__cause__, RuntimeError)


def test_a_peer_s_bad_leave_is_misbehaviour_but_this_node_s_own_bad_leave_is_a_local_error():
    ids, session, _ = two()
    peer = ids[1].peer_id
    assert session.receive(peer, RaceLeave("sideways", bytes(64)), 0) == [Misbehaviour(peer, "race-leave-invalid")]
    with pytest.raises(LocalError) as err:
        session.leave("sideways", 0)
    assert err.value.code == "race-leave-invalid" and not isinstance(err.value, PeerError)
    assert session.ended is None
    actions = session.leave(LeaveReason.VOLUNTARY, 0)
    own = signed_leave(ids[0].race_key(RACE), RACE, LeaveReason.VOLUNTARY)
    assert actions[0] == Send(peer, own) and isinstance(actions[1], SessionEnded)
    assert session.ended == "left"


def test_this_node_s_own_input_breaking_the_rules_is_a_local_error_with_the_rule_s_code():
    ids, session, _ = two()
    foreign = next(s for s in ("slam", "jump", "brake", "boost") if s not in session.setup.skills[session.me])
    with pytest.raises(LocalError) as err:
        session.add_local_input([(foreign, False)], 0)
    assert err.value.code == "race-input-skill-not-in-chip" and not isinstance(err.value, PeerError)
    with pytest.raises(LocalError) as err:
        session.add_local_input([("weapon", False)], 0)
    assert err.value.code == "race-input-hold-mismatch"
    assert session.needs_local_input  # nothing was signed


def test_asking_about_a_peer_off_the_roster_or_racing_off_it_are_local_errors():
    ids, session, _ = two()
    with pytest.raises(LocalError) as err:
        session.status("zNotOnTheRoster")
    assert err.value.code == "race-unknown-peer"
    outsider = Identity(bytes([99]) * 32)
    setup = make_setup(ids)
    with pytest.raises(LocalError) as err:
        RaceSession(setup, outsider, CounterWorld(2), RaceKeyBook(setup.roster))
    assert err.value.code == "race-setup-invalid"
