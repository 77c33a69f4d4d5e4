"""A room no member can stall (docs/rooms.md, "A room no member can stall"; protocol/room/stalls.py): a
ReadySet that some participant refuses or does not answer is judged, the Ready of whoever it failed on is
withdrawn with a coded decision every member sees, a member it keeps failing on is removed, and the honest
members, whose Ready survives, start. Sans-IO on the in-memory star, on a virtual clock."""

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.actions import Misbehaviour
from protocol.identity.keys import Identity
from protocol.room.events import RoomDecided
from protocol.room.messages import Culprit, ReadySetAck, ReadySetRefuse, ReadySetRequest, RoomDecision
from protocol.room.stalls import (
    ANSWER_TIMEOUT_MS, FETCH_WAIT_MS, READY_AGAIN_MS, STRIKE_LIMIT, STRIKE_WINDOW_MS, judge,
)
from protocol.room.states import StallDecision
from tests.protocol.room.harness import LOADOUT, FakeAssets, Net
from tests.protocol.room.harness import fetching_room as room_fetching_a_car

A, B, C, D = (Identity(bytes([i]) * 32) for i in range(1, 5))
BAD = [dict(LOADOUT, motor="ipfs-unusable-motor")]  # every honest node refuses this car


class Blind(FakeAssets):
    """A node whose own checks pass every car (a hostile node's, or one with another asset policy)."""

    def check_rotation(self, peer, rotation):
        self.rotation_refs(rotation)


def decisions(net, who=None):
    return [(d["participant"], d["decision"], d["strikes"], d["removed"]) for d in net.of(who, "room-decision")]


def removed(net, peer):
    return (peer, "room-stalled") in net.closed


def start(net):
    """Let the countdown run out: the match starts for everyone still in the locked roster."""
    net.advance(5_000)
    return sorted(net.started)


def test_a_car_the_others_refuse_is_withdrawn_every_time_and_its_member_removed_at_the_third():
    """B declares Ready with a car A and C refuse, again and again, as a hostile node would. Each time its
    Ready is withdrawn (declaration-refused, asset-version-unusable, by A and C), a strike; at the third it
    is removed and refused at the door; A and C, Ready throughout, start at once."""
    net = Net(A, min_players=2)
    b = net.add_member(B, rotation=BAD, assets=Blind(), auto_ready=False)
    net.add_member(C)
    assert net.host.phase == "collecting"  # B is not Ready yet
    tries = 0
    while not removed(net, B.peer_id) and tries < 10:
        net.route(b.declare_ready(net.now), B.peer_id)
        tries += 1
        net.advance(1_000)
    assert tries == STRIKE_LIMIT
    expected = [(B.peer_id, "declaration-refused", n, n == STRIKE_LIMIT) for n in range(1, STRIKE_LIMIT + 1)]
    for who in (None, A.peer_id, C.peer_id):  # every member sees which and why
        assert decisions(net, who) == expected
    (last,) = net.of(C.peer_id, "room-decision")[-1:]
    assert last["code"] == "asset-version-unusable" and sorted(last["by"]) == sorted([A.peer_id, C.peer_id])
    assert net.host.phase == "countdown"  # A and C were Ready all along
    assert start(net) == sorted([A.peer_id, C.peer_id])


def test_a_removed_member_is_refused_at_the_door_while_its_strikes_count():
    net = Net(A, min_players=3)
    b = net.add_member(B, rotation=BAD, assets=Blind(), auto_ready=False)
    net.add_member(C)
    for _ in range(STRIKE_LIMIT):
        net.route(b.declare_ready(net.now), B.peer_id)
    assert removed(net, B.peer_id) and net.host.phase == "collecting"
    net.add_member(B, rotation=BAD, assets=Blind(), auto_ready=False)
    assert net.closed[-1] == (B.peer_id, "join-rejected") and "stalling" in net.of(B.peer_id, "error")[-1]["message"]
    net.advance(STRIKE_WINDOW_MS)  # its strikes no longer count: it may come back (and is judged again)
    net.add_member(B, rotation=BAD, assets=Blind(), auto_ready=False)
    assert B.peer_id in net.host.members


def refuse_everything(net, refuser):
    """``refuser`` answers every ReadySet with a refusal of every other participant's car."""
    def rewrite(message):
        if isinstance(message, ReadySetAck):
            roster = sorted(p for p in net.host.participants if p != refuser)
            culprits = [Culprit(p, "asset-version-unusable", "asset-version-unusable:everything") for p in roster]
            return ReadySetRefuse(net.host.ceremony.ready_digest, "asset-version-unusable", "no", culprits)
        return message
    net.rewrite[refuser] = rewrite


def test_a_member_that_refuses_every_car_is_overruled_and_removed():
    net = Net(A, min_players=3)
    net.add_member(B)
    refuse_everything(net, D.peer_id)
    net.add_member(D)  # auto-ready: it declares again after each overruled refusal, and refuses again
    assert decisions(net) == [(D.peer_id, "refusal-overruled", n, n == STRIKE_LIMIT) for n in range(1, STRIKE_LIMIT + 1)]
    assert removed(net, D.peer_id) and net.of(D.peer_id, "ready-withdrawn")[0]["reason"] == "refusal-overruled"
    assert sorted(net.of(None, "room-decision")[0]["by"]) == sorted([A.peer_id, B.peer_id])  # who accepted
    assert not any(net.host.members[p].declaration is None for p in (A.peer_id, B.peer_id))
    net.add_member(C)
    assert start(net) == sorted([A.peer_id, B.peer_id, C.peer_id])


def test_a_member_that_answers_nothing_costs_one_answer_timeout_a_try_and_is_removed():
    net = Net(A, min_players=3)
    net.add_member(B)
    net.deaf[D.peer_id] = (ReadySetRequest,)  # never acks nor refuses; re-declares whenever withdrawn
    net.add_member(D)
    begun = net.now
    while not removed(net, D.peer_id) and net.now - begun < 10 * ANSWER_TIMEOUT_MS:
        assert net.host.phase == "verifying"
        net.advance(1_000)
    assert net.now - begun <= STRIKE_LIMIT * ANSWER_TIMEOUT_MS
    assert decisions(net) == [(D.peer_id, "no-answer", n, n == STRIKE_LIMIT) for n in range(1, STRIKE_LIMIT + 1)]
    assert net.of(None, "room-decision")[0]["code"] == "ready-set-timeout"
    net.add_member(C)
    assert start(net) == sorted([A.peer_id, B.peer_id, C.peer_id])


def test_a_member_not_ready_again_in_time_after_a_strike_is_removed():
    """B's car is refused; its node does not declare the same car again by itself (its blocker says why),
    and its player does nothing: after ``READY_AGAIN_MS`` it is removed, and A and C start."""
    net = Net(A, min_players=2)
    b = net.add_member(B, rotation=BAD, assets=Blind())
    assert decisions(net) == [(B.peer_id, "declaration-refused", 1, False)]
    assert b.ready_blockers() == ["the room refused this node's car (asset-version-unusable); choose another car"]
    net.add_member(C)
    assert net.host.phase == "collecting"  # A and C Ready, B not
    net.advance(READY_AGAIN_MS - 1)
    assert not removed(net, B.peer_id) and net.host.next_deadline() == net.now + 1
    net.advance(1)
    assert removed(net, B.peer_id) and decisions(net)[-1] == (B.peer_id, "ready-not-renewed", 2, True)
    assert net.host.phase == "countdown" and start(net) == sorted([A.peer_id, C.peer_id])


def test_a_player_who_changes_the_refused_car_is_back_in_and_starts():
    net = Net(A, min_players=2)
    b = net.add_member(B, rotation=BAD, assets=Blind())
    assert decisions(net) == [(B.peer_id, "declaration-refused", 1, False)] and net.host.phase == "collecting"
    net.route(b.set_rotation([LOADOUT]), B.peer_id)
    net.route(b.declare_ready(net.now), B.peer_id)
    assert net.host.phase == "countdown" and start(net) == sorted([A.peer_id, B.peer_id])


def test_a_tie_goes_the_host_s_way_and_the_host_is_never_removed():
    """Two players: B refuses the host's car, the host accepts it: B is overruled. Then the host declares
    a car B refuses and the host itself does not: the host's seat decides again, B is overruled; a host
    whose own car the others refuse is never removed, its strikes counted."""
    net = Net(A, min_players=2)
    refuse_everything(net, B.peer_id)
    net.add_member(B)
    assert decisions(net) == [(B.peer_id, "refusal-overruled", n, n == STRIKE_LIMIT) for n in range(1, STRIKE_LIMIT + 1)]
    host_bad = Net(A, min_players=3)
    host_bad.host_member.rotation = None
    host_bad.route(host_bad.host_member.set_rotation(BAD), A.peer_id)
    host_bad.add_member(B)
    host_bad.add_member(C)
    host_bad.route(host_bad.host_member.declare_ready(host_bad.now), A.peer_id)
    assert decisions(host_bad) == [(A.peer_id, "declaration-refused", 1, False)]
    for _ in range(STRIKE_LIMIT):
        host_bad.route(host_bad.host_member.declare_ready(host_bad.now), A.peer_id)
    assert decisions(host_bad)[-1] == (A.peer_id, "declaration-refused", STRIKE_LIMIT + 1, False)
    assert A.peer_id in host_bad.host.members and host_bad.host.phase == "collecting"


def test_a_hostile_member_that_keeps_trying_for_half_an_hour_never_stalls_the_start():
    """Three players are needed; A and C are honest, B declares its refused car whenever it is not Ready
    and joins again whenever it is removed, for half an hour of virtual time, and D, honest, arrives at
    minute 20. B never costs more than ``STRIKE_LIMIT`` failed ceremonies per strike window, the room
    never waits in ``verifying`` (B is refused at once), and A, C and D start as soon as D is there."""
    net = Net(A, min_players=3)
    b = net.add_member(B, rotation=BAD, assets=Blind(), auto_ready=False)
    net.add_member(C)
    minute = 60_000
    begin = net.now
    while net.now < begin + 30 * minute and not net.started:
        if B.peer_id in net.host.members:
            if net.host.members[B.peer_id].declaration is None:
                net.route(b.declare_ready(net.now), B.peer_id)  # refused at once, every time
        else:
            b = net.add_member(B, rotation=BAD, assets=Blind(), auto_ready=False)  # refused at the door while barred
        assert net.host.phase != "verifying"
        if net.now >= begin + 20 * minute and D.peer_id not in net.members:
            net.add_member(D)
        net.advance(10_000)
    removals = net.closed.count((B.peer_id, "room-stalled"))
    assert sorted(net.started) == sorted([A.peer_id, C.peer_id, D.peer_id])
    strikes = [d for d in net.of(None, "room-decision") if d["participant"] == B.peer_id]
    windows = (net.now - begin) // STRIKE_WINDOW_MS + 1
    assert 2 <= removals <= windows and len(strikes) <= STRIKE_LIMIT * windows
    assert all(d["decision"] == "declaration-refused" for d in strikes)
    assert net.now - begin < 21 * minute  # D arrived at minute 20: the start did not wait for B


def fetching_room():
    """A and B hold only the built-in assets; C joins with a custom car whose body they must fetch."""
    return room_fetching_a_car(A, B, C, "cid-body-of-c")


def test_members_still_fetching_a_car_are_waited_for_and_ack_when_it_arrives():
    net = fetching_room()
    net.advance(3 * ANSWER_TIMEOUT_MS)  # a big car on a thin link: the answer time is extended
    assert net.host.phase == "verifying" and not decisions(net)
    for peer in (A.peer_id, B.peer_id):
        member = net.members[peer]
        member.assets.have.add("cid-body-of-c")
        net.route(member.asset_stored("cid-body-of-c", net.now), peer)
    assert net.host.phase == "countdown"


def test_a_car_whose_assets_never_arrive_is_refused_after_the_fetch_wait():
    net = fetching_room()
    while not decisions(net):
        assert net.now - 1_000_000 <= FETCH_WAIT_MS
        net.advance(1_000)
    assert decisions(net) == [(C.peer_id, "declaration-refused", 1, False)]
    assert net.of(None, "room-decision")[0]["code"] == "asset-missing"


# ---- whatever the answers: the judgement's invariants (hypothesis) -----------------------------------

ROSTER = [f"z{i}" for i in range(8)]


@st.composite
def answers(draw):
    """A roster of 2–8, its host, and each participant's answer to the ReadySet: an ack, a refusal of the
    set itself, a refusal naming some participants (anyone, itself and strangers included), or none."""
    roster = ROSTER[:draw(st.integers(2, 8))]
    host = draw(st.sampled_from(roster))
    acks, refusals = set(), {}
    for peer in roster:
        kind = draw(st.sampled_from(["ack", "set", "names", "none"]))
        if kind == "ack":
            acks.add(peer)
        elif kind != "none":
            named = draw(st.lists(st.sampled_from(ROSTER + ["stranger"]), max_size=10)) if kind == "names" else []
            refusals[peer] = ("c", "d", [Culprit(p, draw(st.sampled_from(["asset-version-unusable", "x"])), "why")
                                         for p in named])
    return roster, host, acks, refusals


@settings(max_examples=500, deadline=None)
@given(answers())
def test_every_judgement_names_participants_once_and_withdraws_an_honest_ready_only_on_a_majority(case):
    roster, host, acks, refusals = case
    verdicts = judge(roster, host, acks, refusals)
    peers = [v.peer for v in verdicts]
    assert peers == [p for p in roster if p in peers]  # each participant at most once, in roster order
    assert all(v.decision in StallDecision and v.code for v in verdicts)
    answered = acks | set(refusals)
    assert {p for p in roster if p not in answered} <= set(peers)  # silence is always judged
    for v in verdicts:
        if v.decision is StallDecision.DECLARATION_REFUSED:  # more refusers than acceptors, or a tie the host refuses
            refusers = [r for r in refusals if r != v.peer and any(c.peer == v.peer for c in refusals[r][2])]
            acceptors = [a for a in roster if a == v.peer or a in acks
                         or (a in refusals and a not in refusers)]
            assert set(v.by) == set(refusers) and (
                len(refusers) > len(acceptors) or (len(refusers) == len(acceptors) and host in refusers))
        elif v.decision is StallDecision.NO_ANSWER:
            assert v.peer not in answered
        else:
            assert v.decision is StallDecision.REFUSAL_OVERRULED and v.peer in refusals
    if not verdicts and acks != set(roster):  # it waits only when nobody acked and everyone refused the set itself
        assert not acks and set(refusals) == set(roster)
        assert all(not [c for c in culprits if c.peer in roster and c.peer != r] for r, (_, _, culprits) in refusals.items())


@settings(max_examples=300, deadline=None)
@given(st.integers(3, 8), st.data())
def test_one_member_alone_never_withdraws_the_ready_of_another(size, data):
    """In a room of three or more, whatever one member answers, every other member that acked keeps its
    Ready: a member that refuses everything is overruled, never obeyed."""
    roster = ROSTER[:size]
    hostile = data.draw(st.sampled_from(roster))
    host = data.draw(st.sampled_from([p for p in roster if p != hostile]))
    named = data.draw(st.lists(st.sampled_from(roster), max_size=8))
    refusals = {hostile: ("c", "d", [Culprit(p, "asset-version-unusable", "no") for p in named])}
    verdicts = judge(roster, host, set(roster) - {hostile}, refusals)
    assert [v.peer for v in verdicts] in ([], [hostile])
    assert verdicts or not [p for p in named if p != hostile]


TEXT = st.text(max_size=400)


@settings(max_examples=200, deadline=None)
@given(code=TEXT, detail=TEXT, culprits=st.lists(st.tuples(st.sampled_from(["A", "B", "C", "S", "x", ""]), TEXT, TEXT),
                                                  max_size=12))
def test_any_refusal_a_participant_sends_is_judged_bounded_and_never_raises(code, detail, culprits):
    """A refusal of the ReadySet with any code, detail and culprits (strangers, the spectator, the refuser
    itself, the same peer many times, texts of any length) is taken apart, bounded and judged: every
    decision is about a participant, its texts are bounded, and no honest member is withdrawn."""
    names = {"A": A.peer_id, "B": B.peer_id, "C": C.peer_id, "S": D.peer_id, "x": "zUnknown", "": ""}
    net = Net(A, min_players=3)
    net.add_member(B)
    net.add_member(D, role="spectator")
    refuse = [Culprit(names[p], c, d) for p, c, d in culprits]
    net.rewrite[C.peer_id] = lambda m: (ReadySetRefuse(m.readySetDigest if isinstance(m, ReadySetRefuse)
                                                       else net.host.ceremony.ready_digest, code, detail, refuse)
                                        if isinstance(m, (ReadySetAck, ReadySetRefuse)) else m)
    net.add_member(C)
    made = net.of(None, "room-decision")
    assert made and all(d["participant"] == C.peer_id and d["decision"] == "refusal-overruled" for d in made)
    assert all(len(d["code"]) <= 64 and len(d["detail"]) <= 400 for d in made)
    assert all(net.host.members[p].declaration is not None for p in (A.peer_id, B.peer_id))


@settings(max_examples=200, deadline=None)
@given(participant=st.sampled_from(["A", "B", "S", "x", ""]), decision=st.sampled_from([*StallDecision, "nonsense", ""]),
       code=TEXT, detail=TEXT, by=st.lists(st.text(max_size=60), max_size=40), strikes=st.integers(-(2**63), 2**63 - 1),
       removed=st.booleans())
def test_any_room_decision_from_the_host_is_reported_bounded_or_refused_with_a_code(participant, decision, code, detail,
                                                                                   by, strikes, removed):
    names = {"A": A.peer_id, "B": B.peer_id, "S": D.peer_id, "x": "zUnknown", "": ""}
    net = Net(A, min_players=3)
    b = net.add_member(B)
    net.add_member(D, role="spectator")
    actions = b.receive(A.peer_id, RoomDecision(names[participant], decision, code, detail, by, strikes, removed), net.now)
    events = [a for a in actions if isinstance(a, RoomDecided)]
    valid = participant in ("A", "B") and decision in list(StallDecision)
    if valid:
        (event,) = events
        ruling = event.ruling
        assert len(ruling.code) <= 64 and len(ruling.detail) <= 300 and len(ruling.by) <= len(net.host.participants)
    else:
        assert not events and [(m.peer, m.code) for m in actions if isinstance(m, Misbehaviour)] == [
            (A.peer_id, "room-decision-invalid")]
