"""Fluid zones (spec/simcore.md §4.3, §7.4, 材質表 §3, §6): how zones combine, where a car touches one, and
each effect against hand computation through the world's frame: the drive at its grip, oil's stickiness,
lava's and freezing fluid's heat, acid's fatigue and the break it causes; the specs' refusals and a
sync-test with every fluid active."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim_core import World
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.specs.fluids import FluidZone
from sim_core.specs.vehicle import MotorSpec
from sim_core.state.layout import BROKEN_MASK, P_FATIGUE, P_TEMP, REMAINING_Q, VH, VLAT, VS, part_field
from sim_core.step.fluids import ACID_PPM_NUM, Fluids

from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import car, edited, fluid_zones, place, straight_track

M = 1_000_000
PUDDLE = ((-500_000, 0, -2_500_000), (500_000, 0, -1_500_000))  # flat, on the road around arc 2 m
POOL = ((-500_000, -100_000, -2_500_000), (500_000, 400_000, -1_500_000))  # 0.5 m deep


def zone(fluid: str, box=PUDDLE) -> FluidZone:
    return FluidZone(box[0], box[1], fluid)


def on_track(*zones: FluidZone, vehicle=None) -> World:
    w = World.new(straight_track(fluids=zones), [vehicle or car()])
    place(w, 0, arc=2 * M, lat=0, h=0, vs=0, vlat=0, vh=0)
    return w


def test_zones_combine_as_the_spec_says():
    """Grip and stickiness: the strongest; heat and acid: they stack."""
    w = on_track(zone("water"), zone("oil"), zone("lava"), zone("freezing_fluid"), zone("acid"), zone("acid"))
    touch = w._frame.fluids.touch(w._cars[0])
    assert touch == (300, 60_000 - 300, 30_000 - 20_000, 2)  # oil's grip 0.3 beats water's 0.5; keep 1 − 0.3/60


def test_a_car_touches_a_puddle_on_the_ground_or_within_a_centimetre_of_it():
    w = on_track(zone("water"))
    fluids: Fluids = w._frame.fluids
    assert fluids.touch(w._cars[0]) is not None
    place(w, 0, h=10_000)
    assert fluids.touch(w._cars[0]) is not None
    place(w, 0, h=10_001)
    assert fluids.touch(w._cars[0]) is None
    place(w, 0, h=0, lat=510_001)  # beyond the puddle's side by more than 1 cm
    assert fluids.touch(w._cars[0]) is None


def test_in_water_the_drive_runs_at_half_its_power_and_the_battery_pays_it_all():
    """Drive at grip·P: the same velocity as a car whose motor takes half the power, on dry road."""
    half = car(motor=MotorSpec(50, 50_000))
    wet, dry, weak = on_track(zone("water")), on_track(), on_track(vehicle=half)
    for w in (wet, dry, weak):
        w.step({})
    assert wet._cars[0][VS] == weak._cars[0][VS] < dry._cars[0][VS]
    assert wet._cars[0][REMAINING_Q] == dry._cars[0][REMAINING_Q] < weak._cars[0][REMAINING_Q]


def test_oil_holds_every_velocity_back_by_three_tenths_per_second():
    """A car in the air inside a deep pool of oil: each velocity is the plain one × (1 − 0.3/60), truncated."""
    oily, plain = on_track(zone("oil", POOL)), on_track()
    for w in (oily, plain):
        place(w, 0, h=200_000, vs=3 * M, vlat=-M, vh=500_000)
        w.step({})
    for axis in (VS, VLAT, VH):
        v = plain._cars[0][axis]
        assert oily._cars[0][axis] == (v * 59_700 // 60_000 if v >= 0 else -(-v * 59_700 // 60_000))


@pytest.mark.parametrize(("fluids", "rate"), [(("lava",), 30_000), (("freezing_fluid",), -20_000),
                                              (("lava", "freezing_fluid"), 10_000)])
def test_lava_and_freezing_fluid_heat_every_part_through_its_solve(fluids, rate):
    """The body (no other heat) after one frame: T' = (60000·C·T + E + H·T_air)/(60000·C + H), rounded,
    with E = C·ΔT/s·dt = 1000·C·rate tu; the chassis alike."""
    w = on_track(*(zone(f) for f in fluids))
    model = w.models[0]
    w.step({})
    for part in (model.body, model.chassis):
        cap, h, air = model.heat_capacity[part], model.conductance[part], model.air_mc
        den = 60_000 * cap + h
        expected = (2 * (60_000 * cap * air + 1000 * cap * rate + h * air) + den) // (2 * den)
        assert w._cars[0][part_field(part, P_TEMP)] == expected != air
    tire = model.tire_parts[0]
    assert (w._cars[0][part_field(tire, P_TEMP)] - model.air_mc) * rate > 0  # the tires too, the same way


def test_acid_adds_fatigue_per_zone_and_breaks_a_part_at_the_end_of_the_frame():
    """ABS chassis (50 MPa): 2.5/50 per s = 833 ppm a frame (floored), twice in two zones; a PC body one
    frame from breaking breaks."""
    w = on_track(zone("acid"), zone("acid"))
    model, c = w.models[0], w._cars[0]
    assert ACID_PPM_NUM // (3 * 50_000) == 833
    c[part_field(model.body, P_FATIGUE)] = 1_000_000 - 100
    edited(w)
    w.step({})
    assert c[part_field(model.chassis, P_FATIGUE)] == 2 * 833
    assert c[BROKEN_MASK] == 1 << model.body and c[part_field(model.body, P_FATIGUE)] == 1_000_000


def test_fluid_specs_refuse_what_no_track_can_hold():
    with pytest.raises(SimError) as caught:
        straight_track(fluids=(FluidZone((0, 0, 0), (1, 1, 1), "asphalt"),))
    assert caught.value.code == "track-invalid-fluid"
    with pytest.raises(SimError) as caught:
        straight_track(fluids=(FluidZone((0, 2, 0), (1, 1, 1), "oil"),))
    assert caught.value.code == "track-invalid-fluid"
    with pytest.raises(SimError) as caught:
        straight_track(fluids=(zone("oil"),) * 257)
    assert caught.value.code == "track-invalid-fluid"


def test_a_rollback_to_a_state_a_fluid_warmed_solves_its_cold_parts_again():
    """Regression (found by the fluid launchers' sync-test): a world whose cars' cold parts are all still
    skips their solve, and a restore of its own bytes trusted that no state it made had one out of its
    band. Lava's heat moves them in a step, so a rollback to that state must solve them again: the
    restored world re-steps exactly as a fresh load of the same bytes does."""
    w = on_track(zone("lava"))
    place(w, 0, arc=1_600_000, vs=M)  # through the lava, then out of it: its cold parts warmed out of their band
    while w._frame.fluids.touch(w._cars[0]) is not None:
        w.step({})
    warm = w.save_state()
    model, c = w.models[0], w._cars[0]
    for part in range(model.part_count):  # back to the air: every cold part still again
        c[part_field(part, P_TEMP)] = model.air_mc
    edited(w)
    w.restore_own_state(warm)
    fresh = on_track(zone("lava"))
    fresh.load_state(warm)
    for world in (w, fresh):
        world.step({})
    assert fresh._frame.fluids.touch(fresh._cars[0]) is None  # the second frame was out of the lava
    assert w.save_state() == fresh.save_state()


def test_synctest_passes_with_every_fluid_on_the_circuit_and_they_change_the_race():
    base = circuit_track()
    zones = fluid_zones(base)
    cars = [car()] * 4

    def build(track):
        return World.new(track, cars, seed=5)

    inputs = RandomInputs([m.chip_skills for m in build(base).models], 5)
    result = run_synctest(build(replace(base, fluids=zones)), 240, 7, inputs.next_frame)
    assert result.ok and result.frames == 240
    plain, wet = build(base), build(replace(base, fluids=zones))
    for _ in range(240):
        plain.step({})
        wet.step({})
    assert [c[:9] for c in plain._cars] != [c[:9] for c in wet._cars]
