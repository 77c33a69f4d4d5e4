"""Whole races over the in-memory mesh: every node must end with the same state and the same log."""

import pytest

from tests.protocol.race.harness import Mesh, Misbehaviour, VoteDecided


def finish(mesh: Mesh) -> Mesh:
    mesh.run_to_end()
    assert all(mesh.ended(p) is None for p in mesh.peers)
    return mesh


def assert_agreement(mesh: Mesh) -> None:
    first = mesh.peers[0]
    assert {mesh.state(p) for p in mesh.peers} == {mesh.state(first)}
    log = mesh.confirmed_log(first)
    assert sorted(log) == list(range(mesh.worlds[first].length))
    assert all(mesh.confirmed_log(p) == log for p in mesh.peers)
    for peer in mesh.peers:
        votes = mesh.of(peer, VoteDecided)
        assert [v.frame for v in votes] == [0, 120, 240, 360]
        assert all(v.kind == "agreed" and len(v.hashes) == len(mesh.peers) for v in votes)
        assert not mesh.of(peer, Misbehaviour)


@pytest.mark.parametrize("n,seed", [(2, 1), (2, 2), (4, 3), (4, 4), (8, 5)])
def test_rollback_meshes_agree(n, seed):
    mesh = finish(Mesh(n, seed=seed, max_delay_ms=60, length=400))
    assert_agreement(mesh)
    assert sum(mesh.sessions[p].stats.rollbacks for p in mesh.peers) > 0  # the delays really forced rollbacks
    assert all(mesh.sessions[p].stats.max_rollback <= 8 for p in mesh.peers)


def test_late_inputs_end_identical_to_prompt_ones():
    """Bot inputs depend only on (peer, frame): a race full of rollbacks must equal one without any."""
    prompt = finish(Mesh(4, seed=7, max_delay_ms=0, length=300, max_prediction=0))
    late = finish(Mesh(4, seed=7, max_delay_ms=120, length=300))
    assert sum(late.sessions[p].stats.rollbacks for p in late.peers) > 0
    assert {late.state(p) for p in late.peers} == {prompt.state(prompt.peers[0])}
    assert late.confirmed_log(late.peers[0]) == prompt.confirmed_log(prompt.peers[0])


def test_lockstep_never_predicts():
    mesh = finish(Mesh(4, seed=8, max_delay_ms=50, length=400, max_prediction=0))
    assert_agreement(mesh)
    for peer in mesh.peers:
        stats = mesh.sessions[peer].stats
        assert stats.predicted_inputs == 0 and stats.rollbacks == 0
        # every confirmed input is a real, signed one
        assert all(signed for inputs in mesh.confirmed_log(peer).values() for _, _, signed in inputs)


def test_input_delay_agrees_and_predicts_less():
    plain = finish(Mesh(4, seed=9, max_delay_ms=40, length=400))
    delayed = finish(Mesh(4, seed=9, max_delay_ms=40, length=400, input_delay=3))
    assert_agreement(delayed)
    assert sum(delayed.sessions[p].stats.rollbacks for p in delayed.peers) < sum(
        plain.sessions[p].stats.rollbacks for p in plain.peers
    )
