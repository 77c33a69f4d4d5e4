"""Backward-Euler heat per part, overheating breakage, the damage transaction and tire wear (spec §7.1, §7.3)."""

from functools import partial
from itertools import pairwise

import pytest

from sim_core import SKILLS, SkillEvent
from sim_core.harness.scripted import RandomInputs
from sim_core.specs.inputs import HOLD_SKILLS
from sim_core.step.physics import advance
from sim_core.constants import MAX_TEMPERATURE_MC, MIN_TEMPERATURE_MC, THERMAL_C_TU
from sim_core.intmath import clamp, div_round
from sim_core.step.model import CarModel
from sim_core.state.layout import BROKEN_MASK, P_BREAK_FRAME, P_FATIGUE, P_FATIGUE_REM, P_TEMP, REMAINING_Q, VS, part_field
from sim_core.specs.materials import material
from sim_core.step.thermal import settle

from tests.sim_core.helpers import archetype, car, code_round, edited, place, straight_track, world


def grounded():
    w = world()
    place(w, 0, h=0, vh=0)
    return w


def test_motor_heats_by_its_share_of_drive_power():
    w = grounded()
    model = w.models[0]
    w.step({})
    temp = w._cars[0][part_field(model.motor, P_TEMP)]
    heat_j = 0.2 * 100.0 / 60  # K_MOTOR_HEAT · 100 W for 1/60 s
    capacity_j_per_c = 0.020 * material("steel").specific_heat_j_kgk  # 20 g of steel
    expected_mc = 20_000 + heat_j / capacity_j_per_c * 1000
    assert abs(temp - expected_mc) <= 1
    assert w._cars[0][part_field(model.chassis, P_TEMP)] == 20_000  # no source, at ambient: unchanged


def test_hot_part_cools_toward_ambient_monotonically():
    w = grounded()
    body = part_field(w.models[0].body, P_TEMP)
    w._cars[0][body] = 60_000
    edited(w)
    temps = []
    for _ in range(30):
        w.step({})
        temps.append(w._cars[0][body])
    assert all(20_000 < b < a for a, b in pairwise([60_000] + temps))


def test_overheated_motor_breaks_at_end_of_frame_and_drive_stops_next_frame():
    w = grounded()
    model = w.models[0]
    w._cars[0][part_field(model.motor, P_TEMP)] = material("steel").thermal_limit_mc + 10_000
    w.step({})
    assert w._cars[0][BROKEN_MASK] == 1 << model.motor
    assert w._cars[0][part_field(model.motor, P_BREAK_FRAME)] == 1
    mass_before = model.mechanics(0).mass_ug
    assert model.mechanics(w._cars[0][BROKEN_MASK]).mass_ug == mass_before - model.masses[model.motor]
    energy = w._cars[0][REMAINING_Q]
    w.step({})
    assert w._cars[0][REMAINING_Q] == energy  # no motor: nothing drawn
    assert w.disable_reason(0) == "functional-disabled"


def test_chip_overheat_after_a_full_strength_skill_then_skills_stop():
    hot, reference = grounded(), grounded()
    chip = hot.models[0].chip
    limit = material("pc").thermal_limit_mc
    hot._cars[0][part_field(chip, P_TEMP)] = limit - 1
    reference._cars[0][part_field(chip, P_TEMP)] = limit - 1
    hot.step({0: [SkillEvent("boost", False)]})
    reference.step({0: [SkillEvent("boost", False)]})
    assert hot._cars[0][BROKEN_MASK] == 1 << chip
    cold = grounded()
    cold.step({0: [SkillEvent("boost", False)]})
    assert hot._cars[0][VS] == cold._cars[0][VS]  # the triggering boost ran at full strength
    energy = hot._cars[0][REMAINING_Q]
    hot.step({0: [SkillEvent("boost", False)]})
    assert energy - hot._cars[0][REMAINING_Q] == 100_000  # only the drive


def test_chassis_break_retires_the_car():
    w = grounded()
    model = w.models[0]
    w._cars[0][part_field(model.chassis, P_TEMP)] = material("abs").thermal_limit_mc + 5_000
    edited(w)
    w.step({})
    assert w.standings()[0]["status"] == "retired"
    assert w.disable_reason(0) == "physics-retired"
    before = w.car_state(0)
    w.step({})
    assert w.car_state(0) == before and w.frame == 2  # removed from physics: nothing about it changes
    assert before["retired_frame"] == 1


def test_tire_wear_is_exact_and_grows_with_temperature():
    w = grounded()
    model = w.models[0]
    tire = model.tire_parts[0]
    capacity = model.wear_capacity[tire]
    assert capacity == 5000 * 25_000 // 1000  # 5000 mm³ of rubber, 25 MPa
    c = w._cars[0]
    heat = [0] * model.part_count
    wear = [(0, 5_000_000 * 10**12, 0)]  # 5 000 000 nJ on each tire of the car's one tire group
    settle(c, model, model.mechanics(0), heat, wear, True)
    assert (c[part_field(tire, P_FATIGUE)], c[part_field(tire, P_FATIGUE_REM)]) == (40, 0)
    limit = material("rubber").thermal_limit_mc
    c[part_field(tire, P_TEMP)] = 20_000 + (limit - 20_000) // 2  # r = 0.5 → ×(1 + 2·0.25) = ×1.5
    settle(c, model, model.mechanics(0), heat, wear, True)
    assert c[part_field(tire, P_FATIGUE)] >= 40 + 59


def test_sub_ppm_wear_accumulates_in_the_remainder():
    w = grounded()
    model = w.models[0]
    tire = model.tire_parts[0]
    c = w._cars[0]
    wear = [(0, 1_000 * 10**12, 0)]  # 1000 nJ = 0.008 ppm on each tire
    for _ in range(125):
        settle(c, model, model.mechanics(0), [0] * model.part_count, wear, True)
    assert c[part_field(tire, P_FATIGUE)] == 1 and c[part_field(tire, P_FATIGUE_REM)] == 0


def test_rolling_tires_wear_while_driving():
    w = grounded()
    for _ in range(120):
        w.step({})
    tire = w.models[0].tire_parts[0]
    assert w._cars[0][part_field(tire, P_FATIGUE_REM)] > 0


def test_the_physics_heats_and_wears_only_the_heated_parts():
    """The thermal pass visits only ``CarModel.heated_parts`` while the other parts sit in their still
    bands: this holds only if the physics never heats any other part (wear is only ever given to tire
    groups)."""
    w = code_round(8, seed=3)
    inputs = RandomInputs([m.chip_skills for m in w.models], 3)
    touched: set[tuple[int, int]] = set()
    for _ in range(600):
        skills = w._validated(inputs.next_frame())
        for slot, (c, model) in enumerate(zip(w._cars, w.models, strict=True)):
            mech = model.mechanics(c[BROKEN_MASK])
            heat, loads, _, _ = advance(list(c), model, mech, w.motion, skills[slot])
            assert not any(heat[t] for t in model.tire_parts)  # tire heat and wear go by tire group
            parts = {p for p, h in enumerate(heat) if h} | {
                part for (h, e, _), plan in zip(loads, mech.tire_plan, strict=True) if h or e for part, *_ in plan.tires}
            assert parts <= set(model.heated_parts), (slot, parts)
            touched |= {(slot, p) for p in parts}
        w.step({slot: [SkillEvent(SKILLS[k], SKILLS[k] in HOLD_SKILLS) for k in ks] for slot, ks in enumerate(skills) if ks})
    models = w.models
    assert any(p == models[s].motor for s, p in touched) and any(p in models[s].tire_parts for s, p in touched)
    assert any(p == models[s].chip for s, p in touched)  # skills heat the chip


def solve_without_heat(capacity: int, conductance: int, air_mc: int, temp: int) -> int:
    """The backward-Euler solve with E = 0 as the rules write it (module docstring of thermal.py)."""
    return clamp(div_round(capacity * temp + conductance * air_mc, capacity + conductance),
                 MIN_TEMPERATURE_MC, MAX_TEMPERATURE_MC)


@pytest.mark.parametrize("air_mc", [20_000, -30_000, 40_000])
def test_a_part_without_heat_is_skipped_exactly_where_the_solve_would_hold_it(air_mc):
    """``PartHeat.still_low..still_high`` against the solve as the rules write it (div_round, clamp):
    inside the band the solve returns the same temperature and nothing breaks; one step outside it (where
    neither the clamp range nor the limit cut the band) the solve moves the temperature."""
    track = straight_track(air_temperature_mc=air_mc)
    for spec in [car(), *(archetype(slot) for slot in range(3))]:
        model = CarModel(spec, track)
        mech = model.mechanics(0)
        bands = [(p.part, p.still_low, p.still_high, p.limit) for p in mech.heated_plan + mech.cold_plan] + [
            (part, g.still_low, g.still_high, g.limit) for g in mech.tire_plan for part, *_ in g.tires]
        assert {part for part, *_ in bands} == set(range(model.part_count))
        for part, still_low, still_high, limit in bands:
            capacity = THERMAL_C_TU * model.heat_capacity[part]
            conductance = model.conductance[part]
            solve = partial(solve_without_heat, capacity, conductance, air_mc)
            assert still_low <= air_mc <= still_high or (limit is not None and limit < air_mc)
            for edge in (still_low, still_high, air_mc):
                for temp in range(edge - 3, edge + 4):
                    inside = still_low <= temp <= still_high
                    if inside:
                        assert solve(temp) == temp and (limit is None or temp <= limit)
                    elif (temp == still_low - 1 and temp >= MIN_TEMPERATURE_MC) or (
                            temp == still_high + 1 and still_high not in (limit, MAX_TEMPERATURE_MC)):
                        assert solve(temp) != temp, (spec.vehicle_id, part, temp)
