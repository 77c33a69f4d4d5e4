"""Magnets (spec/simcore.md §7.4, 算式表 §5): the two force laws against hand computation, the track's
sources and a magnet weapon acting on steel through the world's frame, the weapon's gates, the reaction,
order independence, and rollback determinism with every kind of source active."""

from __future__ import annotations

import pytest

from sim_core import World
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.specs.inputs import SKILLS, SkillEvent
from sim_core.specs.magnets import MagnetPole, MagnetSource
from sim_core.specs.vehicle import WeaponSpec
from sim_core.state.layout import BROKEN_MASK, PENALTY_TIMER, REMAINING_Q, VH
from sim_core.step import magnets
from sim_core.step.magnets import passive_pull, pole_push

from tests.sim_core.helpers import FRONT_POLE, UP_POLE, car, edited, magnet_car, magnet_round, place, steel_car, straight_track

N_S = 10**15  # µg·µm/s per N·s
M = 1_000_000
HOLD = [SkillEvent("weapon", True)]


def test_the_weapon_skill_index_is_the_one_the_magnets_read():
    assert magnets.WEAPON == SKILLS.index("weapon")


def test_a_source_pulls_steel_with_s_chi_k_over_r_squared():
    """10 N, χ 1, 0.1 m: 10·1·0.0008/0.01 = 0.8 N toward the source, 0.8/60 N·s in a frame."""
    j = passive_pull((100_000, 0, 0), 10_000, (0, 0, 0), 1000)
    assert j == (13_333_333_000_000, 0, 0)  # 0.8 N / 60 = 0.013333… N·s, in whole 1e-9 N·s
    assert passive_pull((0, 0, 0), 10_000, (100_000, 0, 0), 1000) == (-13_333_333_000_000, 0, 0)
    # 3-4-5: 0.5 m away, 0.8·0.04 = 0.032 N: 533 333 grains (floored), along (0.6, 0.8) each truncated
    j = passive_pull((300_000, 400_000, 0), 10_000, (0, 0, 0), 1000)
    assert j == (319_999_000_000, 426_666_000_000, 0)
    assert passive_pull((300_000, 400_000, 0), 10_000, (0, 0, 0), 500) == (159_999_000_000, 213_332_000_000, 0)


def test_nothing_acts_closer_than_one_centimetre():
    assert passive_pull((9_999, 0, 0), 10_000, (0, 0, 0), 1000) == (0, 0, 0)
    assert passive_pull((10_000, 0, 0), 10_000, (0, 0, 0), 1000) == (80 * N_S // 60 // 10**6 * 10**6, 0, 0)  # 80 N
    assert pole_push((0, 0, 0, 1000, *UP_POLE), (0, 9_999, 0, 1000, *UP_POLE)) == (0, 0, 0)


def test_two_sources_repel_when_their_poles_point_against_each_other():
    """1 N and 1 N, 0.1 m apart: 1·1·0.0008/0.01 = 0.08 N; poles against each other push apart, alike pull
    together, at right angles nothing."""
    a = (0, 0, 0, 1000, *UP_POLE)
    against = (0, 100_000, 0, 1000, 0, -M, 0)
    assert pole_push(a, against) == (0, 1_333_333_000_000, 0)  # 0.08/60 N·s away from a (+y)
    alike = (0, 100_000, 0, 1000, *UP_POLE)
    assert pole_push(a, alike) == (0, -1_333_333_000_000, 0)
    assert pole_push(a, (0, 100_000, 0, 1000, M, 0, 0)) == (0, 0, 0)


def test_a_track_source_to_the_side_pulls_the_car_sideways():
    """A 10 N floor magnet 0.2 m right of a car's steel (a straight along −Z: right = +X): 0.2 N, all of it
    along the car's right axis."""
    track = straight_track(magnets=(MagnetSource((200_000, 30_000, -2 * M), 10_000, UP_POLE),))
    w = World.new(track, [steel_car()])
    place(w, 0, arc=2 * M, lat=0, h=0)
    assert w._frame.magnets.pulls(w._cars, [()]) == [(0, 3_333_333_000_000, 0)]  # 0.2 N / 60


def test_steel_offsets_are_in_the_cars_frame():
    """Steel 0.05 m ahead of the centre (z = −50 mm) and 0.02 m up sits at arc + 0.05, h + 0.02."""
    track = straight_track(magnets=(MagnetSource((0, 50_000, -2_150_000), 10_000, UP_POLE),))
    w = World.new(track, [steel_car((0, 20_000, -50_000))])
    place(w, 0, arc=2 * M, lat=0, h=0)
    # steel at (0, 30 000 + 20 000, −2 050 000): the source is 0.1 m further along the route
    assert w._frame.magnets.pulls(w._cars, [()]) == [(13_333_333_000_000, 0, 0)]


def test_a_floor_magnet_pulls_an_airborne_car_down_by_its_impulse():
    """A car 0.2 m in the air over a 10 N floor magnet: its vertical velocity after one frame is lower by
    the magnet's impulse over its mass than without the magnet."""
    source = MagnetSource((0, -70_000, -2 * M), 10_000, UP_POLE)
    plain, pulled = (World.new(straight_track(magnets=m), [steel_car()]) for m in ((), (source,)))
    for w in (plain, pulled):
        place(w, 0, arc=2 * M, lat=0, h=200_000, vs=0, vh=0)
    (_, _, jh), = pulled._frame.magnets.pulls(pulled._cars, [()])
    assert jh == passive_pull((0, -70_000, 0), 10_000, (0, 230_000, 0), 1000)[1] < 0  # 0.3 m below
    plain.step({})
    pulled.step({})
    mass = plain.models[0].mechanics(0).mass_ug
    assert abs((pulled._cars[0][VH] - plain._cars[0][VH]) - jh / mass) <= 1


def test_a_held_magnet_weapon_pulls_a_rivals_steel_and_takes_the_reaction():
    """Car 0's weapon: 10 % of 500 W·full charge = 50 W → 1.5 N; car 1's steel 0.4 m to its right:
    1.5·1·0.0008/0.16 = 7.5 mN toward car 0, and car 0 feels the same toward car 1."""
    w = World.new(straight_track(), [magnet_car(), steel_car()])
    place(w, 0, arc=2 * M, lat=-200_000, h=0)
    place(w, 1, arc=2 * M, lat=200_000, h=0)
    assert w._frame.magnets.pulls(w._cars, [(), ()]) is None  # no Hold, no track source: nothing to do
    held = w._frame.magnets.pulls(w._cars, [(magnets.WEAPON,), ()])
    assert held == [(0, 125_000_000_000, 0), (0, -125_000_000_000, 0)]  # 7.5 mN / 60 = 1.25e-4 N·s


def test_the_weapons_field_follows_its_budget_and_its_gates():
    w = World.new(straight_track(), [magnet_car(), steel_car()])
    place(w, 0, arc=2 * M, lat=-200_000, h=0)
    place(w, 1, arc=2 * M, lat=200_000, h=0)
    c = w._cars[0]
    field = w._frame.magnets
    c[REMAINING_Q] = w.models[0].initial_q // 2  # half charge: 25 W → 0.75 N, half the pull
    assert field.pulls(w._cars, [(magnets.WEAPON,), ()])[1] == (0, -62_500_000_000, 0)
    c[REMAINING_Q] = w.models[0].initial_q
    c[PENALTY_TIMER] = 30  # under a penalty: no field
    assert field.pulls(w._cars, [(magnets.WEAPON,), ()]) is None
    c[PENALTY_TIMER] = 0
    c[BROKEN_MASK] = 1 << w.models[0].weapon  # a broken weapon: no field
    assert field.pulls(w._cars, [(magnets.WEAPON,), ()]) is None
    c[BROKEN_MASK] = 1 << w.models[0].chip  # a broken chip fires no skill
    assert field.pulls(w._cars, [(magnets.WEAPON,), ()]) is None
    edited(w)


def test_two_held_magnets_with_alike_poles_pull_together_whatever_the_order():
    """Both 1.5 N, poles alike (both to the front), 0.4 m apart: 1.5·1.5·0.0008/0.16 = 11.25 mN toward each
    other; the result is the same with the slots swapped."""
    def pulls(order):
        w = World.new(straight_track(), [magnet_car(), magnet_car()])
        for slot, lat in zip(order, (-200_000, 200_000), strict=True):
            place(w, slot, arc=2 * M, lat=lat, h=0)
        return w._frame.magnets.pulls(w._cars, [(magnets.WEAPON,), (magnets.WEAPON,)])

    assert pulls((0, 1)) == [(0, 187_500_000_000, 0), (0, -187_500_000_000, 0)]
    assert pulls((1, 0)) == [(0, -187_500_000_000, 0), (0, 187_500_000_000, 0)]


def test_a_weapon_over_a_floor_magnet_is_pushed_by_it():
    """A held weapon pole pointing up 0.1 m above a 1 N floor source pointing up: alike poles on one
    axis attract, 1.5·1·0.0008/0.01 = 0.12 N down."""
    track = straight_track(magnets=(MagnetSource((0, -70_000, -2 * M), 1000, UP_POLE),))
    w = World.new(track, [magnet_car(pole=UP_POLE)])
    place(w, 0, arc=2 * M, lat=0, h=0)
    assert w._frame.magnets.pulls(w._cars, [(magnets.WEAPON,)]) == [(0, 0, -2 * N_S // 1000)]  # 0.12/60


def test_magnet_specs_refuse_what_no_asset_can_hold():
    with pytest.raises(SimError) as caught:
        straight_track(magnets=(MagnetSource((0, 0, 0), 10_001, UP_POLE),))
    assert caught.value.code == "track-invalid-magnet"
    with pytest.raises(SimError) as caught:
        straight_track(magnets=(MagnetSource((0, 0, 0), 1000, (0, 500_000, 0)),))
    assert caught.value.code == "track-invalid-magnet"
    with pytest.raises(SimError) as caught:
        steel_car((0, 0, 2 * M))
    assert caught.value.code == "vehicle-invalid-magnet"
    with pytest.raises(SimError) as caught:
        car(weapon=WeaponSpec("passive", magnet=MagnetPole((0, 0, 0), FRONT_POLE)))
    assert caught.value.code == "vehicle-invalid-magnet"


def test_synctest_passes_with_floor_magnets_weapons_and_steel_all_active():
    """The code-built circuit with 10 N floor magnets along it, magnet weapons (held at random) and steel
    cars: rollback and re-simulation give the same states, and the magnets change the race."""
    w = magnet_round()
    inputs = RandomInputs([m.chip_skills for m in w.models], 3)
    result = run_synctest(w, 240, 7, inputs.next_frame)
    assert result.ok and result.frames == 240
    plain, pulled = magnet_round(magnets=False), magnet_round()
    for _ in range(120):
        plain.step({1: HOLD, 3: HOLD})
        pulled.step({1: HOLD, 3: HOLD})
    assert [c[:9] for c in plain._cars] != [c[:9] for c in pulled._cars]
