"""Saved state: canonical bytes, atomic validated restore, hashes, golden hashes across processes."""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sim_core.harness.corrupt import nudge
from sim_core import SKILLS, SkillEvent, World
from sim_core.errors import SimError
from sim_core.specs.inputs import HOLD_SKILLS
from sim_core.harness.scripted import RandomInputs
from sim_core.state.codec import HEADER

from tests.sim_core.helpers import code_round, packed
from tests.layout import REPO_ROOT
from tests.coded import raises_coded

GOLDEN_FRAMES = 600
GOLDEN = {  # sim_core/8 (state layout 5; the same saved bodies, frame by frame, as sim_core/7's and /6's:
    # these code-built cars have no tire contact area; the header's digest changed: engine id, PartSpec repr)
    0: "1c965c12f476e81b45e0e4e9ff2d571f31cd49555b28098afde4021a352f25fe",
    7: "a98b7ef62b11290b4b1bd5882525e7ac676021b9950474d425ce99a0eef472b3",
}


def golden_hash(seed: int, frames: int = GOLDEN_FRAMES) -> str:
    world = code_round(8, seed=seed)
    inputs = RandomInputs([m.chip_skills for m in world.models], seed)
    for _ in range(frames):
        world.step(inputs.next_frame())
    return world.state_hash().hex()


@pytest.mark.parametrize("seed", sorted(GOLDEN))
def test_golden_state_hashes(seed):
    assert golden_hash(seed) == GOLDEN[seed]


def test_golden_hashes_hold_in_another_process_with_another_hash_seed():
    code = ("from tests.sim_core.state.test_codec import golden_hash, GOLDEN; import json; "
            "print(json.dumps({s: golden_hash(s) for s in sorted(GOLDEN)}))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=REPO_ROOT)
    assert {int(k): v for k, v in json.loads(out.stdout).items()} == GOLDEN


def demo_hash(frames: int = 120) -> str:
    world = World.demo(cars=8, seed=0)
    inputs = RandomInputs([m.chip_skills for m in world.models], 0)
    for _ in range(frames):
        world.step(inputs.next_frame())
    return world.state_hash().hex()


def rain_hash(frames: int = 730) -> str:
    """Built-in track-03 in the rain with 8 cars, past its second patch spawn (frame 720)."""
    from sim_core.assets.demo_round import builtin_demo_track, builtin_demo_vehicles

    world = World.new(builtin_demo_track("builtin:track-03"), builtin_demo_vehicles(8), seed=3)
    inputs = RandomInputs([m.chip_skills for m in world.models], 3)
    for _ in range(frames):
        world.step(inputs.next_frame())
    assert len(world.weather.active(world._world)) == 2
    return world.state_hash().hex()


def test_the_demo_round_hashes_alike_in_another_process_with_another_hash_seed():
    """World.demo and track-03's rain read the built-in assets; their values change with them, so they
    are compared, not pinned."""
    code = "from tests.sim_core.state.test_codec import demo_hash, rain_hash; print(demo_hash(), rain_hash())"
    env = {**os.environ, "PYTHONHASHSEED": "999"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=REPO_ROOT)
    assert out.stdout.split() == [demo_hash(), rain_hash()]


def test_save_load_save_is_identical_and_hash_covers_the_bytes():
    w = code_round(4)
    for _ in range(30):
        w.step({})
    data = w.save_state()
    assert data[:4] == b"O4WS"
    other = code_round(4)
    other.load_state(data)
    assert packed(other) == data and other.save_state() == data and other.frame == 30
    assert other.state_hash() == w.state_hash()
    w.step({})
    other.step({})
    assert other.save_state() == w.save_state()


def test_different_seeds_give_different_states():
    assert code_round(seed=1).state_hash() != code_round(seed=2).state_hash()


def _corrupt(data: bytes, offset: int, value: bytes) -> bytes:
    return data[:offset] + value + data[offset + len(value):]


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda d: d[:-1], "state-invalid"),
        (lambda d: _corrupt(d, 0, b"XXXX"), "state-invalid"),
        (lambda d: _corrupt(d, 4, b"\x01\x00"), "state-version"),  # sim_core/1's layout
        (lambda d: _corrupt(d, 8, bytes(32)), "state-topology-mismatch"),
        (lambda d: _corrupt(d, HEADER.size + 8, (5).to_bytes(8, "little")), "state-invalid"),  # done = 5
        (lambda d: _corrupt(d, HEADER.size + 64, (9).to_bytes(8, "little")), "state-invalid"),  # car[0].status
        (lambda d: _corrupt(d, HEADER.size + 48, (1).to_bytes(8, "little")), "state-invalid"),  # weather_acc, no patches
        (lambda d: _corrupt(d, HEADER.size + 56, (1).to_bytes(8, "little")), "state-invalid"),  # weather_ordinal
    ],
)
def test_load_rejects_bad_states_atomically(mutate, code):
    w = code_round(2)
    for _ in range(5):
        w.step({})
    before = w.save_state()
    with pytest.raises(SimError) as info:
        w.load_state(mutate(before))
    assert info.value.code == code
    assert w.save_state() == before


def test_state_of_a_world_with_other_cars_is_rejected():
    with raises_coded(SimError, "state-invalid"):
        code_round(3).load_state(code_round(2).save_state())


def test_a_nudge_changes_exactly_one_value():
    w = code_round(2)
    before = w.save_state()
    nudge(w)
    after = w.save_state()
    assert len(before) == len(after) and before != after
    assert w.car_state(0)["lat_um"] == code_round(2).car_state(0)["lat_um"] + 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_valid_input_streams_never_raise_and_round_trip_every_frame(data):
    world = code_round(3)
    chips = [m.chip_skills for m in world.models]
    replica = code_round(3)
    frames = data.draw(st.integers(min_value=1, max_value=40))
    for _ in range(frames):
        frame_inputs = {}
        for slot, chip in enumerate(chips):
            chosen = data.draw(st.lists(st.sampled_from(chip), unique=True, max_size=4))
            if chosen:
                frame_inputs[slot] = [SkillEvent(s, s in HOLD_SKILLS) for s in chosen]
        world.step(frame_inputs)
        saved = world.save_state()
        replica.load_state(saved)
        assert packed(replica) == saved


arbitrary_events = st.lists(
    st.builds(SkillEvent, st.sampled_from(SKILLS + ("teleport",)), st.booleans()), max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.integers(min_value=-1, max_value=3), arbitrary_events, max_size=4))
def test_arbitrary_inputs_either_step_or_raise_a_coded_error_without_side_effects(inputs):
    world = code_round(3)
    before = world.save_state()
    try:
        world.step(inputs)
    except SimError as exc:
        assert exc.code.startswith("input-")
        assert world.save_state() == before
    else:
        assert world.frame == 1
