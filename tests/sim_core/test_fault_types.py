"""Whose fault a refusal is (docs/sim.md, "Errors"): ``SimError`` judges content and values, which may
be a peer's or a user's; ``LocalError`` is a call the caller's own code got wrong (a wrong type, a call
the world's state does not allow). The two never overlap, so code that answers a ``SimError`` (a room
checking a peer's asset, the control API answering a client) can never swallow a local bug."""

import pytest

from open4wd_base.errors import CodedError, LocalError, PeerError
from sim_core import SkillEvent, World
from sim_core.errors import SimError
from tests.sim_core.helpers import car, code_round, straight_track, world


def test_the_two_families_are_disjoint_and_both_coded():
    assert issubclass(SimError, CodedError) and issubclass(LocalError, CodedError)
    assert not issubclass(LocalError, SimError) and not issubclass(SimError, LocalError)
    assert not issubclass(SimError, PeerError)  # whose content it was is for the caller to say


def _raises_local(code, call):
    with pytest.raises(CodedError) as info:
        call()
    assert type(info.value) is LocalError and info.value.code == code


def _raises_sim(code, call):
    with pytest.raises(CodedError) as info:
        call()
    assert isinstance(info.value, SimError) and info.value.code == code


@pytest.mark.parametrize(
    ("code", "call"),
    [
        ("world-invalid-track", lambda: World.new("track-02", [car()])),
        ("world-invalid-vehicles", lambda: World.new(straight_track(), ["builtin:chassis-01"])),
        ("world-invalid-seed", lambda: World.new(straight_track(), [car()], seed="7")),
        ("world-invalid-seed", lambda: World.new(straight_track(), [car()], seed=True)),
        ("world-invalid-vehicles", lambda: World.demo("8")),
    ],
)
def test_arguments_of_the_wrong_type_are_local_errors(code, call):
    _raises_local(code, call)


@pytest.mark.parametrize(
    ("code", "call"),
    [
        ("world-invalid-vehicles", lambda: World.new(straight_track(), [])),
        ("world-invalid-seed", lambda: World.new(straight_track(), [car()], seed=-1)),
        ("world-invalid-seed", lambda: World.new(straight_track(), [car()], seed=1 << 63)),
        ("world-too-many-cars", lambda: World.new(straight_track(width_um=500_000), [car()] * 3)),
        ("world-invalid-vehicles", lambda: World.demo(0)),
        ("world-too-many-cars", lambda: World.demo(9)),
    ],
)
def test_values_that_do_not_make_a_round_are_sim_errors(code, call):
    _raises_sim(code, call)


@pytest.mark.parametrize(
    ("code", "inputs"),
    [
        ("input-invalid", [(0, [SkillEvent("boost", False)])]),  # not a mapping
        ("input-unknown-slot", {"0": []}),  # a slot is an int
        ("input-invalid", {0: "boost"}),  # events are a list
        ("input-invalid", {0: [("boost", False)]}),  # of SkillEvent
        ("input-invalid", {0: [SkillEvent("boost", 0)]}),  # whose hold is a bool
    ],
)
def test_inputs_of_the_wrong_type_are_local_errors_and_change_nothing(code, inputs):
    w = world()
    before = w.save_state()
    _raises_local(code, lambda: w.step(inputs))
    assert w.save_state() == before


@pytest.mark.parametrize(
    ("code", "inputs"),
    [
        ("input-unknown-slot", {1: []}),
        ("input-unknown-skill", {0: [SkillEvent("teleport", False)]}),
        ("input-hold-mismatch", {0: [SkillEvent("boost", True)]}),
        ("input-duplicate-skill", {0: [SkillEvent("boost", False)] * 2}),
    ],
)
def test_inputs_the_rules_refuse_are_sim_errors(code, inputs):
    w = world()
    before = w.save_state()
    _raises_sim(code, lambda: w.step(inputs))
    assert w.save_state() == before


def test_stepping_an_ended_round_is_a_local_error():
    w = world(straight_track(length_m=500, time_limit_s=60))
    while not w.done:
        w.step({})
    before = w.save_state()
    _raises_local("sim-round-over", lambda: w.step({}))
    assert w.save_state() == before


def test_a_state_that_is_not_bytes_is_a_local_error_and_bad_bytes_a_sim_error():
    w = code_round(2)
    saved = w.save_state()
    _raises_local("state-invalid", lambda: w.load_state(list(saved)))
    _raises_sim("state-invalid", lambda: w.load_state(saved[:-1]))  # a peer's snapshot may be anything
    _raises_sim("state-topology-mismatch", lambda: w.load_state(saved[:8] + bytes(32) + saved[40:]))  # another digest
    assert w.save_state() == saved


@pytest.mark.parametrize("data", ["a state", None, 7, 2.5, [0] * 8, {"state": b""}])
def test_every_door_of_a_state_answers_a_wrong_type_with_a_coded_error(data):
    """What a caller, a peer's snapshot or a file can hand the world never meets a compiled function's own
    type check (a ``TypeError``): the world and the codec are interpreted and judge it first. The compiled
    pass of CI (``.ci/run``) runs this against the installed compiled frame."""
    w = code_round(2)
    saved = w.save_state()
    _raises_local("state-invalid", lambda: w.load_state(data))
    _raises_local("state-not-own", lambda: w.restore_own_state(data))
    _raises_local("state-not-own", lambda: w.restore_own(data))
    _raises_local("state-not-own", lambda: w.pack_own(data))
    if data == [0] * 8:  # a list of eight is too many events before it is events of the wrong type
        _raises_sim("input-too-many-events", lambda: w.step({0: data}))
    else:
        _raises_local("input-invalid", lambda: w.step({0: data}))
    assert w.save_state() == saved
    w.load_state(bytearray(saved))  # any bytes-like copy of a valid state is one
    w.load_state(memoryview(saved))
    assert w.save_state() == saved
