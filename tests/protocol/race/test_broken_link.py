"""One broken link of a full mesh, both of its ends still linked to the others (found by containment's
whole-node test: a link closed at the first input message made three nodes vote three hashes).

A broken link is waited for during ``LINK_GRACE_MS`` before its peer is lost: the peer is alive and its
real inputs still reach the others, who confirm them, so a prediction of it must not become final at
the two ends meanwhile (docs/race.md, "A broken link")."""

import pytest

from protocol.race.actions import PeerLost
from protocol.race.recovery import LINK_GRACE_MS
from tests.protocol.race.harness import TICK_MS, Mesh, VoteDecided

REDIAL_MS = 400  # about what the shell's mesh takes to dial a broken link again (re-dial every 500 ms)


def _agreed(mesh: Mesh) -> None:
    assert [mesh.ended(p) for p in mesh.peers] == [None] * len(mesh.peers)
    assert len({mesh.state(p) for p in mesh.peers}) == 1
    assert all(v.kind == "agreed" for p in mesh.peers for v in mesh.of(p, VoteDecided))
    logs = [mesh.confirmed_log(p) for p in mesh.peers]
    assert all(log == logs[0] for log in logs)  # the same inputs, every one of them real, on every node
    assert all(signed for row in logs[0].values() for _, _, signed in row)


@pytest.mark.parametrize("cut_ms", [0, TICK_MS, 800])  # at GO (before any input crossed the link), then mid-race
def test_one_link_of_three_down_for_a_re_dial_forks_nothing(cut_ms):
    mesh = Mesh(3, seed=2, length=600)
    a, b, _ = mesh.peers
    mesh.run(cut_ms)
    mesh.cut([a], [b])
    mesh.run(REDIAL_MS)
    assert mesh.sessions[a].status(b) == mesh.sessions[b].status(a) == "active"  # waited for, not predicted
    mesh.heal([a], [b])
    mesh.run_to_end()
    _agreed(mesh)
    assert not any(mesh.of(p, PeerLost) for p in mesh.peers)  # never lost: no peer-lost for a user to see


def test_a_peer_cut_from_all_is_lost_after_the_grace_and_every_survivor_predicts_it_alike():
    mesh = Mesh(4, seed=5, length=900, max_delay_ms=40)
    lost, others = mesh.peers[0], mesh.peers[1:]
    mesh.run(700)
    cut_at = mesh.now
    mesh.cut([lost], others)
    mesh.run(LINK_GRACE_MS - TICK_MS)
    assert all(mesh.sessions[p].status(lost) == "active" for p in others)
    mesh.run(2 * TICK_MS)
    assert all(mesh.sessions[p].status(lost) == "lost" for p in others)
    assert all(mesh.sessions[p].next_deadline_ms() <= cut_at + 15_000 for p in others)  # the window counts from the cut
    mesh.heal([lost], others)
    mesh.run_to_end()
    assert all(mesh.ended(p) is None for p in mesh.peers)
    assert len({mesh.state(p) for p in mesh.peers}) == 1
    assert all(v.kind == "agreed" for p in mesh.peers for v in mesh.of(p, VoteDecided))


@pytest.mark.parametrize("down_ms", [LINK_GRACE_MS + 3000, 12_000])
def test_one_link_of_three_down_longer_than_the_grace_is_bridged_by_the_third(down_ms):
    """A partial partition: the link a-b stays down well past the grace while both reach c. Each end asks
    c to forward the other's inputs (``want``); the ends hear of each other through c, so neither is ever
    lost or predicted for good, and the race agrees with every input real (docs/race.md, "Forwarded
    inputs"; more cases in test_forwarding.py)."""
    mesh = Mesh(3, seed=6, length=1400)
    a, b, c = mesh.peers
    mesh.run(800)
    mesh.cut([a], [b])
    mesh.run(down_ms)
    assert mesh.sessions[a].status(b) == mesh.sessions[b].status(a) == "active"  # heard of through c
    mesh.heal([a], [b])
    mesh.run_to_end()
    _agreed(mesh)
    assert not any(mesh.of(p, PeerLost) for p in mesh.peers)

