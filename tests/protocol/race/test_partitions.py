"""Seeded partition scenarios: whatever the split and its length, the rules hold."""

import random

import pytest

from protocol.identity.consensus import quorum
from tests.protocol.race.harness import Mesh, Misbehaviour, VoteDecided

SEEDS = [3, 17, 23, 31, 47, 52]


@pytest.mark.parametrize("seed", SEEDS)
def test_partition_rules_hold(seed):
    rng = random.Random(seed)
    n = rng.choice([3, 4, 5])
    mesh = Mesh(n, seed=seed, length=900, max_delay_ms=rng.choice([0, 40]), max_prediction=rng.choice([0, 8]),
                input_delay=rng.choice([0, 2]))
    side = rng.sample(mesh.peers, rng.randint(1, n // 2))
    rest = [p for p in mesh.peers if p not in side]
    mesh.run(rng.randint(300, 1500))
    mesh.cut(side, rest)
    healed = rng.random() < 0.6
    mesh.run(rng.choice([800, 2500]) if healed else 16_000)
    if healed:
        mesh.heal(side, rest)
    mesh.run_to_end()
    live = [p for p in mesh.peers if mesh.ended(p) is None]
    assert len({mesh.state(p) for p in live}) <= 1
    assert all(v.kind == "agreed" for p in live for v in mesh.of(p, VoteDecided))
    assert not any(mesh.of(p, Misbehaviour) for p in mesh.peers)
    reasons = {mesh.ended(p).reason for p in mesh.peers if mesh.ended(p)}
    if not healed:  # the window closed: a strict majority races on, any other side is void
        for group in (side, rest):
            if len(group) >= quorum(n):
                assert all(p in live for p in group)
            else:
                assert all(mesh.ended(p).reason == "partition-void" for p in group)
    else:
        assert reasons <= {"catch-up-impossible", "catch-up-failed", "partition-void"}
        if len(side) == 1:
            assert live == mesh.peers  # a single lost peer of three or more always catches up
