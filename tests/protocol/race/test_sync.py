"""The sync layer: pre-step states by frame in a ring, rollback without saving the loaded state again,
states kept past the ring for votes, and a peer's snapshot replacing everything."""

import pytest

from protocol.errors import LocalError, ProtocolError
from protocol.race.inputs import STATE_BUFFER_FRAMES
from protocol.race.sync import SyncLayer
from tests.protocol.race.harness import CounterWorld
from tests.coded import raises_coded


class CountingWorld(CounterWorld):
    """A ``CounterWorld`` that counts saves of its own states, (validated) loads and (trusted) restores of
    its own states, and can fail a load with a chosen error."""

    def __init__(self, slots=2):
        super().__init__(slots)
        self.saves = self.loads = self.restores = 0
        self.load_error = None

    def save_own(self):
        self.saves += 1
        return super().save_own()

    def load_state(self, data):
        self.loads += 1
        if self.load_error is not None:
            raise self.load_error
        super().load_state(data)

    def restore_own(self, state):
        self.restores += 1
        super().load_state(state)


def stepped(frames):
    world = CountingWorld()
    sync = SyncLayer(world)
    states = []
    for frame in range(frames):
        states.append(world.save_state())
        sync.step({0: (("boost", False),)} if frame % 3 == 0 else {})
    world.saves = 0
    return world, sync, states


def test_each_step_saves_its_pre_step_state_and_the_ring_keeps_the_newest():
    world, sync, states = stepped(20)
    assert sync.current_frame == world.frame == 20
    assert sync.saved(20) == world.save_state()  # the current frame's is the world's own
    for frame in range(20 - STATE_BUFFER_FRAMES, 20):
        assert sync.saved(frame) == states[frame]
    assert sync.saved(20 - STATE_BUFFER_FRAMES - 1) is None
    with pytest.raises(LocalError) as err:
        sync.state(3)
    assert err.value.code == "race-state-not-saved"


def test_a_rollback_re_steps_from_the_loaded_bytes_without_saving_them_again():
    world, sync, states = stepped(20)
    assert sync.rollback_to(15)
    # the ring's bytes are this world's own: restored without validation, never through load_state
    assert world.frame == sync.current_frame == 15 and world.restores == 1 and world.loads == 0
    saves = world.saves
    sync.step({})
    assert world.saves == saves  # frame 15's state is the ring's already
    sync.step({})
    assert world.saves == saves + 1 and sync.saved(16) != states[16]  # re-stepped with other inputs
    assert sync.saved(15) == states[15]


def test_a_rollback_older_than_the_ring_changes_nothing():
    world, sync, _ = stepped(20)
    assert not sync.rollback_to(20 - STATE_BUFFER_FRAMES - 1)
    assert sync.current_frame == world.frame == 20 and world.loads == world.restores == 0


def test_kept_states_outlive_the_ring_until_released():
    world, sync, states = stepped(5)
    assert sync.keep(3) == states[3]
    for _ in range(2 * STATE_BUFFER_FRAMES):
        sync.step({})
    assert sync.saved(3) is None and sync.kept(3) == states[3]
    sync.release_before(4)
    with pytest.raises(KeyError):
        sync.kept(3)


def test_a_snapshot_replaces_the_world_and_drops_every_saved_state():
    world, sync, states = stepped(30)
    sync.keep(25)
    sync.load_snapshot(states[8], 8)
    assert world.loads == 1 and world.restores == 0  # a peer's bytes: always the validating load
    assert sync.current_frame == world.frame == 8
    assert sync.saved(7) is None and sync.saved(8) == states[8]
    with pytest.raises(KeyError):
        sync.kept(25)


def test_a_refused_snapshot_is_the_peer_s_fault_but_a_local_error_of_the_world_is_not():
    world, sync, states = stepped(30)
    with pytest.raises(ProtocolError) as err:
        sync.load_snapshot(b"not a state", 8)
    assert err.value.code == "race-snapshot-invalid"
    with pytest.raises(ProtocolError) as err:
        sync.load_snapshot(states[16], 8)  # a real state, but of another frame
    assert err.value.code == "race-snapshot-invalid"
    assert sync.current_frame == 30 and sync.saved(29) is not None  # frames did not restart
    world.load_error = LocalError("world-bug", "the world's own bug")
    with raises_coded(LocalError, "world-bug"):
        sync.load_snapshot(states[8], 8)


def test_any_other_exception_of_the_world_is_this_node_s_bug_and_propagates():
    world, sync, states = stepped(30)
    world.load_error = ZeroDivisionError("a bug in the world's loader")
    with pytest.raises(ZeroDivisionError):
        sync.load_snapshot(states[8], 8)
    assert sync.current_frame == 30 and sync.saved(29) is not None  # frames did not restart
