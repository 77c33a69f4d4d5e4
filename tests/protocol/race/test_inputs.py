"""Input admission: window, event rules, signatures, race keys, equivocation, hostile bytes."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.identity.keys import race_id
from protocol.race.keys import announce
from dataclasses import fields

from protocol.race.messages import (
    Candidate, InputRecord, RaceAnchorProposal, RaceAnchorSignature, RaceRelay, RaceChecksum, RaceInput, RaceInputProbe,
    InputSpan, RaceInputs, RaceKey, RaceLeave, RaceOffer, RaceProbe, RaceRejoin, RaceResume, RaceSnapshot,
    RaceSyncRequest, Want,
)
from protocol.race.recovery import LINK_GRACE_MS
from protocol.room.messages import Leave
from protocol.encoding.wire import decode_message, encode_message
from tests.protocol.race.harness import (
    MATCH_ID, InputChain, InputsDropped, Mesh, Misbehaviour, SessionEnded, inputs_message, signed_input,
)

RACE = race_id(MATCH_ID, 0)


def signed(identity, frame, events, race=RACE):
    return signed_input(identity, race, frame, events)


def one(entry, ack=-1):
    """A ``race-inputs`` carrying the single input ``entry``."""
    return inputs_message(entry, ack=ack)


def pair(streams_inputs=True):
    """Two sessions that know each other's keys, at frame 0, nothing delivered yet; ``streams_inputs``:
    every input's signature is checked as it arrives (otherwise a run at a time, test_chains.py)."""
    mesh = Mesh(2, max_delay_ms=0, streams_inputs=streams_inputs)
    mesh.run(16)
    a, b = mesh.peers
    return mesh, mesh.ids[1], mesh.sessions[a], b


def codes(actions):
    return [a.code for a in actions if isinstance(a, Misbehaviour)]


def test_inputs_outside_the_window_or_of_a_lost_peer_are_dropped_without_blame():
    mesh, sender, session, peer = pair()
    now = session.current_frame
    actions = session.receive(peer, one(signed(sender, now + 25, [])), 0)  # this node is the one behind
    assert codes(actions) == [] and actions == [InputsDropped(peer, "race-input-ahead", (now + 25,))]
    assert codes(session.receive(peer, one(signed(sender, now + 24, [])), 0)) == []
    # a race-inputs may carry inputs already held (redundancy): not a drop, only counted
    held = session.stats.redundant_inputs
    assert session.receive(peer, one(signed(sender, now + 24, [])), 0) == []
    assert session.stats.redundant_inputs == held + 1
    # a lost peer's inputs are set aside without blame (not acknowledged: re-sent once it is back)
    session.peer_lost(peer, 0)
    session.tick(LINK_GRACE_MS)  # no new link within the grace: lost
    actions = session.receive(peer, one(signed(sender, now + 5, [])), 0)
    assert codes(actions) == [] and InputsDropped(peer, "race-input-not-active", (now + 5,)) in actions
    assert session.stats.drops == {"race-input-ahead": 1, "race-input-not-active": 1}


def test_event_rules_have_their_codes():
    """A span's runs name their skills as a bit mask (each with its skill's Hold flag, each once), so of
    the event rules a span can break only these; a relayed input's events can break every one."""
    _, sender, session, peer = pair()
    chips = session.setup.skills[peer]  # slam, stabilize, weapon
    assert chips == {"slam", "stabilize", "weapon"}
    for frame, (code, mask) in enumerate({
        "race-input-too-many-events": 0b11111, "race-input-skill-not-in-chip": 0b1, "race-input-invalid": 256,
    }.items(), start=1):
        span = InputSpan("", frame, bytes(32), [(1, mask)], bytes(64))
        assert codes(session.receive(peer, RaceInputs(-1, [span], []), 0)) == [code]
    cases = {
        "race-input-too-many-events": [
            ["slam", False], ["stabilize", True], ["weapon", True], ["boost", False], ["brake", False],
        ],
        "race-input-duplicate-skill": [["weapon", True], ["weapon", True]],
        "race-input-hold-mismatch": [["slam", True]],
        "race-input-skill-not-in-chip": [["boost", False]],
        "race-input-invalid": [["warp", False]],
    }
    third = Mesh(3, max_delay_ms=0, streams_inputs=True)
    third.run(16)
    a, b, c = third.peers
    for frame, (code, events) in enumerate(cases.items(), start=1):
        record = InputRecord(c, frame, events, bytes(32), b"\x00" * 64)
        assert codes(third.sessions[a].receive(b, RaceRelay([record]), 0)) == [code]


def test_malformed_spans_and_wants_are_refused():
    _, sender, session, peer = pair()
    good = signed(sender, 3, [("weapon", True)])
    cases = {
        "race-inputs-invalid": [
            RaceInputs(-1, [InputSpan("", 3, good.prev, [(1, 0b10000000)], good.signature + b"x")], []),  # 65 bytes
            RaceInputs(-1, [InputSpan("", 3, good.prev[:31], [(1, 0b10000000)], good.signature)], []),
            RaceInputs(-1, [InputSpan("", 3, good.prev, [(0, 0b10000000)], b"")], []),
            RaceInputs(-1, [InputSpan("", -3, good.prev, [(1, 0b10000000)], good.signature)], []),
            RaceInputs(-1, [InputSpan("zStranger", 3, good.prev, [(1, 0)], good.signature)], []),  # not a racer
            RaceInputs(-1, [InputSpan(peer, 3, good.prev, [(1, 0)], good.signature)], []),  # the sender by name
        ],
        "race-inputs-too-many": [RaceInputs(-1, [InputSpan("", 3, good.prev, [(34, 0)], bytes(64 * 34))], [])],
    }
    for code, messages in cases.items():
        for msg in messages:
            assert codes(session.receive(peer, msg, 0)) == [code], msg
    twice = RaceInputs(-1, [InputSpan("", 3, good.prev, [(1, 0)], bytes(64))] * 2, [])
    assert codes(session.receive(peer, twice, 0)) == ["race-inputs-invalid"]
    for want in ([Want(peer, 1)], [Want("zStranger", 1)], [Want(session.me, 1)] * 2):
        assert codes(session.receive(peer, RaceInputs(-1, [], want), 0)) == ["race-inputs-invalid"]
    assert session.receive(peer, one(good), 0) == [] and session.stats.drops == {
        "race-inputs-invalid": 10, "race-inputs-too-many": 1}


def test_forged_signature_and_wrong_race_key():
    _, sender, session, peer = pair()
    good = signed(sender, 3, [("weapon", True)])
    forged = RaceInput(3, good.events, good.prev, bytes(64))
    assert codes(session.receive(peer, one(forged), 0)) == ["race-input-bad-signature"]
    other_round = signed(sender, 3, [("weapon", True)], race=race_id(MATCH_ID, 1))
    assert codes(session.receive(peer, one(other_round), 0)) == ["race-input-bad-signature"]
    wrong_frame = RaceInput(4, good.events, good.prev, good.signature)
    assert codes(session.receive(peer, one(wrong_frame), 0)) == ["race-input-bad-signature"]
    assert session.receive(peer, one(good), 0) == []
    # in one span, an input whose own signature fails does not stop the others from being taken
    chain = InputChain(sender, RACE)
    run = [chain.input(f, [("weapon", True)]) for f in (4, 5, 6)]
    run[1] = RaceInput(5, run[1].events, run[1].prev, bytes(64))
    assert codes(session.receive(peer, inputs_message(*run), 0)) == ["race-input-bad-signature"]
    assert session.receive(peer, one(run[2]), 0) == []  # held: a redundant copy
    assert session.receive(peer, one(run[0]), 0) == []


def test_race_keys_are_bound_to_the_master_key():
    mesh, sender, session, peer = pair()
    stranger = mesh.ids[0]  # signs an announce of someone else's key
    theirs = announce(sender, RACE)
    assert codes(session.receive(peer, RaceKey(RACE, theirs.publicKey, stranger.sign(b"x" * 32)), 0)) == ["race-key-invalid"]
    conflicting = announce(stranger, RACE)
    forged_binding = RaceKey(RACE, conflicting.publicKey, theirs.signature)
    assert codes(session.receive(peer, forged_binding, 0)) == ["race-key-invalid"]
    assert session.receive(peer, theirs, 0) == []  # an identical repeat is fine
    assert codes(session.receive(peer, RaceKey(RACE, b"\x01" * 31, theirs.signature), 0)) == ["race-key-invalid"]


@pytest.mark.parametrize("streams_inputs", [True, False])
def test_equivocation_fails_closed_and_an_identical_repeat_is_ignored(streams_inputs):
    """Whether the first input was checked on arrival or still waits for its run's check (then it is
    checked on its own first), two valid signed values for one frame end the race."""
    _, sender, session, peer = pair(streams_inputs)
    first = signed(sender, 2, [("weapon", True)])
    assert session.receive(peer, one(first), 0) == []
    assert session.receive(peer, one(first), 0) == []
    second = signed(sender, 2, [("stabilize", True)])
    actions = session.receive(peer, one(second), 0)
    ended = [a for a in actions if isinstance(a, SessionEnded)]
    assert ended and ended[0].reason == "equivocation" and session.ended == "equivocation"
    assert ended[0].evidence["first"] == first and ended[0].evidence["second"] == second
    assert session.advance_frame(0).waiting == "ended"


def test_a_pending_forgery_gives_way_to_the_peer_s_own_signed_input():
    """An input taken from the peer's link, its check still to come, whose signature is not the peer's:
    a different input of that frame which is signed replaces it (no equivocation: the peer never signed
    the first), and the forgery is refused."""
    _, sender, session, peer = pair(streams_inputs=False)
    genuine = signed(sender, 2, [("weapon", True)])
    forged = RaceInput(2, [["stabilize", True]], genuine.prev, genuine.signature)
    assert session.receive(peer, one(forged), 0) == []  # taken, to be checked with its run
    assert codes(session.receive(peer, one(genuine), 0)) == ["race-input-bad-signature"]
    assert session.ended is None and session.stats.drops == {"race-input-bad-signature": 1}
    assert session.receive(peer, one(genuine), 0) == []  # now held: a redundant copy


def test_messages_from_strangers_and_of_other_planes():
    _, sender, session, peer = pair()
    assert session.receive("zNotOnTheRoster", one(signed(sender, 1, [])), 0) == []
    assert codes(session.receive(peer, Leave("voluntary"), 0)) == ["race-unexpected-message"]


INTS = st.integers(-3, 200) | st.integers(-(2**63), 2**64 - 1)
EVENT = st.lists(st.one_of(st.sampled_from(["boost", "weapon", "slam", "swerve_left"]), st.booleans(), INTS),
                 max_size=3)
FIELDS = {
    int: INTS, bytes: st.binary(max_size=70), str: st.text(max_size=12), bool: st.booleans(),
    "events": st.lists(EVENT, max_size=6),
}
SPANS = st.lists(st.builds(InputSpan, owner=st.sampled_from(["", "zNobody"]) | st.text(max_size=50), frame=INTS,
                           prev=st.sampled_from([b"", bytes(32)]) | st.binary(max_size=40),
                           runs=st.lists(st.tuples(INTS, INTS), max_size=4), signatures=st.binary(max_size=260)),
                 max_size=3)
WANTS = st.lists(st.builds(Want, peer=st.text(max_size=50), ack=INTS), max_size=3)
MESSAGES = [RaceInputs, RaceInputProbe, RaceChecksum, RaceKey, RaceLeave, RaceRejoin, RaceProbe, RaceOffer, RaceSyncRequest,
            RaceSnapshot, RaceResume, RaceRelay, RaceAnchorProposal, RaceAnchorSignature]
RECORDS = st.lists(st.builds(InputRecord, peer=st.text(max_size=50), frame=INTS, events=FIELDS["events"],
                             signature=st.binary(max_size=70)), max_size=2)
SPECIAL = {
    "events": FIELDS["events"],
    "inputs": RECORDS,
    "candidates": st.lists(st.builds(Candidate, frame=INTS, hash=st.binary(max_size=40)), max_size=3),
    "event": st.dictionaries(st.text(max_size=12), st.one_of(INTS, st.text(max_size=8), st.binary(max_size=8)), max_size=12),
}


def _message(cls):
    hints = {f.name: f.type for f in fields(cls)}
    kwargs = {}
    for name, hint in hints.items():
        if cls is RaceInputs and name in ("spans", "want"):
            kwargs[name] = SPANS if name == "spans" else WANTS
        elif name in SPECIAL:
            kwargs[name] = SPECIAL[name]
        else:
            kwargs[name] = FIELDS[{"int": int, "bytes": bytes, "str": str, "bool": bool}[hint]]
    return st.builds(cls, **kwargs)


@settings(max_examples=400, deadline=None)
@given(msg=st.one_of([_message(c) for c in MESSAGES]), flip=st.integers(0, 400), raw=st.binary(max_size=120))
def test_arbitrary_messages_and_bytes_never_raise_anything_but_coded_errors(msg, flip, raw):
    _, _, session, peer = pair()
    body = bytearray(encode_message(msg))
    if flip < len(body):
        body[flip] ^= 0x5A
    for candidate in (bytes(body), raw):
        try:
            decoded = decode_message(candidate)
        except ProtocolError:
            continue
        session.receive(peer, decoded, 0)  # must not raise
    session.receive(peer, msg, 0)
    session.advance_frame(0)


def test_prediction_repeats_hold_ticks_of_the_newest_earlier_real_input_only():
    from protocol.race.inputs import PeerInputs

    buffer = PeerInputs()
    buffer.add(3, (("boost", False), ("swerve_left", True)), RaceInput(3, [], bytes(32), bytes(64)), bytes(32))
    assert buffer.predict(3) == ()  # nothing real before frame 3
    assert buffer.predict(5) == (("swerve_left", True),)  # the Event skill is never repeated
    buffer.add(7, (("stabilize", True),), RaceInput(7, [], bytes(32), bytes(64)), bytes(32))  # later, out of order
    assert buffer.predict(5) == (("swerve_left", True),)  # does not change an earlier frame's prediction
    assert buffer.predict(9) == (("stabilize", True),)
    buffer.prune(8)  # pruned inputs still serve as the base of later predictions
    assert buffer.predict(12) == (("stabilize", True),) and not buffer.real
