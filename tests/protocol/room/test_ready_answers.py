"""A member always knows where its own Ready stands (docs/rooms.md, "Who may change what"): a refused
declaration is answered on its sender's link (``ready-refused``) and ``--auto-ready`` declares again
once the room has changed; a Ready that is withdrawn, whatever withdrew it, is reported by its owner
(``ready-withdrawn``)."""

import pytest

from protocol.actions import Misbehaviour
from protocol.identity.keys import Identity
from protocol.room import member as member_module
from protocol.room.messages import CancelReady, GridCommitRequest, ReadyDeclarationMsg
from tests.protocol.room.harness import Net, succeed

A, B, C, D = (Identity(bytes([i]) * 32) for i in range(1, 5))
SKEW_MS = 40_000  # beyond the ±30 s a signed timestamp may be off


@pytest.fixture
def clock_of_b(monkeypatch):
    """B's clock: ``ahead`` ms ahead of everyone else's when B signs a declaration (0: correct)."""

    class Clock:
        ahead = SKEW_MS
        signed = 0

    real = member_module.build_declaration

    def build(identity, room_id, config_digest, epoch, version, rotation, now_ms):
        if identity.peer_id == B.peer_id:
            Clock.signed += 1
            now_ms += Clock.ahead
        return real(identity, room_id, config_digest, epoch, version, rotation, now_ms)

    monkeypatch.setattr(member_module, "build_declaration", build)
    return Clock


def declared(net, who):
    return net.host.members[who.peer_id].declaration is not None


def test_a_refused_ready_is_answered_and_declared_again_once_the_room_changes(clock_of_b):
    net = Net(A, min_players=2)
    b = net.add_member(B)  # auto-ready: declares as soon as it may, with a clock 40 s ahead
    assert declared(net, A) and not declared(net, B) and net.host.phase == "collecting"
    refusals = net.of(B.peer_id, "ready-refused")
    assert refusals and len(refusals) == clock_of_b.signed  # each declaration answered (A's Ready changed the room)
    assert refusals[-1]["code"] == "timestamp-out-of-range" and "30 s" in refusals[-1]["message"]
    assert (B.peer_id, "timestamp-out-of-range") in net.blamed(None)  # the host's view, as before
    assert b.ready_blockers() == ["the host refused Ready (timestamp-out-of-range); waiting for the room to change"]
    clock_of_b.ahead = 0  # the clock is put right: the reason is gone, but nothing has told B so yet
    signed = clock_of_b.signed
    net.route(b.tick(net.now), B.peer_id)
    assert clock_of_b.signed == signed  # no room change, no new declaration
    net.add_member(C)  # the room changes: B declares again and is accepted
    assert clock_of_b.signed == signed + 1 and declared(net, B)
    assert net.host.phase == "countdown"
    assert len(net.of(B.peer_id, "ready-refused")) == signed and not net.of(B.peer_id, "ready-withdrawn")


def test_a_reason_that_persists_costs_one_declaration_per_room_change_never_a_loop(clock_of_b):
    net = Net(A, min_players=2)
    b = net.add_member(B)
    signed = clock_of_b.signed
    for _ in range(3):  # timers and a stored asset: the room did not change
        net.route(b.tick(net.now), B.peer_id)
        net.route(b.asset_stored("builtin:body-01", net.now), B.peer_id)
    assert clock_of_b.signed == signed
    for _ in range(3):  # a newer room state each time: one more declaration each, each refused
        net.route(net.host._broadcast_state(), None)
    assert clock_of_b.signed == signed + 3 and len(net.of(B.peer_id, "ready-refused")) == signed + 3
    assert not declared(net, B)


def test_the_refusal_of_an_overtaken_declaration_is_dropped(clock_of_b):
    net = Net(A, min_players=3)
    b = net.add_member(B, auto_ready=False)
    (first,) = b.declare_ready(net.now)  # signed 40 s ahead
    clock_of_b.ahead = 0
    (second,) = b.declare_ready(net.now)  # sent before the host answered the first
    net.route([first], B.peer_id)
    assert not net.of(B.peer_id, "ready-refused")  # the host refused the first; B already sent the second
    net.route([second], B.peer_id)
    assert declared(net, B) and not net.of(B.peer_id, "ready-refused")


def test_the_hosts_own_refused_ready_is_told_to_its_seat_and_blamed_on_nobody():
    net = Net(A, min_players=2)
    net.add_member(B)
    assert net.host.phase == "countdown"
    net.route(net.host_member.declare_ready(net.now), A.peer_id)  # the host's player types "ready" again
    assert net.of(A.peer_id, "ready-refused")[0]["code"] == "not-allowed"
    assert net.blamed(None) == [] and net.blamed(A.peer_id) == []
    net.advance(5_000)
    assert set(net.started) == {A.peer_id, B.peer_id}  # it was Ready all along


def withdrawn(net, who):
    return [e["reason"] for e in net.of(who.peer_id, "ready-withdrawn")]


def test_an_injected_cancel_ready_is_told_to_its_owner_who_declares_again():
    """The issue's proxy injected a cancel-ready on B's link: accepted, B never told, the room stalled.
    Noise now keeps a party in the middle out; should any withdrawal reach B unexplained, B says so
    and, auto-ready, declares again."""
    net = Net(A, min_players=3)
    net.add_member(B)
    net.add_member(C, auto_ready=False)
    net.route(net.host.receive(B.peer_id, CancelReady("player"), net.now), None)  # not sent by B's machine
    assert withdrawn(net, B) == ["unexplained"]
    assert declared(net, B)  # declared again at once
    net.route(net.members[C.peer_id].declare_ready(net.now), C.peer_id)
    assert net.host.phase == "countdown"


def test_a_cancel_of_ones_own_is_told_and_not_declared_again():
    net = Net(A, min_players=2)
    net.add_member(C, auto_ready=False)  # C stays un-Ready: the room waits in collecting
    net.add_member(B)
    assert declared(net, B)
    net.route(net.members[B.peer_id].cancel_ready(), B.peer_id)
    assert withdrawn(net, B) == ["player"] and not declared(net, B)
    assert "cancelled" in net.of(B.peer_id, "ready-withdrawn")[0]["message"]


def test_a_grid_timeout_is_told_to_the_peers_it_withdrew():
    net = Net(A, min_players=3)
    net.deaf[C.peer_id] = (GridCommitRequest,)  # C acks, then never commits
    net.add_member(B)
    net.add_member(C)
    net.advance(15_000)
    assert withdrawn(net, C) == ["grid-timeout"] and withdrawn(net, B) == []
    assert not declared(net, C)  # as before: a node that stalled the ceremony is not put back by itself


def test_a_cancelled_countdown_is_told_to_everyone():
    net = Net(A, min_players=3)
    net.add_member(B)
    net.add_member(C)
    assert net.host.phase == "countdown"
    net.drop(C.peer_id)
    net.drop(B.peer_id)
    assert net.host.phase == "collecting"
    assert withdrawn(net, A) == ["countdown-cancelled"]


def test_a_lost_host_is_told_as_the_loss_of_ready():
    net = Net(A, min_players=2)
    net.add_member(C, auto_ready=False)  # C stays un-Ready: the room waits in collecting
    net.add_member(B)
    (event, *_) = [a for a in net.members[B.peer_id].host_lost(net.now) if getattr(a, "EVENT", "") == "ready-withdrawn"]
    assert event.reason == "host-lost"
    assert not [a for a in net.members[C.peer_id].host_lost(net.now) if getattr(a, "EVENT", "") == "ready-withdrawn"]
    moved = succeed(net, C, [B])  # C joined first: it succeeds the host; B re-joins it
    assert declared(moved, B)  # auto-ready: declared again to the successor


def test_a_refusal_answer_for_another_member_changes_nothing():
    net = Net(A, min_players=3)
    net.add_member(B, auto_ready=False)
    net.add_member(C, auto_ready=False)
    net.route(net.members[B.peer_id].declare_ready(net.now), B.peer_id)
    assert declared(net, B)
    bogus = ReadyDeclarationMsg({"nonce": b"x"})  # the host answers C, whatever the declaration named
    actions = net.host.receive(C.peer_id, bogus, net.now)
    assert actions[0] == Misbehaviour(C.peer_id, "envelope-invalid")
    net.route(actions, None)
    assert declared(net, B) and not net.of(B.peer_id, "ready-refused") and not net.of(C.peer_id, "ready-refused")
