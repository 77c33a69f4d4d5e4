"""Conveyor belts (spec/simcore.md §7.4 "Entities", spec/assets.md §5.6): the footprint on the ribbon, the
carry toward the belt's speed capped at μ·N by hand, no carry in the air or at the belt's speed, the
specs' refusals, the bake's way into TrackSpec and a sync-test with belts on the circuit."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim_core import World
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.specs.conveyors import ConveyorSpec
from sim_core.specs.materials import material
from sim_core.state.layout import VLAT, VS

from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import belts as circuit_belts
from tests.sim_core.helpers import car, place, straight_track

M = 1_000_000
FORWARD = (0, 0, -M)  # the straight runs along −Z: forward along the route
BOX = ((-400_000, -20_000, -3_000_000), (400_000, 0, -1_000_000))  # under the road around arc 2 m


def belt(direction=FORWARD, speed=M, box=BOX) -> ConveyorSpec:
    return ConveyorSpec(box[0], box[1], direction, speed, "pe")


def after_one_frame(*belts: ConveyorSpec, h=0, vs=0):
    w = World.new(straight_track(conveyors=belts), [car()])
    place(w, 0, arc=2 * M, lat=0, h=h, vs=vs, vlat=0, vh=0)
    w.step({})
    return w


def test_the_footprint_is_the_boxs_projection_on_the_ribbon_grown_by_a_centimetre():
    w = World.new(straight_track(conveyors=(belt(),)), [car()])
    f, = w._frame.conveyors.footprints
    assert (f.arc, f.arc_lo, f.arc_hi, f.lat_lo, f.lat_hi) == (2 * M, -M - 10_000, M + 10_000, -410_000, 410_000)
    assert (f.along, f.across, f.speed) == (M, 0, M)
    c = w._cars[0]
    place(w, 0, arc=3 * M + 10_000, lat=0, h=0)
    assert w._frame.conveyors.belt(0, c) is not None
    place(w, 0, arc=3 * M + 10_001)
    assert w._frame.conveyors.belt(0, c) is None
    place(w, 0, arc=2 * M, h=1)
    assert w._frame.conveyors.belt(0, c) is None  # in the air


def test_a_belt_carries_a_car_at_rest_by_mu_n_at_most():
    """1 m/s forward under a car at rest: m·1 m/s is far above μ·N, so the carry is μ·N, μ the Average of
    rubber's and PE's friction, N = m·g/60 on the flat: the speed after a frame is higher by that over m."""
    carried, plain = after_one_frame(belt()), after_one_frame()
    model = plain.models[0]
    m = model.mechanics(0).mass_ug
    mu = (material("rubber").friction_milli + material("pe").friction_milli) // 2
    normal = m * plain.track.gravity_um_s2 // 60
    cap = normal * mu // 1000
    assert cap < m * M
    assert abs((carried._cars[0][VS] - plain._cars[0][VS]) - cap / m) <= 1


def test_a_sideways_belt_carries_the_car_sideways():
    carried, plain = after_one_frame(belt(direction=(M, 0, 0))), after_one_frame()
    assert carried._cars[0][VLAT] > plain._cars[0][VLAT] == 0


def test_no_carry_in_the_air_or_at_the_belts_speed():
    assert after_one_frame(belt(), h=50_000)._cars[0][VS] == after_one_frame(h=50_000)._cars[0][VS]
    slow = belt(speed=0)  # a still belt holds back a moving car as ground would: it does carry
    assert after_one_frame(slow, vs=M)._cars[0][VS] < after_one_frame(vs=M)._cars[0][VS]


def test_conveyor_specs_refuse_what_no_track_can_hold():
    for bad in (belt(speed=10_000_001), belt(direction=(0, 0, -500_000)), replace(belt(), material="oil"),
                belt(box=((0, 0, 0), (-1, 0, 0)))):
        with pytest.raises(SimError) as caught:
            straight_track(conveyors=(bad,))
        assert caught.value.code == "track-invalid-conveyor"


def test_synctest_passes_with_belts_on_the_circuit_and_they_change_the_race():
    base = circuit_track()
    belts = circuit_belts(base)
    cars = [car()] * 4
    inputs = RandomInputs([("boost", "brake", "swerve_left", "swerve_right")] * 4, 6)  # at most 4 events a frame
    result = run_synctest(World.new(replace(base, conveyors=belts), cars, seed=6), 240, 7, inputs.next_frame)
    assert result.ok and result.frames == 240
    plain, belted = World.new(base, cars, seed=6), World.new(replace(base, conveyors=belts), cars, seed=6)
    for _ in range(240):
        plain.step({})
        belted.step({})
    assert [c[:9] for c in plain._cars] != [c[:9] for c in belted._cars]
