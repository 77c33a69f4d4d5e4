"""The source's door and its bounded backlog."""

from __future__ import annotations

import pytest

from protocol.errors import ProtocolError
from protocol.spectate.messages import (
    ModeSelect, SessionEnd, SpectateCheckpoint, SpectateEndReason, SpectateInputs, SpectateRound, SpectateVote,
)
from protocol.spectate.source import SpectateSource
from tests.protocol.spectate.harness import SPECTATOR, SourcedMesh, Watcher, run
from tests.coded import raises_coded

MATCH = "ab" * 32


def select(epoch: int = 1, match: str = MATCH, mode: str = "replay") -> ModeSelect:
    return ModeSelect(mode, match, epoch)


@pytest.mark.parametrize(("peer", "message", "code"), [
    (SPECTATOR, select(match="cd" * 32), "spectate-wrong-match"),
    (SPECTATOR, select(mode="fallback"), "spectate-mode-unsupported"),
    (SPECTATOR, select(epoch=0), "spectate-stale-epoch"),
    ("zSomeoneElse", select(), "spectate-not-admitted"),
    (SPECTATOR, ModeSelect("replay", MATCH + "x" * 100, 1), "spectate-mode-select-too-large"),
    (SPECTATOR, SessionEnd(1, "error"), "spectate-unexpected-message"),
])
def test_the_door_refuses_with_a_code(peer, message, code) -> None:
    source = SpectateSource(MATCH, [SPECTATOR], capacity=20)
    with pytest.raises(ProtocolError) as refused:
        source.receive(peer, message, 0)
    assert refused.value.code == code


def test_epochs_only_grow_and_capacity_is_enforced() -> None:
    source = SpectateSource(MATCH, [SPECTATOR, "zOther"], capacity=1)
    assert source.receive(SPECTATOR, select(2), 0) == []  # nothing to send before the first checkpoint
    with raises_coded(ProtocolError, "spectate-stale-epoch", match="grow"):
        source.receive(SPECTATOR, select(2), 0)
    with pytest.raises(ProtocolError) as full:
        source.receive("zOther", select(1), 0)
    assert full.value.code == "spectator-full"
    source.drop(SPECTATOR)
    assert source.receive("zOther", select(1), 0) == [] and source.load == 1


def test_the_backlog_is_bounded_by_the_checkpoint_interval() -> None:
    mesh = SourcedMesh(3, length=1200)
    mesh.run(15_000)  # about frame 900
    peer = mesh.peers[0]
    backlog = [s.message for s in mesh.sources[peer].receive(SPECTATOR, select(), mesh.now)]
    kinds = [type(m) for m in backlog]
    assert kinds[:2] == [SpectateRound, SpectateCheckpoint]
    checkpoint = backlog[1]
    inputs = [m.frame for m in backlog if isinstance(m, SpectateInputs)]
    assert checkpoint.frame % 120 == 1 and inputs == list(range(checkpoint.frame, inputs[-1] + 1))
    assert len(inputs) <= 120 + 8 + 1
    assert all(m.frame + 1 >= checkpoint.frame for m in backlog if isinstance(m, SpectateVote))
    assert all(m.sourceEpoch == 1 for m in backlog)


def test_the_end_reaches_every_subscriber_once_and_late_ones_too() -> None:
    mesh = SourcedMesh(3, length=600)
    watcher = Watcher(mesh, mesh.peers[0])
    run(mesh, [watcher], 500)
    source = mesh.sources[mesh.peers[0]]
    ends = source.end(SpectateEndReason.CONSENSUS_INVALID)
    assert [(s.peer, s.message) for s in ends] == [(SPECTATOR, SessionEnd(1, "consensus-invalid"))]
    assert source.end(SpectateEndReason.MATCH_END) == []
    source.drop(SPECTATOR)
    assert [s.message for s in source.receive(SPECTATOR, select(5), mesh.now)] == [SessionEnd(5, "consensus-invalid")]
