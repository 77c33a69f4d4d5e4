"""The spectator stream without sockets: a source fed by a real race session, viewers that verify and
re-simulate it (tests/protocol/spectate/harness.py)."""

from __future__ import annotations

from dataclasses import replace


from protocol.spectate.actions import CheckpointLoaded, DialSource, DropSource, HashChecked, RoundOver
from protocol.spectate.messages import SpectateCheckpoint, SpectateEndReason, SpectateInputs
from protocol.transaction import FaultOutcome, MachineFault
from tests.protocol.race.harness import CounterWorld
from tests.protocol.spectate.harness import SourcedMesh, Watcher, run
from tests.coded import raises_coded


def finish(mesh: SourcedMesh, watchers: list[Watcher]) -> None:
    """Race to the end with the viewers watching, then let them play out what they hold."""
    while not all(mesh.round_over(p) for p in mesh.live()):
        run(mesh, watchers, 16)
    mesh.finish()
    run(mesh, watchers, 3000)


def test_a_viewer_reproduces_every_agreed_hash_and_the_final_state() -> None:
    mesh = SourcedMesh(3, length=600)
    watcher = Watcher(mesh, mesh.peers[1])
    finish(mesh, [watcher])
    assert watcher.ended is not None and watcher.ended.reason is SpectateEndReason.MATCH_END
    checks = watcher.of(HashChecked)
    assert [c.frame for c in checks] == [120, 240, 360, 480]  # vote 0 vouches for the checkpoint itself
    assert all(c.agreed for c in checks)
    assert watcher.world.save_state() == mesh.state(mesh.peers[0])
    assert watcher.of(RoundOver)[0].frame == 600
    assert watcher.frames == list(range(1, 600))
    assert watcher.misbehaviour == []


def test_a_late_viewer_joins_through_the_newest_checkpoint() -> None:
    mesh = SourcedMesh(3, length=600)
    mesh.run(5000)  # about frame 300
    watcher = Watcher(mesh, mesh.peers[0])
    finish(mesh, [watcher])
    loaded = watcher.of(CheckpointLoaded)
    assert [(c.frame, c.reason) for c in loaded] == [(241, "source")]
    assert watcher.frames[0] == 241 and watcher.frames[-1] == 599
    assert all(c.agreed for c in watcher.of(HashChecked))
    assert watcher.world.save_state() == mesh.state(mesh.peers[0])


def test_an_altered_input_is_refused_and_the_viewer_moves_to_another_source() -> None:
    mesh = SourcedMesh(3, length=600)
    forged = mesh.peers[0]

    def tamper(peer, message):
        if peer == forged and isinstance(message, SpectateInputs) and message.frame == 50:
            first, *rest = message.inputs
            return replace(message, inputs=[replace(first, events=[["boost", False]] if not first.events else []), *rest])
        return message

    watcher = Watcher(mesh, forged, tamper=tamper)
    finish(mesh, [watcher])
    assert "race-input-bad-signature" in watcher.misbehaviour
    assert watcher.of(DropSource)[0].peer == forged
    dials = watcher.of(DialSource)
    assert [(d.peer, d.select.sourceEpoch) for d in dials] == [(forged, 1), (mesh.peers[1], 2)]  # frame 50 came again
    assert watcher.ended is not None and watcher.ended.reason is SpectateEndReason.MATCH_END
    assert watcher.world.save_state() == mesh.state(mesh.peers[0])


def test_a_lost_source_is_replaced_and_old_messages_are_refused() -> None:
    mesh = SourcedMesh(3, length=600)
    first = mesh.peers[2]
    watcher = Watcher(mesh, first)
    run(mesh, [watcher], 3000)
    watcher.handle(watcher.viewer.source_lost(mesh.now))
    assert watcher.viewer.source != first and watcher.viewer.epoch == 2
    stale = [s.message for s in mesh.out[first] if isinstance(s.message, SpectateInputs)]
    assert watcher.viewer.receive(first, stale[-1], mesh.now)[0].code == "spectate-stale-source"
    finish(mesh, [watcher])
    assert watcher.ended is not None and watcher.ended.reason is SpectateEndReason.MATCH_END
    assert watcher.world.save_state() == mesh.state(mesh.peers[0])


class FlakyWorld(CounterWorld):
    """Corrupts its own state once, at one frame: a viewer-side fault a reload repairs."""

    def __init__(self, slots: int, length: int, flaky_frame: int) -> None:
        super().__init__(slots, length)
        self.flaky_frame = flaky_frame

    def step(self, inputs) -> None:
        frame = self.frame
        super().step(inputs)
        if frame == self.flaky_frame:
            self.values[0] ^= 1
            self.flaky_frame = -1


def test_a_mismatch_reloads_the_newest_verified_checkpoint() -> None:
    mesh = SourcedMesh(3, length=600)
    watcher = Watcher(mesh, mesh.peers[0], world=FlakyWorld(3, 600, 300))
    finish(mesh, [watcher])
    checks = [(c.frame, c.agreed) for c in watcher.of(HashChecked)]
    assert checks == [(120, True), (240, True), (360, False), (360, True), (480, True)]
    assert [(c.frame, c.reason) for c in watcher.of(CheckpointLoaded)] == [(1, "source"), (241, "hash-mismatch")]
    assert watcher.world.save_state() == mesh.state(mesh.peers[0])


def test_a_viewer_that_cannot_reproduce_the_race_ends_with_error() -> None:
    mesh = SourcedMesh(3, length=600)
    watcher = Watcher(mesh, mesh.peers[0], world=CounterWorld(3, 600, fault_frame=300))
    finish(mesh, [watcher])
    assert watcher.ended is not None and watcher.ended.reason is SpectateEndReason.ERROR


def test_a_new_source_between_rounds_repeats_the_finished_round_harmlessly() -> None:
    mesh = SourcedMesh(3, length=600)
    watcher = Watcher(mesh, mesh.peers[0])
    while not all(mesh.round_over(p) for p in mesh.live()):
        run(mesh, [watcher], 16)
    for peer, source in mesh.sources.items():  # the round is over everywhere; the match is not
        mesh.out[peer] += source.round_ended(mesh.sessions[peer].current_frame, {})
    run(mesh, [watcher], 3000)
    assert watcher.of(RoundOver) and watcher.viewer.phase.value == "round-over"
    watcher.handle(watcher.viewer.source_lost(mesh.now))  # its source goes away between the rounds
    run(mesh, [watcher], 100)
    assert watcher.misbehaviour == [] and watcher.viewer.epoch == 2
    mesh.finish()
    run(mesh, [watcher], 100)
    assert watcher.ended is not None and watcher.ended.reason is SpectateEndReason.MATCH_END


def test_a_checkpoint_whose_bytes_do_not_match_its_hash_is_refused() -> None:
    mesh = SourcedMesh(3, length=600)
    bad = mesh.peers[0]

    def tamper(peer, message):
        if peer == bad and isinstance(message, SpectateCheckpoint):
            return replace(message, state=message.state[:-1] + bytes([message.state[-1] ^ 1]))
        return message

    watcher = Watcher(mesh, bad, tamper=tamper)
    finish(mesh, [watcher])
    assert watcher.misbehaviour[0] == "spectate-checkpoint-invalid"
    assert watcher.of(DropSource)[0].peer == bad
    assert watcher.ended is not None and watcher.ended.reason is SpectateEndReason.MATCH_END
    assert watcher.world.save_state() == mesh.state(mesh.peers[0])


class BuggyLoaderWorld(CounterWorld):
    """A world whose loader has a bug of its own: not the source's fault."""

    def load_state(self, data: bytes) -> None:
        raise ZeroDivisionError("a bug in this viewer's world")


def test_a_bug_in_the_world_s_loader_is_never_the_source_s_misbehaviour() -> None:
    mesh = SourcedMesh(3, length=600)
    watcher = Watcher(mesh, mesh.peers[0], world=BuggyLoaderWorld(3, 600))
    with raises_coded(MachineFault, "internal-error") as info:
        finish(mesh, [watcher])
    assert watcher.misbehaviour == [] and not watcher.of(DropSource)
    # the view is broken: it ends with an error (not the source's fault), takes nothing more and steps no more
    fault = info.value
    assert fault.outcome is FaultOutcome.BROKEN and isinstance(fault.__cause__, ZeroDivisionError)
    assert [(a.reason, a.detail[:14]) for a in fault.actions] == [(SpectateEndReason.ERROR, "internal-error")]
    assert watcher.viewer.receive(mesh.peers[0], SpectateInputs(0, 0, 0, []), mesh.now) == []
    assert watcher.viewer.advance(mesh.now) == (False, [])
