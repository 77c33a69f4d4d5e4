"""Disconnects: prediction through the reconnect window, catch-up from a vouched snapshot, the partition guard."""

import hashlib


from protocol.race.messages import RaceOffer, RaceRejoin, RaceSnapshot
from protocol.race.actions import SessionEndReason
from protocol.race.messages import LeaveReason
from protocol.race.peers import PeerStatus
from protocol.race.recovery import LINK_GRACE_MS
from tests.protocol.race.harness import CaughtUp, CloseLink, Mesh, Misbehaviour, PeerLeft, PeerRejoined, VoteDecided


def cut_off_for_3_s() -> tuple[Mesh, str, list[str]]:
    """Four peers racing; the last is cut off from the others for 3 s (longer than the link grace), and
    the cut is not healed yet."""
    mesh = Mesh(4, seed=21, length=900)
    lost, others = mesh.peers[3], mesh.peers[:3]
    mesh.run(2000)
    mesh.cut([lost], others)
    mesh.run(3000)
    return mesh, lost, others


def test_reconnect_within_the_window_catches_up_from_a_majority_snapshot():
    mesh, lost, others = cut_off_for_3_s()
    assert [mesh.sessions[p].status(lost) for p in others] == [PeerStatus.LOST] * 3
    mesh.heal([lost], others)
    mesh.run_to_end()
    caught = mesh.of(lost, CaughtUp)
    assert len(caught) == 1 and caught[0].frame % 8 == 0 and caught[0].resume_frame == caught[0].frame + 60
    assert caught[0].state_hash == hashlib.sha256(caught[0].state).digest()  # what the race log keeps and replay checks
    for peer in others:
        assert mesh.sessions[peer].status(lost) is PeerStatus.ACTIVE
        assert mesh.of(peer, PeerRejoined) == [PeerRejoined(lost, caught[0].resume_frame)]
    assert all(mesh.ended(p) is None for p in mesh.peers)
    assert len({mesh.state(p) for p in mesh.peers}) == 1
    assert all(v.kind == "agreed" for p in mesh.peers for v in mesh.of(p, VoteDecided))
    assert not any(mesh.of(p, Misbehaviour) for p in mesh.peers)


def test_a_peer_lost_for_the_whole_window_is_removed_and_its_side_is_void():
    mesh = Mesh(4, seed=22, length=1300)
    lost, others = mesh.peers[0], mesh.peers[1:]
    mesh.run(1000)
    mesh.cut([lost], others)
    mesh.run_to_end()
    assert mesh.ended(lost).reason is SessionEndReason.PARTITION_VOID
    for peer in others:
        assert mesh.ended(peer) is None and mesh.sessions[peer].status(lost) == "removed"
        assert mesh.of(peer, PeerLeft) == [PeerLeft(lost, LeaveReason.DISCONNECT)]
    assert len({mesh.state(p) for p in others}) == 1
    assert all(v.kind == "agreed" for p in others for v in mesh.of(p, VoteDecided))


def test_two_two_partition_is_void_on_both_sides():
    mesh = Mesh(4, seed=23, length=2000)
    mesh.run(1000)
    mesh.cut(mesh.peers[:2], mesh.peers[2:])
    mesh.run(16_000)
    assert {mesh.ended(p).reason for p in mesh.peers} == {"partition-void"}


def test_two_player_race_cannot_catch_up_and_fails_closed():
    mesh = Mesh(2, seed=24, length=2000)
    mesh.run(1000)
    mesh.cut(mesh.peers[:1], mesh.peers[1:])
    mesh.run(3000)  # longer than the link grace: each side lost the other and made its predictions final
    mesh.heal(mesh.peers[:1], mesh.peers[1:])
    mesh.run(200)
    assert {mesh.ended(p).reason for p in mesh.peers} == {"catch-up-impossible"}


def test_a_short_glitch_resumes_without_catch_up():
    mesh = Mesh(2, seed=25, length=600)
    mesh.run(1000)
    mesh.cut(mesh.peers[:1], mesh.peers[1:])
    mesh.run(64)  # fewer frames than it takes a lost peer's prediction to become final
    mesh.heal(mesh.peers[:1], mesh.peers[1:])
    mesh.run_to_end()
    assert not any(mesh.of(p, CaughtUp) for p in mesh.peers)
    assert all(mesh.ended(p) is None for p in mesh.peers)
    assert len({mesh.state(p) for p in mesh.peers}) == 1


def test_reconnect_with_another_loadout_is_refused():
    mesh = Mesh(4, seed=26, length=600)
    lost, others = mesh.peers[3], mesh.peers[:3]
    mesh.run(500)
    mesh.cut([lost], others)
    mesh.run(LINK_GRACE_MS)  # no new link within the grace: the peer is lost
    session = mesh.sessions[others[0]]
    forged = RaceRejoin(session.race_id, "00" * 32, session.current_frame, True)
    assert session.receive(lost, forged, mesh.now) == [CloseLink(lost, "reconnect-loadout-mismatch")]
    assert session.status(lost) == "lost"


def _cut_and_heal(seed):
    mesh = Mesh(4, seed=seed, length=1400)
    lost, others = mesh.peers[3], mesh.peers[:3]
    mesh.run(1500)
    mesh.cut([lost], others)
    mesh.run(2000)
    return mesh, lost, others


def test_a_bad_snapshot_is_misbehaviour_and_the_next_voter_serves():
    mesh, lost, others = _cut_and_heal(27)
    served = []

    def corrupt_first_snapshot(src, dst, msg):
        if isinstance(msg, RaceSnapshot) and not served:
            served.append(src)
            return RaceSnapshot(msg.requestId, msg.frame, msg.state[:-1] + bytes([msg.state[-1] ^ 1]), msg.inputs, msg.signature)
        return msg

    mesh.tamper = corrupt_first_snapshot
    mesh.heal([lost], others)
    mesh.run(500)
    assert [m.code for m in mesh.of(lost, Misbehaviour)] == ["race-snapshot-mismatch"]
    assert len(mesh.of(lost, CaughtUp)) == 1 and len(served) == 1
    mesh.run_to_end()
    assert len({mesh.state(p) for p in mesh.peers}) == 1


def test_catch_up_fails_closed_without_a_quorum_of_valid_offers():
    mesh, lost, others = _cut_and_heal(28)

    def forge_offers(src, dst, msg):
        if isinstance(msg, RaceOffer) and src != others[0]:
            return RaceOffer(msg.requestId, msg.candidates, bytes(64))
        return msg

    mesh.tamper = forge_offers
    mesh.heal([lost], others)
    mesh.run(3500)
    assert mesh.ended(lost).reason == "catch-up-failed"
    assert [m.code for m in mesh.of(lost, Misbehaviour)].count("race-offer-bad-signature") >= 2


def test_an_off_line_node_that_never_caught_up_is_void_when_its_window_closes():
    mesh, lost, others = _cut_and_heal(29)
    mesh.heal([lost], others[:2])  # two voters are one short of quorum(4) = 3 remote offers
    mesh.run(16_000)
    assert mesh.ended(lost).reason is SessionEndReason.PARTITION_VOID
    assert all(mesh.ended(p) is None and mesh.sessions[p].status(lost) == "removed" for p in others)


def test_a_two_node_minority_of_five_catches_up_together():
    mesh = Mesh(5, seed=210, length=900, max_delay_ms=30)
    minority, majority = [mesh.peers[0], mesh.peers[2]], [mesh.peers[1], mesh.peers[3], mesh.peers[4]]
    mesh.run(1200)
    mesh.cut(minority, majority)
    mesh.run(LINK_GRACE_MS + 1500)
    mesh.heal(minority, majority)
    mesh.run_to_end()
    assert all(len(mesh.of(p, CaughtUp)) == 1 for p in minority)
    assert not any(mesh.of(p, CaughtUp) for p in majority)
    assert all(mesh.ended(p) is None for p in mesh.peers)
    assert len({mesh.state(p) for p in mesh.peers}) == 1
    assert all(v.kind == "agreed" for p in mesh.peers for v in mesh.of(p, VoteDecided))


def test_a_voluntary_leave_removes_the_peer_and_the_race_goes_on():
    mesh = Mesh(3, seed=30, length=500)
    leaver, stayers = mesh.peers[1], [mesh.peers[0], mesh.peers[2]]
    mesh.run(2000)
    mesh.handle(leaver, mesh.sessions[leaver].leave(LeaveReason.VOLUNTARY, mesh.now))
    mesh.paused.add(leaver)
    mesh.run_to_end()
    assert mesh.ended(leaver).reason == "left"
    for peer in stayers:
        assert mesh.ended(peer) is None and mesh.sessions[peer].status(leaver) == "removed"
        assert mesh.of(peer, PeerLeft) == [PeerLeft(leaver, LeaveReason.VOLUNTARY)]
    assert mesh.state(stayers[0]) == mesh.state(stayers[1])


def test_a_bug_in_the_world_s_loader_is_never_the_snapshot_sender_s_misbehaviour():
    mesh, lost, others = cut_off_for_3_s()

    def broken_load(data):
        raise ZeroDivisionError("a bug in this node's world")

    mesh.sessions[lost].world.load_state = broken_load
    mesh.heal([lost], others)
    mesh.run(3_000)  # the snapshot arrives, its load fails: this node's session is broken, nobody blamed
    ((node, fault),) = mesh.broken
    assert node == lost and isinstance(fault.__cause__, ZeroDivisionError) and mesh.ended(lost).reason == "internal-error"
    assert not mesh.of(lost, Misbehaviour)
