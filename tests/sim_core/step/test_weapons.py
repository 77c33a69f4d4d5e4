"""General weapons (spec/simcore.md §5.4): the recoil −axis·E·0.002 of a push or rotor weapon's Hold, a
push's +axis·E·0.002 on the cars touching its front, order independence, the specs' refusals, the
built-ins' mechanisms and a sync-test with pushes."""

from __future__ import annotations

import pytest

from sim_core import World
from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.convert import vehicle_spec
from sim_core.assets.demo_round import archetype_loadout
from sim_core.assets.loadout import assemble
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.specs.inputs import SkillEvent
from sim_core.specs.vehicle import WeaponSpec
from sim_core.state.layout import VLAT, VS
from sim_core.step.contact import ContactBox
from sim_core.step.weapons import PUSH_REACH_UM, push

from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import FRONT_POLE, car, magnet_car, place, straight_track

M = 1_000_000
HOLD = {0: [SkillEvent("weapon", True)]}
WEAPON_UJ = 500_000 * 10 // 100 * 50 // 3  # 10 % of 500 W at full charge, one frame: 833 333 µJ


def pusher(mechanism="push"):
    return car(weapon=WeaponSpec("active", mechanism=mechanism, axis_e6=FRONT_POLE))


def test_a_push_or_rotor_hold_recoils_by_its_effect_times_0_002_along_minus_axis():
    """E = 0.8333 J → 1.667e-3 N·s backward: the car's speed after a frame is lower by J/m (±1 rounding)
    than the same car's whose active weapon has no mechanism."""
    for mechanism in ("push", "rotor"):
        armed, plain = (World.new(straight_track(), [v]) for v in (pusher(mechanism), car(weapon=WeaponSpec("active"))))
        for w in (armed, plain):
            place(w, 0, arc=2 * M, lat=0, h=0, vs=0, vlat=0, vh=0)
            w.step(HOLD)
        recoil = WEAPON_UJ * 2_000_000
        mass = armed.models[0].mechanics(0).mass_ug
        assert abs((armed._cars[0][VS] - plain._cars[0][VS]) + recoil / mass) <= 1


def test_a_magnet_weapon_does_not_recoil():
    """A magnet's Hold has no recoil and no push (spec §5.4); a launcher recoils on its releases
    (tests/sim_core/step/test_launch.py)."""
    w = World.new(straight_track(), [magnet_car()])
    assert w.models[0].recoil_axis is None and not w.models[0].pushes


def box(length=160_000, mass=171_000_000):
    return ContactBox(length, 100_000, 60_000, mass, 400)


def row(*cars):
    """Car lists holding only what ``push`` reads: ARC, LAT, H, VS, VLAT, VH at their layout indices."""
    out = []
    for arc, lat in cars:
        c = [0] * 30
        c[1], c[2] = arc, lat
        out.append(c)
    return out


def test_a_push_moves_the_cars_touching_its_front_and_no_other():
    """Pusher at arc 0 facing +s: a car 160 mm + 5 mm ahead is touched, one 1 µm further is not, one
    behind is not, one beside beyond reach is not; the touched car gains E·0.002 / m along +s."""
    w = World.new(straight_track(), [pusher()] + [car()] * 4)
    reach = 160_000 + PUSH_REACH_UM
    cars = row((0, 0), (reach, 0), (reach + 1, 0), (-160_000, 0), (100_000, 100_000 + PUSH_REACH_UM + 1))
    push(cars, [box()] * 5, w.models, {0: WEAPON_UJ}, 0)
    assert cars[1][VS] == WEAPON_UJ * 2_000_000 // 171_000_000 > 0 and cars[1][VLAT] == 0
    assert [c[VS] for c in cars[2:]] == [0, 0, 0] and cars[0][VS] == 0  # the recoil is the skill's, not here


def test_in_the_frame_a_held_push_speeds_up_the_car_ahead():
    """A car 2 mm ahead of the pusher's nose (not in contact): after a frame of Hold its speed is higher by
    the push over its mass (±1) than after a frame without."""
    def target_speed(inputs):
        w = World.new(straight_track(), [pusher(), car()])
        place(w, 0, arc=2 * M, lat=0, h=0, vs=0, vlat=0, vh=0)
        place(w, 1, arc=2 * M + 162_000, lat=0, h=0, vs=0, vlat=0, vh=0)
        w.step(inputs)
        return w._cars[1][VS], w.models[1].mechanics(0).mass_ug

    (pushed, mass), (alone, _) = target_speed(HOLD), target_speed({})
    assert abs((pushed - alone) - WEAPON_UJ * 2_000_000 / mass) <= 1


def test_two_pushers_nose_to_nose_push_each_other_whatever_their_slots():
    forward, backward = pusher(), car(weapon=WeaponSpec("active", mechanism="push", axis_e6=(0, 0, M)))
    kick = WEAPON_UJ * 2_000_000 // 171_000_000
    cars = row((0, 0), (160_000, 0))
    push(cars, [box(), box()], World.new(straight_track(), [forward, backward]).models, {0: WEAPON_UJ, 1: WEAPON_UJ}, 0)
    swapped = row((160_000, 0), (0, 0))
    push(swapped, [box(), box()], World.new(straight_track(), [backward, forward]).models, {0: WEAPON_UJ, 1: WEAPON_UJ}, 0)
    assert (cars[0][VS], cars[1][VS]) == (-kick, kick) == (swapped[1][VS], swapped[0][VS])


def test_a_push_reaches_across_the_seam_of_a_loop():
    w = World.new(circuit_track(), [pusher(), car()])
    length = w.route.length_um
    cars = row((length - 80_000, 0), (80_000, 0))  # 160 mm apart across the seam
    push(cars, [box(), box()], w.models, {0: WEAPON_UJ}, length)
    assert cars[1][VS] > 0


def test_weapon_specs_refuse_a_mechanism_without_its_axis_or_on_a_passive_weapon():
    for weapon in (WeaponSpec("active", mechanism="push"), WeaponSpec("active", axis_e6=FRONT_POLE),
                   WeaponSpec("passive", mechanism="push", axis_e6=FRONT_POLE),
                   WeaponSpec("active", mechanism="push", axis_e6=(0, 0, 500_000))):
        with pytest.raises(SimError) as caught:
            car(weapon=weapon)
        assert caught.value.code == "vehicle-invalid-weapon"


def test_the_builtin_weapons_carry_their_mechanisms_and_axes():
    def weapon(n):
        findings, assembled = assemble(archetype_loadout(n), admitted_builtin)
        assert assembled is not None, findings
        return vehicle_spec(assembled, f"archetype-{n}").weapon

    assert weapon(1) == WeaponSpec("passive", 50)
    assert (weapon(2).mechanism, weapon(2).axis_e6) == ("magnet", FRONT_POLE)
    assert (weapon(3).mechanism, weapon(3).axis_e6, weapon(3).magnet) == ("launch", FRONT_POLE, None)
    darts = weapon(3).ammo  # three steel darts side by side, held at the launcher's front
    assert len(darts) == 3 and {d.material for d in darts} == {"steel"} and len({d.mass_ug for d in darts}) == 1
    assert [d.offset_um[0] for d in darts] == sorted(d.offset_um[0] for d in darts)


def test_synctest_passes_with_push_weapons_held_in_a_pack():
    w = World.new(circuit_track(), [pusher()] * 6, seed=8)
    inputs = RandomInputs([m.chip_skills for m in w.models], 8)
    result = run_synctest(w, 240, 7, inputs.next_frame)
    assert result.ok and result.frames == 240
