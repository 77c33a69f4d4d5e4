"""The session driving the real ``sim_core.World`` through the small adapter a shell would use."""

import hashlib

from open4wd_node.faults.world import FaultWorld
from open4wd_node.race.world import WorldAdapter
from sim_core import SkillEvent, World
from tests.protocol.race.harness import Mesh, VoteDecided


def test_four_nodes_race_the_demo_world_and_the_log_replays():
    mesh = Mesh(4, seed=41, max_delay_ms=50, world_factory=lambda k: WorldAdapter(World.demo(4, seed=9)))
    mesh.run(400 * 16)
    first = mesh.peers[0]
    confirmed = mesh.sessions[first].confirmed_frame
    assert confirmed > 300 and all(mesh.ended(p) is None for p in mesh.peers)
    assert sum(mesh.sessions[p].stats.rollbacks for p in mesh.peers) > 0
    votes = [v for p in mesh.peers for v in mesh.of(p, VoteDecided)]
    assert {v.kind for v in votes} == {"agreed"} and {0, 120, 240} <= {v.frame for v in votes}
    # votes are SHA-256 of the saved state, i.e. World.state_hash of that frame
    replay = World.demo(4, seed=9)
    log = mesh.confirmed_log(first)
    for frame in range(confirmed + 1):
        replay.step({slot: [SkillEvent(s, h) for s, h in events]
                     for slot, (_, events, _) in enumerate(log[frame]) if events})
        if frame == 240:
            vote = next(v for v in mesh.of(first, VoteDecided) if v.frame == 240)
            assert vote.hashes[first] == replay.state_hash() == hashlib.sha256(replay.save_state()).digest()
    assert len({mesh.confirmed_log(p)[confirmed] for p in mesh.peers}) == 1


def test_a_corrupted_real_world_is_the_minority_and_leaves():
    mesh = Mesh(4, seed=42, max_delay_ms=40,
                world_factory=lambda k: FaultWorld(World.demo(4, seed=9), 0, corrupt_at=50 if k == 1 else None))
    bad = mesh.peers[1]
    mesh.run(460 * 16)
    assert mesh.ended(bad).reason == "persistent-desync"
    assert [v.kind for v in mesh.of(bad, VoteDecided)] == ["agreed", "minority", "minority", "minority"]
    good = [p for p in mesh.peers if p != bad]
    assert all(mesh.ended(p) is None and mesh.sessions[p].status(bad) == "removed" for p in good)
    for peer in good:
        vote = next(v for v in mesh.of(peer, VoteDecided) if v.frame == 360)
        assert vote.kind == "majority" and vote.dissenters == (bad,)
