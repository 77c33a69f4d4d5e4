"""Energy ledger, skill budgets/costs/effects, input validation and disable reasons (spec §4.2, §5)."""

import pytest

from sim_core import SkillEvent
from sim_core.errors import SimError
from sim_core.state.layout import BROKEN_MASK, REMAINING_Q, VLAT, VS, VH, H
from sim_core.specs.vehicle import BatterySpec, ChipSlot, WeaponSpec

from tests.sim_core.helpers import car, place, world
from tests.coded import raises_coded

BOOST = SkillEvent("boost", False)


def grounded_world(**car_args):
    w = world(cars=[car(**car_args)])
    place(w, 0, h=0, vh=0)
    return w


def test_drive_of_p_mw_costs_p_quanta_per_frame():
    w = grounded_world()
    initial = w._cars[0][REMAINING_Q]
    assert initial == 100_000_000 * 60
    w.step({})
    assert initial - w._cars[0][REMAINING_Q] == 100_000  # auto_input 100 W = 100 000 mW → 100 000 q


def test_available_output_derates_linearly_with_soc():
    w = grounded_world()
    w._cars[0][REMAINING_Q] = 6_000_000_000 // 10  # 10 % charge: available = 50 W < auto input 100 W
    w.step({})
    assert 600_000_000 - w._cars[0][REMAINING_Q] == 500_000 * 600_000_000 // 6_000_000_000


def test_drive_is_charged_even_when_airborne():
    w = world()  # the start grid lifts cars 5 cm: airborne, no traction
    before = w._cars[0][REMAINING_Q]
    w.step({})
    assert before - w._cars[0][REMAINING_Q] == 100_000 and w._cars[0][VS] == 0


def test_event_boost_costs_60_times_its_effect_and_pushes_the_car():
    plain, boosted = grounded_world(), grounded_world()
    plain.step({})
    boosted.step({0: [BOOST]})
    budget_mw = 500_000 * 20 // 100  # available before the drive × allocation
    cost_q = plain._cars[0][REMAINING_Q] - boosted._cars[0][REMAINING_Q]
    assert cost_q == budget_mw * 3600
    effect_uj = budget_mw * 60 * 1000 // 60  # budget · 60 frames / 60 000 J, in µJ
    effect_q = effect_uj * 60 // 1000  # 1 q = 1/60 mJ
    assert cost_q == 60 * effect_q
    mass = boosted.models[0].mechanics(0).mass_ug
    dv = boosted._cars[0][VS] - plain._cars[0][VS]
    assert abs(dv - effect_uj * 650_000 // mass) <= 1  # K_BOOST = 0.00065 N·s/J


def test_insufficient_energy_scales_effect_and_cost_without_overdraft():
    w = grounded_world(battery=BatterySpec(500_000, 1_000_000))  # initial 6e7 q < full boost cost 3.6e8 q
    plain = grounded_world(battery=BatterySpec(500_000, 1_000_000))
    plain.step({})
    w.step({0: [BOOST]})
    assert w._cars[0][REMAINING_Q] == 0
    granted = 60_000_000 - 100_000
    effect_uj = 100_000 * 60 * 50 * granted // (3 * 100_000 * 3600)
    mass = w.models[0].mechanics(0).mass_ug
    assert abs((w._cars[0][VS] - plain._cars[0][VS]) - effect_uj * 650_000 // mass) <= 1


def test_hold_swerve_costs_one_frame_of_budget_and_pushes_left():
    plain, held = grounded_world(), grounded_world()
    plain.step({})
    held.step({0: [SkillEvent("swerve_left", True)]})
    budget = 500_000 * 10 // 100
    assert plain._cars[0][REMAINING_Q] - held._cars[0][REMAINING_Q] == budget
    mass = held.models[0].mechanics(0).mass_ug
    assert abs(held._cars[0][VLAT] - -(budget * 50 // 3 * 800_000 // mass)) <= 1


def test_jump_lifts_a_grounded_car_and_slam_on_the_ground_is_absorbed():
    w = grounded_world()
    w.step({0: [SkillEvent("jump", False)]})
    assert w._cars[0][VH] > 0 and w._cars[0][H] > 0
    s = grounded_world()
    s.step({0: [SkillEvent("slam", False)]})
    assert s._cars[0][VH] == 0 and s._cars[0][H] == 0


def test_slam_in_the_air_pushes_down():
    plain, slammed = world(), world()
    plain.step({})
    slammed.step({0: [SkillEvent("slam", False)]})
    assert slammed._cars[0][VH] < plain._cars[0][VH]


def test_stabilize_damps_lateral_velocity():
    plain, stable = world(), world()
    for w in (plain, stable):
        w._cars[0][VLAT] = 300_000
    plain.step({})
    stable.step({0: [SkillEvent("stabilize", True)]})
    assert 0 < stable._cars[0][VLAT] < plain._cars[0][VLAT]


def test_passive_weapon_never_costs_and_active_weapon_pays_its_budget():
    passive = grounded_world(weapon=WeaponSpec("passive"))
    active = grounded_world(weapon=WeaponSpec("active"))
    reference = grounded_world(weapon=WeaponSpec("active"))
    reference.step({})
    passive.step({0: [SkillEvent("weapon", True)]})
    active.step({0: [SkillEvent("weapon", True)]})
    assert passive._cars[0][REMAINING_Q] == reference._cars[0][REMAINING_Q]
    assert reference._cars[0][REMAINING_Q] - active._cars[0][REMAINING_Q] == 500_000 * 10 // 100


@pytest.mark.parametrize(
    ("events", "code"),
    [
        ([BOOST] * 2, "input-duplicate-skill"),
        ([SkillEvent("boost", True)], "input-hold-mismatch"),
        ([SkillEvent("stabilize", False)], "input-hold-mismatch"),
        ([SkillEvent("teleport", False)], "input-unknown-skill"),
        ([SkillEvent(s, s in ("swerve_left", "swerve_right", "stabilize")) for s in
          ("boost", "brake", "jump", "slam", "stabilize")], "input-too-many-events"),
    ],
)
def test_invalid_inputs_are_rejected_without_changing_the_state(events, code):
    w = grounded_world()
    before = w.save_state()
    with pytest.raises(SimError) as info:
        w.step({0: events})
    assert info.value.code == code
    assert w.save_state() == before


def test_skill_outside_the_chip_and_unknown_slot_are_rejected():
    w = grounded_world(chip=(ChipSlot("boost", 50),))
    with raises_coded(SimError, "input-skill-not-in-chip"):
        w.step({0: [SkillEvent("jump", False)]})
    with raises_coded(SimError, "input-unknown-slot"):
        w.step({3: []})


def test_disable_reasons_in_spec_order():
    no_chip = world(cars=[car(chip=())])
    assert no_chip.disable_reason(0) == "disallow-chip"
    w = grounded_world()
    assert w.disable_reason(0) is None
    model = w.models[0]
    w._cars[0][BROKEN_MASK] = 1 << model.motor
    assert w.disable_reason(0) == "functional-disabled"
    w._cars[0][BROKEN_MASK] |= 1 << model.chip
    assert w.disable_reason(0) == "chip-broken"


def test_broken_chip_blocks_skills_and_their_cost():
    w = grounded_world()
    w._cars[0][BROKEN_MASK] = 1 << w.models[0].chip
    reference = grounded_world()
    reference._cars[0][BROKEN_MASK] = 1 << reference.models[0].chip
    reference.step({})
    w.step({0: [BOOST]})
    assert w.save_state() == reference.save_state()
