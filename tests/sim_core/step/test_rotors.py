"""Rotor weapons (spec/simcore.md §5.4 ``general_actuated``, sim_core.step.rotors): the target speed
``ω = P·0.1·w/Σw`` on a held frame, coasting without it, a swinging arm's curve, a strike's impulse,
spin loss and impact fatigue worked by hand from ``m_eff = 1/(1/m_A + 1/m_B + ρ²/I)``, the strike's
reach, span and direction, order independence, the saved pool and its refusals, the specs' refusals, a
real GLB rotor from the bake to a race, and a sync-test of rotors in a pack."""

from __future__ import annotations

import hashlib
from fractions import Fraction

import pytest

from sim_core import World
from sim_core.assets.admission import admit
from sim_core.assets.bake import bake
from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.convert import vehicle_from_loadout
from sim_core.assets.demo_round import archetype_loadout
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.specs.inputs import SkillEvent
from sim_core.specs.materials import material
from sim_core.specs.vehicle import RotorSpec, WeaponSpec
from sim_core.state.layout import (
    BROKEN_MASK, P_FATIGUE, PENALTY_KIND, PENALTY_TIMER, RO_OMEGA, RO_PHASE, ROTOR_TURN_URAD, VLAT, VS, part_field,
)
from sim_core.step.contact import impact_fatigue

from tests.sim_core.assets.crafting import spinner_source
from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import FRONT_POLE, car, place, straight_track

M = 1_000_000
HOLD = {0: [SkillEvent("weapon", True)]}
WEAPON_UJ = 500_000 * 10 // 100 * 50 // 3  # 10 % of 500 W at full charge, one frame: 833 333 µJ (P = 50 W)
DISC_UG = 10_000_000
REACH = 20_000
DISC_I = DISC_UG * REACH * REACH // 2  # a 10 g disc of 20 mm: ½·m·r² = 2e15 µg·µm²


def disc(**changes) -> RotorSpec:
    """A horizontal steel disc 10 mm ahead of the test car's nose (its centre 90 mm ahead), turning about up."""
    fields = dict(pivot_um=(0, 0, -90_000), axis_e6=(0, M, 0), mass_ug=DISC_UG, inertia=DISC_I, reach_um=REACH,
                  span_um=(-4_000, 4_000), material="steel")
    fields.update(changes)
    return RotorSpec(**fields)


def spinner(*rotors: RotorSpec):
    return car(weapon=WeaponSpec("active", mechanism="rotor", axis_e6=FRONT_POLE, rotors=rotors or (disc(),)))


def omega(w: World, k: int = 0) -> int:
    return w._world[w.rotors.rotors[k].at + RO_OMEGA]


def phase(w: World, k: int = 0) -> int:
    return w._world[w.rotors.rotors[k].at + RO_PHASE]


def strike(w: World) -> dict[int, int]:
    """One strike pass on the world's current state (what ``Frame.run`` calls after the bullets)."""
    boxes = [m.mechanics(c[BROKEN_MASK]).contact_box if not c[PENALTY_TIMER] else m.ghost_box
             for m, c in zip(w.models, w._cars, strict=True)]
    return w.rotors.strike(w._world, w._cars, boxes, w.models, w._frame.colliders, 0, {})


def facing(gap_um: int, *, lat: int = 0, omega_urad_s: int = 5_000_000, cars=None) -> World:
    """The spinner at arc 0 and a plain car ahead whose rear face is ``gap_um`` from the pivot."""
    w = World.new(straight_track(), cars or [spinner(), car()])
    place(w, 0, arc=2 * M, lat=0, h=0, vs=0, vlat=0, vh=0)
    place(w, 1, arc=2 * M + 90_000 + gap_um + 80_000, lat=lat, h=0, vs=0, vlat=0, vh=0)
    w._world[w.rotors.rotors[0].at + RO_OMEGA] = omega_urad_s
    return w


def test_a_held_frame_turns_each_rotor_at_p_times_0_1_times_its_weight_share():
    """P = 50 W → ω = 5 rad/s for one rotor (E·6 µrad/s: 4 999 998 for the 833 333 µJ granted); weights 1
    and 3 split it 1.25 / 3.75 rad/s."""
    w = World.new(straight_track(), [spinner()])
    w.step(HOLD)
    assert omega(w) == WEAPON_UJ * 6 == 4_999_998
    two = World.new(straight_track(), [spinner(disc(weight_milli=1000), disc(weight_milli=3000, pivot_um=(0, 0, 90_000)))])
    two.step(HOLD)
    assert (omega(two, 0), omega(two, 1)) == (1_249_999, 3_749_998)


def test_without_its_hold_a_rotor_coasts_and_an_unpowered_hold_does_nothing():
    w = World.new(straight_track(), [spinner()])
    w.step(HOLD)
    w.step({})
    w.step({})
    assert omega(w) == 4_999_998  # nothing drives or brakes it but its strikes
    still = World.new(straight_track(), [spinner()])
    still.step({})
    assert omega(still) == 0


def test_a_swinging_arm_follows_its_curve_and_stands_without_its_hold():
    """A 90° linear arm: its phase advances by ω/60 = 83 333 µrad a held frame, its angle is A·φ/π, so its
    speed is A·ω/π = (π/2)·5/π = 2.5 rad/s (to the rounding of a µrad a frame); the sin arm starts at the smoothstep's
    3u² − 2u³, far slower; without the Hold both stand where they are."""
    linear = World.new(straight_track(), [spinner(disc(max_angle_mdeg=90_000, curve="linear"))])
    linear.step(HOLD)
    assert phase(linear) == 83_333
    amplitude = 90_000 * ROTOR_TURN_URAD // 360_000
    assert omega(linear) == amplitude * (83_333 * M // (ROTOR_TURN_URAD // 2)) // M * 60
    assert abs(omega(linear) - 2_500_000) <= 200
    sin = World.new(straight_track(), [spinner(disc(max_angle_mdeg=90_000))])
    sin.step(HOLD)
    u = 83_333 * M // (ROTOR_TURN_URAD // 2)
    assert omega(sin) == amplitude * ((3 * u * u * M - 2 * u * u * u) // (M * M)) // M * 60
    linear.step({})
    assert phase(linear) == 83_333 and omega(linear) == 0


def test_an_arm_starts_at_its_phase_offset_and_turns_back_past_half_a_turn():
    w = World.new(straight_track(), [spinner(disc(max_angle_mdeg=90_000, phase_mdeg=180_000, curve="linear"))])
    assert phase(w) == ROTOR_TURN_URAD // 2 and omega(w) == 0
    w.step(HOLD)
    assert omega(w) < 0  # past half a turn the arm swings back towards 0
    full = World.new(straight_track(), [spinner(disc(phase_mdeg=90_000))])
    assert phase(full) == 0  # a continuous rotor has no phase


def expected_strike(w: World, rho: int, omega_urad_s: int, closing_extra: int = 0) -> tuple[int, int]:
    """The spec's impulse and energy for a strike at lever arm ρ, by exact fractions."""
    m_a, m_b = (w.models[k].mechanics(0).mass_ug for k in (0, 1))
    m_eff = 1 / (Fraction(1, m_a) + Fraction(1, m_b) + Fraction(rho * rho, DISC_I))
    closing = abs(omega_urad_s) * rho // M + closing_extra
    e = Fraction((material("steel").restitution_milli + material("pc").restitution_milli) // 2, 1000)
    return int((1 + e) * m_eff * closing), int(m_eff * closing * closing / 2)


def test_a_strike_pushes_both_cars_along_the_rims_motion_and_slows_the_rotor_by_j_rho_over_i():
    """The car's rear face 10 mm from the pivot: ρ = 10 mm, the rim at 5 rad/s moves 50 mm/s along
    axis × d = up × forward = right (+l). m_eff = 1/(1/181 g + 1/171 g + ρ²/I) ≈ 16.3 g, e = 0.325, so
    j ≈ 1.08e-3 N·s: the struck car gains ≈ 6.3 mm/s to the right, the striking car the opposite, and the
    disc loses j·ρ/I ≈ 5.4 rad/s: a 10 g disc bounces back off a 171 g car."""
    w = facing(10_000)
    impulse, _ = expected_strike(w, 10_000, 5_000_000)
    assert 1_070_000_000_000 < impulse < 1_090_000_000_000
    m_a, m_b = (w.models[k].mechanics(0).mass_ug for k in (0, 1))
    assert strike(w) == {}
    assert w._cars[1][VLAT] == round(Fraction(impulse, m_b)) and w._cars[1][VS] == 0
    assert w._cars[0][VLAT] == round(Fraction(-impulse, m_a))
    assert omega(w) == 5_000_000 - impulse * 10_000 * M // DISC_I < 0


def test_a_rotor_turning_the_other_way_strikes_the_other_way_and_a_moving_car_closes_slower():
    w = facing(10_000, omega_urad_s=-5_000_000)
    strike(w)
    assert w._cars[1][VLAT] < 0 < w._cars[0][VLAT]
    moving = facing(10_000)
    moving._cars[1][VLAT] = 20_000  # already 20 mm/s along the rim's motion: closes at 30 mm/s
    strike(moving)
    impulse, _ = expected_strike(moving, 10_000, 5_000_000, closing_extra=-20_000)
    m_b = moving.models[1].mechanics(0).mass_ug
    assert moving._cars[1][VLAT] == 20_000 + round(Fraction(impulse, m_b))
    fleeing = facing(10_000)
    fleeing._cars[1][VLAT] = 50_000  # as fast as the rim: nothing to strike
    strike(fleeing)
    assert fleeing._cars[1][VLAT] == 50_000 and omega(fleeing) == 5_000_000


def test_a_strike_needs_the_car_within_the_reach_and_the_span():
    for w in (facing(REACH + 1), facing(10_000, lat=REACH + 50_000 + 1)):  # beyond the reach ahead, beside
        strike(w)
        assert w._cars[1][VLAT] == 0 and omega(w) == 5_000_000
    edge = facing(REACH)
    strike(edge)
    assert edge._cars[1][VLAT] > 0
    above = facing(10_000)
    place(above, 1, h=34_001)  # its box's underside 4 mm + 1 µm above the disc's span (pivot 30 mm up, ±4 mm)
    strike(above)
    assert above._cars[1][VLAT] == 0
    level = facing(10_000)
    place(level, 1, h=34_000)
    strike(level)
    assert level._cars[1][VLAT] > 0


def test_no_strike_from_a_still_rotor_a_ghost_a_broken_weapon_or_on_its_own_car():
    still = facing(10_000, omega_urad_s=0)
    strike(still)
    assert still._cars[1][VLAT] == 0
    ghost = facing(10_000)
    ghost._cars[1][PENALTY_KIND], ghost._cars[1][PENALTY_TIMER] = 1, 30
    strike(ghost)
    assert ghost._cars[1][VLAT] == 0
    broken = facing(10_000)
    broken._cars[0][BROKEN_MASK] |= 1 << broken.models[0].weapon
    strike(broken)
    assert broken._cars[1][VLAT] == 0 and omega(broken) == 5_000_000
    alone = World.new(straight_track(), [spinner()])
    alone._world[alone.rotors.rotors[0].at + RO_OMEGA] = 5_000_000
    strike(alone)
    assert omega(alone) == 5_000_000


def test_a_fast_strike_is_impact_fatigue_on_the_struck_part_and_the_weapon():
    """At 27.5 krad/s (a rim at 275 m/s: far beyond what a Hold gives, to reach the yield) the struck
    body's stress is above its yield: its fatigue grows by impact_fatigue(E, area) on the face the rim
    moves into (length × height), and the weapon's by the same energy against its own strength."""
    w = facing(10_000, omega_urad_s=27_500_000_000)
    _, energy = expected_strike(w, 10_000, 27_500_000_000)
    breaks = strike(w)
    area = 160_000 * 60_000
    body = w.models[1].body
    yield_pa = material("pc").yield_strength_kpa, material("pc").ultimate_strength_kpa
    added, at_once = impact_fatigue(energy, area, yield_pa)
    assert 0 < added < 1_000_000 and not at_once and breaks == {}
    assert w._cars[1][part_field(body, P_FATIGUE)] == added
    aluminium = material("aluminum").yield_strength_kpa, material("aluminum").ultimate_strength_kpa
    assert w._cars[0][part_field(w.models[0].weapon, P_FATIGUE)] == impact_fatigue(energy, area, aluminium)[0]


def test_two_rotors_on_one_car_from_both_sides_do_not_depend_on_the_slot_order():
    """Two spinners strike one car from behind and ahead, mirrored (the one behind it turning the other
    way, so both push it right): the order of the slots changes nothing."""
    back = spinner(disc(pivot_um=(0, 0, 90_000)))
    spins = {0: 5_000_000, 2: -5_000_000}
    results = []
    for order in ((0, 1, 2), (2, 1, 0)):
        specs = {0: spinner(), 1: car(), 2: back}
        w = World.new(straight_track(), [specs[k] for k in order])
        arcs = {0: 2 * M, 1: 2 * M + 180_000, 2: 2 * M + 360_000}
        for slot, k in enumerate(order):
            place(w, slot, arc=arcs[k], lat=0, h=0, vs=0, vlat=0, vh=0)
            if k in spins:
                w._world[w.rotors.rotors[w.rotors.ranges[slot][0]].at + RO_OMEGA] = spins[k]
        strike(w)
        results.append({k: (w._cars[slot][VS], w._cars[slot][VLAT]) for slot, k in enumerate(order)})
    assert results[0] == results[1] and results[0][1][1] != 0


def test_rotor_slots_are_saved_and_a_state_out_of_their_range_is_refused():
    w = World.new(straight_track(), [spinner(), spinner(disc(max_angle_mdeg=90_000))])
    assert [n for n in w.field_names() if n.startswith("world.rotor")] == [
        "world.rotor[0].omega_urad_s", "world.rotor[0].phase_urad", "world.rotor[1].omega_urad_s",
        "world.rotor[1].phase_urad"]
    w.step({0: [SkillEvent("weapon", True)], 1: [SkillEvent("weapon", True)]})
    saved = w.save_state()
    again = World.new(straight_track(), [spinner(), spinner(disc(max_angle_mdeg=90_000))])
    again.load_state(saved)
    assert again.state_hash() == w.state_hash() and omega(again, 1) == omega(w, 1) != 0
    for k, field, value in ((0, RO_PHASE, 1), (1, RO_PHASE, ROTOR_TURN_URAD), (1, RO_PHASE, -1),
                            (0, RO_OMEGA, 10 ** 12 + 1)):
        bad = World.new(straight_track(), [spinner(), spinner(disc(max_angle_mdeg=90_000))])
        bad._world[bad.rotors.rotors[k].at + field] = value
        with pytest.raises(SimError) as refused:
            again.load_state(bad.save_state())
        assert refused.value.code == "state-invalid" and "rotor" in str(refused.value)


def test_no_rotor_no_pool():
    w = World.new(straight_track(), [car(weapon=WeaponSpec("active", mechanism="rotor", axis_e6=FRONT_POLE))])
    assert w.rotors.slots == 0 and not any(n.startswith("world.rotor") for n in w.field_names())


@pytest.mark.parametrize("change", [
    {"mass_ug": 0}, {"reach_um": 0}, {"reach_um": 250_001}, {"inertia": 0}, {"inertia": DISC_UG * REACH * REACH + 1},
    {"axis_e6": (0, 0, 0)}, {"pivot_um": (0, 0, 1_000_001)}, {"span_um": (1, 0)}, {"max_angle_mdeg": 999},
    {"phase_mdeg": 360_001}, {"curve": "cubic"}, {"weight_milli": -1}, {"material": 7},
])
def test_a_rotor_out_of_range_is_refused(change):
    with pytest.raises(SimError) as refused:
        spinner(disc(**change))
    assert refused.value.code == "vehicle-invalid-weapon"


def test_only_a_rotor_weapon_has_rotors():
    with pytest.raises(SimError) as refused:
        car(weapon=WeaponSpec("active", mechanism="push", axis_e6=FRONT_POLE, rotors=(disc(),)))
    assert refused.value.code == "vehicle-invalid-weapon"


def spinner_car():
    """The heavy archetype with a real baked rotor weapon (tests/sim_core/assets/crafting.py) in its slot."""
    data = bake(spinner_source())
    admitted = admit(data)
    ref = hashlib.sha256(data).hexdigest()
    loadout = archetype_loadout(2)
    loadout["weapon"] = ref
    return vehicle_from_loadout(loadout, lambda r: admitted if r == ref else admitted_builtin(r), "test:spinner"), admitted


def test_the_bake_measures_a_rotor_and_the_car_carries_it():
    """The spinner's rotor: a 40 × 4 × 8 mm steel bar (10.048 g) on a pivot at its centre, turning about
    +Y: its farthest corner √(20² + 4²) = 20.396 mm from the axis, ±2 mm along it; I between the bar's
    m(a² + b²)/12 and m·r²."""
    vehicle, admitted = spinner_car()
    body = admitted.manifest["weapon"]["actuators"][0]["body"]
    assert body["pivot_um"] == [0, 18_000, -26_000] and body["axis_ppm"] == [0, M, 0]
    assert body["mass_ug"] == 10_048_000 and body["reach_um"] == 20_396 and body["span_um"] == [-2_000, 2_000]
    bar = 10_048_000 * (40_000 ** 2 + 8_000 ** 2) // 12
    assert bar < body["inertia_ug_um2"] < 10_048_000 * 20_396 ** 2 and body["material"] == "steel"
    (rotor,) = vehicle.weapon.rotors
    assert vehicle.weapon.mechanism == "rotor" and rotor.axis_e6 == (0, M, 0) and rotor.reach_um == 20_396
    assert rotor.curve == "linear" and rotor.max_angle_mdeg == 360_000


def test_synctest_passes_with_rotors_striking_in_a_pack():
    """Four real baked spinners, each 10 mm behind a plain car in its lane on the circuit, random inputs:
    rollbacks of 7 frames every frame agree, and the rotors turn and strike: the same race stepped plainly
    ends more than 90 of its 300 frames with a rotor against a car (a strike pass on a copy of that
    frame's state changes the rotors' spin), seen from the state alone, so that the compiled step is
    checked as the sources are."""
    vehicle, _ = spinner_car()

    def pack() -> World:
        w = World.new(circuit_track(), [vehicle, car()] * 4, seed=9)
        for pair in range(4):
            arc, lat = M + pair * 400_000, pair % 2 * 100_000 - 50_000
            place(w, 2 * pair, arc=arc, lat=lat, h=0, vs=0, vlat=0, vh=0)
            place(w, 2 * pair + 1, arc=arc + (vehicle.length_um + 160_000) // 2 + 10_000, lat=lat, h=0, vs=0, vlat=0, vh=0)
        return w

    w = pack()
    inputs = RandomInputs([m.chip_skills for m in w.models], 9)
    result = run_synctest(w, 300, 7, inputs.next_frame)
    assert result.ok and result.frames == 300
    assert all(omega(w, k) for k in range(w.rotors.slots))
    plain, probe = pack(), pack()
    inputs = RandomInputs([m.chip_skills for m in plain.models], 9)
    striking = 0
    for _ in range(300):
        plain.step(inputs.next_frame())
        probe.restore_own(plain.save_own())
        spins = probe.save_own().world
        strike(probe)
        striking += probe.save_own().world != spins
    assert plain.state_hash() == w.state_hash() and striking > 90
