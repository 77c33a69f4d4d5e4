"""Destruction counts (spec/simcore.md §6.5, §8.1): when a part first breaks, the other car whose damage to
it this frame was the largest is credited one destruction; the count is in the saved state, its hash and
the standings. The frame's contribution ledger comes from car-to-car impacts, rotor strikes and bullet
hits (hand-computed cases), never from the track, heat or wear."""

from __future__ import annotations

import pytest

from sim_core.errors import SimError
from sim_core.state.layout import BROKEN_MASK, DESTRUCTIONS, P_FATIGUE, PENALTY_TIMER, car_length, part_field
from sim_core.step.contact import NO_ATTACKER, Credits, add_impact, impact_fatigue, resolve
from sim_core.step.frame import credit_destructions

from tests.sim_core.helpers import edited
from tests.sim_core.step.test_contact import ABS, BODY, BOX, colliders, two_cars, weak_bodies_meet
from tests.sim_core.step.test_launch import heavy_dart_flying_at_a_body
from tests.sim_core.step.test_rotors import facing


def test_a_head_on_hit_credits_each_car_with_the_fatigue_it_caused_the_other():
    """The hard hit of test_contact: E = 2.5e23 on a 100 × 40 mm face is 62.5 MPa, 62.5 / 50 = 1 250 000 ppm
    on each body, caused by the other car (no shear: they do not slide)."""
    cars = two_cars(arc=(0, 100_000), vs=(50_000_000, -50_000_000))
    credits: Credits = {}
    assert resolve(cars, [BOX, BOX], 0, colliders(), credits) == {0: 1 << BODY, 1: 1 << BODY}
    assert impact_fatigue(25 * 10**22, 100_000 * 40_000, ABS) == (1_250_000, False)
    assert credits == {(0, BODY): {1: 1_250_000}, (1, BODY): {0: 1_250_000}}
    for slot in (0, 1):
        credit_destructions(cars, slot, 1 << BODY, credits)
    assert cars[0][DESTRUCTIONS] == cars[1][DESTRUCTIONS] == 1


def test_the_largest_contribution_takes_the_credit_a_tie_the_lower_slot_and_no_ledger_nobody():
    cars = [[0] * car_length(3) for _ in range(4)]
    credits: Credits = {(0, 0): {2: 500, 3: 700}, (0, 1): {3: 400, 1: 400}}
    credit_destructions(cars, 0, 0b111, credits)  # part 2 broke with nobody's damage this frame (heat, say)
    assert [c[DESTRUCTIONS] for c in cars] == [0, 1, 0, 1]


def test_an_impact_without_an_attacker_or_from_the_car_itself_credits_nobody():
    loads: dict[tuple[int, int], list[int]] = {}
    credits: Credits = {}
    energy = 25 * 10**22
    add_impact(loads, 0, BODY, energy, 100_000 * 40_000, ABS, NO_ATTACKER, credits)  # a track entity
    add_impact(loads, 1, BODY, energy, 100_000 * 40_000, ABS, 1, credits)  # its own bullet
    add_impact(loads, 2, BODY, 10**10, 100_000 * 40_000, ABS, 0, credits)  # below the yield: no damage
    assert credits == {} and loads[(0, BODY)][0] == loads[(1, BODY)][0] == 1_250_000


def test_a_rotor_strike_credits_the_spinner_with_the_struck_body_s_fatigue():
    """The fast strike of test_rotors (27.5 krad/s): the struck body's fatigue is the spinner's
    contribution; the aluminium weapon stays under its yield, so the struck car contributes nothing."""
    w = facing(10_000, omega_urad_s=27_500_000_000)
    boxes = [m.mechanics(c[BROKEN_MASK]).contact_box if not c[PENALTY_TIMER] else m.ghost_box
             for m, c in zip(w.models, w._cars, strict=True)]
    credits: Credits = {}
    w.rotors.strike(w._world, w._cars, boxes, w.models, w._frame.colliders, 0, credits)
    body, weapon = w.models[1].body, w.models[0].weapon
    struck = w._cars[1][part_field(body, P_FATIGUE)]
    worn = w._cars[0][part_field(weapon, P_FATIGUE)]
    assert struck > 0 and worn == 0
    assert credits == {(1, body): {0: struck}}


def test_a_dart_that_breaks_a_body_credits_its_shooter_in_the_state_and_the_standings():
    """A 100 g dart at 112 m/s into a body one ppm short of breaking (test_launch's heavy dart): the body
    breaks in that frame and the shooter, car 0, is credited."""
    w = heavy_dart_flying_at_a_body()
    body = w.models[1].body
    w._cars[1][part_field(body, P_FATIGUE)] = 999_999
    edited(w)
    w.step({})
    assert w._cars[1][BROKEN_MASK] >> body & 1
    assert [row["destructions"] for row in sorted(w.standings(), key=lambda row: row["slot"])] == [1, 0]
    assert w.car_state(0)["destructions"] == 1


def test_a_break_through_the_frame_credits_both_cars_and_the_count_is_saved_hashed_and_checked():
    """test_contact's weak bodies (1 kPa) break each other: each car is credited once, in the saved state
    and its hash; a loaded state may not credit more destructions than the other cars have broken parts."""
    w, _ = weak_bodies_meet()
    assert [c[DESTRUCTIONS] for c in w._cars] == [1, 1]
    saved, hashed = w.save_state(), w.state_hash()
    w._cars[0][DESTRUCTIONS] = 0
    edited(w)
    assert w.state_hash() != hashed
    w.load_state(saved)
    assert w.state_hash() == hashed and w._cars[0][DESTRUCTIONS] == 1
    broken_parts = bin(w._cars[1][BROKEN_MASK]).count("1")
    w._cars[0][DESTRUCTIONS] = broken_parts + 1
    edited(w)
    too_many = w.save_state()
    with pytest.raises(SimError) as info:
        w.load_state(too_many)
    assert info.value.code == "state-invalid"

