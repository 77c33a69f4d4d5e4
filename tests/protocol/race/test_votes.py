"""Checksum votes: the tally rules alone, then divergence handling across whole meshes."""

import pytest

from protocol.errors import ProtocolError
from protocol.race.votes import VoteBook
from tests.protocol.race.harness import DesyncRecord, Mesh, PeerLeft, VoteDecided, WriteState
from protocol.race.messages import LeaveReason, RaceLeave
from tests.protocol.race.harness import Send

H = [bytes([i]) * 32 for i in range(4)]


def book(votes, me="a"):
    vb = VoteBook(me)
    for peer, h in votes.items():
        vb.add(peer, 120, h)
    return vb


def test_tally_kinds():
    voters = ["b", "c", "d"]
    assert book({"a": H[0], "b": H[0], "c": H[0], "d": H[0]}).decide(130, voters)[0].kind == "agreed"
    outcome = book({"a": H[0], "b": H[0], "c": H[0], "d": H[1]}).decide(130, voters)[0]
    assert outcome.kind == "majority" and outcome.dissenters == ("d",)
    assert book({"a": H[1], "b": H[0], "c": H[0], "d": H[0]}).decide(130, voters)[0].kind == "minority"
    assert book({"a": H[0], "b": H[0], "c": H[1], "d": H[1]}).decide(130, voters)[0].kind == "tie"
    assert book({"a": H[0], "b": H[0], "c": H[1], "d": H[2]}).decide(130, voters)[0].kind == "tie"  # 2-1-1
    assert book({"a": H[0], "b": H[1]}).decide(130, ["b"])[0].kind == "tie"  # 1-1 with two players


def test_wait_for_every_voter_or_thirty_frames():
    vb = book({"a": H[0], "b": H[0]})
    assert vb.decide(130, ["b", "c"]) == []
    assert vb.decide(149, ["b", "c"]) == []
    outcome = vb.decide(150, ["b", "c"])[0]  # c counts as absent: 2 of 2 received agree
    assert outcome.kind == "agreed" and set(outcome.hashes) == {"a", "b"}
    assert not vb.accepts(120, 151)  # decided: later votes are dropped


def test_first_vote_is_locked_and_old_votes_are_dropped():
    vb = VoteBook("a")
    assert vb.add("b", 120, H[0]) and not vb.add("b", 120, H[0])
    with pytest.raises(ProtocolError) as err:
        vb.add("b", 120, H[1])
    assert err.value.code == "vote-conflict"
    assert vb.accepts(120, 270) and not vb.accepts(120, 271)
    assert not vb.accepts(121, 130)


def test_corrupted_node_is_the_minority_and_leaves_after_three_strikes():
    mesh = Mesh(4, seed=11, length=520, faults={2: 50})
    bad = mesh.peers[2]
    mesh.run_to_end()
    ended = mesh.ended(bad)
    assert ended is not None and ended.reason == "persistent-desync" and ended.evidence["frame"] == 360
    assert [v.kind for v in mesh.of(bad, VoteDecided)] == ["agreed", "minority", "minority", "minority"]
    record = mesh.of(bad, DesyncRecord)[0].event
    assert record["frame"] == 360 and len(record["hashes"]) == 4 and record["participatingPeers"] == sorted(mesh.peers)
    assert [w.frame for w in mesh.of(bad, WriteState)] == [120, 240, 360]
    leaves = [a.message for a in mesh.actions[bad] if isinstance(a, Send) and isinstance(a.message, RaceLeave)]
    assert leaves and {leave.reason for leave in leaves} == {"desync"}
    good = [p for p in mesh.peers if p != bad]
    for peer in good:
        assert mesh.ended(peer) is None
        kinds = [v.kind for v in mesh.of(peer, VoteDecided)]
        assert kinds == ["agreed", "majority", "majority", "majority", "agreed"]
        assert [w.frame for w in mesh.of(peer, WriteState)] == [120, 240, 360]
        assert PeerLeft(bad, LeaveReason.DESYNC) in mesh.of(peer, PeerLeft)
        assert mesh.sessions[peer].status(bad) == "removed"
    assert len({mesh.state(p) for p in good}) == 1


def test_two_node_divergence_is_consensus_invalid_on_both():
    mesh = Mesh(2, seed=12, length=400, faults={0: 30})
    mesh.run(4000)
    for peer in mesh.peers:
        ended = mesh.ended(peer)
        assert ended is not None and ended.reason == "consensus-invalid" and ended.evidence["frame"] == 120
        assert len(ended.evidence["hashes"]) == 2
        assert [w.frame for w in mesh.of(peer, WriteState)] == [120]


def test_two_two_split_of_hashes_is_consensus_invalid_on_all_four():
    mesh = Mesh(4, seed=13, length=400, faults={0: 30, 1: 30})
    mesh.run(4000)
    assert {mesh.ended(p).reason for p in mesh.peers} == {"consensus-invalid"}
