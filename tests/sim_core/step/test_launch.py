"""Launch weapons (spec/simcore.md §5.4 ``launch``, sim_core.step.launch): a release's cost, impulse and
recoil from the spec's formulas, the 15-frame interval and finite ammo, the bullet's own car ignored until
it is clear, a hit's impulse and impact fatigue, the swept hit of a bullet faster than a car is long, the
slide to rest, the wall, the saved pool and its refusals, the specs' refusals and a sync-test; a fluid
bullet's disc (spec §7.4 "Fluids": ``clamp(V/0.002, 1e-4, 0.25)`` m² where it first meets the track, to the
round's end) and what it does to the cars on it."""

from __future__ import annotations

import math

import pytest

from sim_core import World
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.intmath import div_round
from sim_core.specs.inputs import SkillEvent
from sim_core.specs.materials import material
from sim_core.specs.vehicle import LaunchAmmo, WeaponSpec
from sim_core.state.layout import (
    ARC, H, LAT, PR_ARC, PR_CLEARED, PR_H, PR_LAT, PR_RELEASED, PR_STATE, PR_VH, PR_VLAT, PR_VS, PROJECTILE_FLYING,
    PROJECTILE_DEPLOYED, PROJECTILE_GONE, PROJECTILE_HELD, PROJECTILE_RESTING, REMAINING_Q, VS, W_FRAME, P_FATIGUE, part_field,
)
from sim_core.step.contact import impact_fatigue
from sim_core.step.fluids import ACID_PPM_NUM, REACH_UM, disc_reach_sq, fluid_effect
from sim_core.step.launch import CLEAR_UM

from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import FRONT_POLE, car, edited, place, straight_track
from tests.coded import raises_coded

M = 1_000_000
HOLD = {0: [SkillEvent("weapon", True)]}
DART_UG = 2_000_000
BUDGET_MW = 500_000 * 10 // 100  # the weapon slot's 10 % of 500 W at full charge
RELEASE_UJ = BUDGET_MW * 15 * 1000 // 60  # 15 frames of the budget: 12.5 J
CAR_UG = 171_000_000


def launcher(darts=3, offset=(0, 0, -60_000), mass=DART_UG, ammo_material="steel"):
    """The test car with a forward launcher whose darts are held 60 mm ahead of its centre."""
    ammo = tuple(LaunchAmmo(mass, ammo_material, offset) for _ in range(darts))
    return car(weapon=WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE, ammo=ammo))


def dart(w: World, k: int) -> dict[str, int]:
    at = w.launchers.bullets[k].at
    names = ("state", "released", "arc", "lat", "h", "vs", "vlat", "vh", "cleared")
    return dict(zip(names, w._world[at : at + 9], strict=True))


def standing(*arcs, cars=None, vs=0, length_m=10):
    w = World.new(straight_track(length_m), cars or [launcher()] + [car()] * (len(arcs) - 1))
    for slot, arc in enumerate(arcs):
        place(w, slot, arc=arc, lat=0, h=0, vs=vs, vlat=0, vh=0)
    return w


def test_a_release_pays_15_frames_and_launches_the_dart_with_e_times_0_002_over_its_mass():
    """E = 50 W · 15/60 s = 12.5 J: the dart leaves at the car's speed + 0.025 N·s / 2 g = 12.5 m/s, the
    battery pays 15 frames of the budget (750 000 quanta) more than a car that never fires, and the car
    recoils by 0.025 N·s / its mass (both rolling forward at 3 m/s, so that rolling resistance acts the
    same way on both)."""
    plain_car = car(weapon=WeaponSpec("active"))  # the same mass, never held
    armed, plain = standing(2 * M, vs=3 * M), standing(2 * M, cars=[plain_car], vs=3 * M)
    armed.step(HOLD)
    plain.step({})
    first = dart(armed, 0)
    assert first["state"] == PROJECTILE_FLYING and first["released"] == 1
    assert first["vs"] == armed._cars[0][VS] + RELEASE_UJ * 2_000_000 // DART_UG == armed._cars[0][VS] + 12_500_000
    assert plain._cars[0][REMAINING_Q] - armed._cars[0][REMAINING_Q] == BUDGET_MW * 15
    mass = armed.models[0].mechanics(0).mass_ug
    assert abs((armed._cars[0][VS] - plain._cars[0][VS]) + RELEASE_UJ * 2_000_000 / mass) <= 1
    assert [dart(armed, k)["state"] for k in (1, 2)] == [PROJECTILE_HELD] * 2


def test_a_held_launcher_releases_every_15_frames_in_order_until_its_ammo_is_spent():
    """Held for 60 frames: releases at frames 1, 16 and 31, and the frames between and after cost only
    the drive (the same energy as a car that never fires)."""
    w, plain = standing(2 * M), standing(2 * M, cars=[car(weapon=WeaponSpec("active"))])
    used = []
    for _ in range(60):
        before, plain_before = w._cars[0][REMAINING_Q], plain._cars[0][REMAINING_Q]
        w.step(HOLD)
        plain.step({})
        used.append((before - w._cars[0][REMAINING_Q]) - (plain_before - plain._cars[0][REMAINING_Q]))
    assert [dart(w, k)["released"] for k in range(3)] == [1, 16, 31]
    assert [frame + 1 for frame, extra in enumerate(used) if extra] == [1, 16, 31]
    assert all(extra > 0 for extra in (used[0], used[15], used[30]))
    assert not w.launchers.can_release(w._world, 0, 61)


def test_the_dart_ignores_its_own_car_until_it_is_clear_of_it():
    """Held inside the car's box, it is not struck by it; it is clear once more than 1 mm outside."""
    w = standing(2 * M)
    w.step(HOLD)
    first = dart(w, 0)
    assert first["cleared"] == 1 and first["arc"] - w._cars[0][ARC] > 80_000 + CLEAR_UM
    assert first["arc"] - w._cars[0][ARC] == 60_000 + (first["vs"] * 2 + 60) // 120  # its whole first move
    slow = standing(2 * M, cars=[launcher(offset=(0, 0, 0), mass=100_000_000)])  # heavy: 0.25 m/s, 4 mm a frame
    slow.step(HOLD)
    assert dart(slow, 0)["cleared"] == 0 and dart(slow, 0)["vs"] > slow._cars[0][VS]


def test_a_hit_takes_the_impulse_1_plus_e_times_m_eff_times_the_closing_speed():
    """A dart flying at 12.5 m/s into a car 400 mm ahead strikes it in the second frame: both take
    (1 + e)·m_eff·v_close (e = Average of steel's and the body's restitution), the dart bounces back."""
    w = standing(2 * M, 2 * M + 400_000)
    w.step(HOLD)
    dart_vs = dart(w, 0)["vs"]  # unchanged along s in flight over a flat track
    w.step({})
    target, target_vs = w.models[1], _speed_without(2)
    mass = target.mechanics(0).mass_ug
    closing = dart_vs - target_vs
    e = (material("steel").restitution_milli + target.body_restitution) // 2
    impulse = div_round((1000 + e) * closing * DART_UG * mass, 1000 * (DART_UG + mass))
    assert closing > 0 and dart(w, 0)["vs"] == dart_vs - div_round(impulse, DART_UG) < 0
    assert abs((w._cars[1][VS] - target_vs) - impulse / mass) <= 1
    assert dart(w, 0)["arc"] == w._cars[1][ARC] - target.length_um // 2  # put on the face it struck


def _speed_without(frames: int) -> int:
    """The target car's speed after ``frames`` frames when nothing strikes it."""
    w = standing(2 * M, 2 * M + 400_000, cars=[car(), car()])
    for _ in range(frames):
        w.step({})
    return w._cars[1][VS]


def test_a_dart_faster_than_a_car_is_long_still_hits_it():
    """12.5 m/s is 208 mm a frame, more than the 160 mm box: the path is swept, not sampled."""
    w = standing(2 * M, 2 * M + 400_000)
    hits = 0
    for _ in range(4):
        w.step(HOLD if w.frame == 0 else {})
        hits += dart(w, 0)["vs"] < 0
    assert hits and w._cars[1][VS] > _speed_without(4)


def heavy_dart_flying_at_a_body() -> World:
    """Car 0 has fired a 100 g dart; it is put 0.2 m behind car 1, at body height, flying at 112 m/s
    (a launch's speed) straight at it: the next step strikes."""
    w = standing(2 * M, 2 * M + 400_000, cars=[launcher(mass=100_000_000), car()])
    w.step(HOLD)
    at = w.launchers.bullets[0].at
    w._world[at + PR_ARC] = w._cars[1][ARC] - 200_000
    w._world[at + PR_H] = 30_000
    w._world[at + PR_VS], w._world[at + PR_VH] = 112 * M, 0
    edited(w)
    return w


def test_a_fast_heavy_dart_fatigues_the_struck_body_by_the_impact_rule():
    """A 100 g dart at 112 m/s into the target's body: the fatigue added is ``impact_fatigue`` of
    ½·m_eff·v² on the body's face (width × height)."""
    w = heavy_dart_flying_at_a_body()
    target, body = w.models[1], w.models[1].body
    before = w.car_state(1)[f"part[{body}].fatigue_ppm"]
    vs_target = w._cars[1][VS]
    w.step({})
    mass = target.mechanics(0).mass_ug
    closing = 112 * M - vs_target
    m_eff_2 = 100_000_000 * mass
    energy = closing * closing * m_eff_2 // (2 * (100_000_000 + mass))
    strength = (material("pc").yield_strength_kpa, material("pc").ultimate_strength_kpa)
    added, _ = impact_fatigue(energy, target.width_um * target.height_um, strength)
    after = w.car_state(1)[f"part[{body}].fatigue_ppm"]
    assert added > 0 and abs((after - before) - added) <= added // 50 + 1


def test_a_dart_lands_slides_against_friction_and_rests():
    """Fired into the open: it lands without bounce, slows by μ·g/60 a frame (μ = Average of steel and
    asphalt) and rests; a resting dart lies still on the ribbon (a track long enough for the slide)."""
    w = standing(2 * M, length_m=40)
    w.step(HOLD)
    speeds = []
    for _ in range(200):
        w.step({})
        d = dart(w, 0)
        if d["h"] == 0 and d["vh"] == 0 and d["state"] == PROJECTILE_FLYING:
            speeds.append(d["vs"])
        if d["state"] == PROJECTILE_RESTING:
            break
    assert dart(w, 0)["state"] == PROJECTILE_RESTING
    assert (dart(w, 0)["h"], dart(w, 0)["vs"], dart(w, 0)["vlat"], dart(w, 0)["vh"]) == (0, 0, 0, 0)
    mu = w.launchers.bullets[0].friction_milli
    assert mu == (material("steel").friction_milli + material("asphalt").friction_milli) // 2
    slowing = div_round(mu * 9_810_000, 60_000)
    assert len(speeds) > 3 and all(a - b == slowing for a, b in zip(speeds, speeds[1:], strict=False))


def test_a_dart_below_the_wall_top_stops_at_the_wall():
    w = standing(2 * M, cars=[launcher()])
    w.step(HOLD)
    at = w.launchers.bullets[0].at
    w._world[at + PR_LAT], w._world[at + PR_VLAT], w._world[at + PR_VS], w._world[at + PR_H] = 490_000, 3 * M, 0, 0
    w._world[at + PR_VH] = 0
    edited(w)
    w.step({})
    assert (dart(w, 0)["lat"], dart(w, 0)["vlat"]) == (500_000, 0)


@pytest.mark.parametrize("past_start", [False, True])
def test_a_dart_flying_past_an_end_of_a_linear_track_is_gone_and_the_state_still_loads(past_start):
    """Beyond either end of a track that is not a loop there is no ribbon: a dart that flies past one is
    gone, as one that fell 5 m below the ribbon (it used to fly on, held to the last sample's curvature,
    until its values left the ±1 km a saved state is held to and the world's own state no longer loaded)."""
    w = standing(2 * M, cars=[launcher()])
    w.step(HOLD)
    at = w.launchers.bullets[0].at
    end = w.route.length_um
    arc, vs = (30_000, -3 * M) if past_start else (end - 30_000, 3 * M)  # 50 mm a frame: past the end in one
    w._world[at + PR_ARC], w._world[at + PR_LAT], w._world[at + PR_H] = arc, 0, 200_000
    w._world[at + PR_VS], w._world[at + PR_VLAT], w._world[at + PR_VH] = vs, 0, 0
    edited(w)
    w.step({})
    assert dart(w, 0)["state"] == PROJECTILE_GONE and (dart(w, 0)["arc"] < 0 if past_start else dart(w, 0)["arc"] > end)
    data = w.save_state()
    w.step({})
    assert dart(w, 0)["arc"] == w._world[at + PR_ARC]  # a gone dart moves no more
    w.load_state(data)  # the world's own state loads
    assert w.save_state() == data


def test_the_pool_is_saved_and_loaded_and_its_impossible_states_are_refused():
    w = standing(2 * M)
    for _ in range(20):
        w.step(HOLD)
    data = w.save_state()
    other = standing(2 * M)
    other.load_state(data)
    assert other._world == w._world and "world.projectile[2].cleared" in w.field_names()

    def refused(edit):
        broken = standing(2 * M)
        broken.load_state(data)
        edit(broken._world, [b.at for b in broken.launchers.bullets])
        with pytest.raises(SimError) as caught:
            other.load_state(broken.codec.pack(broken._world, broken._cars))
        assert caught.value.code == "state-invalid"

    refused(lambda world, at: world.__setitem__(at[1] + PR_RELEASED, 10))  # 9 frames after the first
    refused(lambda world, at: world.__setitem__(at[0] + PR_STATE, PROJECTILE_HELD))  # held before a released one
    refused(lambda world, at: world.__setitem__(at[2] + PR_ARC, 5))  # a held slot with a value
    refused(lambda world, at: world.__setitem__(at[1] + PR_RELEASED, world[W_FRAME] + 1))  # after the state's frame
    refused(lambda world, at: world.__setitem__(at[0] + PR_STATE, 7))
    refused(lambda world, at: world.__setitem__(at[0] + PR_CLEARED, 2))
    refused(lambda world, at: world.__setitem__(at[0] + PR_VS, 2_000_000_000))
    refused(lambda world, at: (world.__setitem__(at[0] + PR_STATE, PROJECTILE_RESTING),
                               world.__setitem__(at[0] + PR_VS, 1)))


def test_launch_specs_refuse_missing_or_misplaced_ammo():
    bad = [
        WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE),
        WeaponSpec("active", mechanism="push", axis_e6=FRONT_POLE, ammo=(LaunchAmmo(DART_UG, "steel", (0, 0, 0)),)),
        WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE, ammo=(LaunchAmmo(DART_UG, "steel", (0, 0, 0)),) * 9),
        WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE, ammo=(LaunchAmmo(0, "steel", (0, 0, 0)),)),
        WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE, ammo=(LaunchAmmo(DART_UG, "steel", (0, 0, 2 * M)),)),
        WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE, ammo=("dart",)),
    ]
    for weapon in bad:
        with pytest.raises(SimError) as caught:
            car(weapon=weapon)
        assert caught.value.code == "vehicle-invalid-weapon"
    with pytest.raises(SimError) as caught:
        unknown = LaunchAmmo(DART_UG, "unobtainium", (0, 0, 0))
        car(weapon=WeaponSpec("active", mechanism="launch", axis_e6=FRONT_POLE, ammo=(unknown,)))
    assert caught.value.code == "unknown-material"


def test_synctest_passes_with_launchers_firing_in_a_pack():
    w = World.new(circuit_track(), [launcher(), car(), launcher(), car()] * 2, seed=5)
    inputs = RandomInputs([m.chip_skills for m in w.models], 5)
    result = run_synctest(w, 300, 7, inputs.next_frame)
    assert result.ok and result.frames == 300
    assert any(w._world[b.at + PR_STATE] != PROJECTILE_HELD for b in w.launchers.bullets)


def test_no_launcher_no_pool():
    w = World.new(straight_track(), [car()])
    assert w.launchers.slots == 0 and len(w._world) == 8 and not any(n.startswith("world.projectile") for n in w.field_names())


def _spread(fluid: str, mass: int = DART_UG, frames: int = 200):
    """A world whose launcher fired one ``fluid`` bullet at its first frame, stepped until it spread."""
    w = standing(2 * M, cars=[launcher(mass=mass, ammo_material=fluid)])
    w.step(HOLD)
    for _ in range(frames):
        if dart(w, 0)["state"] == PROJECTILE_DEPLOYED:
            return w
        w.step({})
    raise AssertionError(f"the {fluid} bullet never spread: {dart(w, 0)}")


@pytest.mark.parametrize(("mass", "fluid"), [(DART_UG, "oil"), (5_000_000, "water"), (1_000, "acid"),
                                             (100_000_000, "lava")])
def test_a_fluid_bullet_spreads_into_a_disc_of_its_volume_over_2_mm(mass, fluid):
    """Area ``clamp(V/0.002, 1e-4, 0.25)`` m², radius √(area/π): 2 g of oil (2.22 cm³) spreads over 11.1 cm²,
    r = 18.8 mm; 1 mg of acid is held at the least area (1 cm², r = 5.64 mm); 100 g of lava at 0.02 m²."""
    volume_m3 = mass / 1e9 / material(fluid).density_kg_m3
    area_m2 = min(max(volume_m3 / 0.002, 1e-4), 0.25)
    radius_um = math.sqrt(area_m2 / math.pi) * 1e6
    reach = math.isqrt(disc_reach_sq(mass, fluid)) - REACH_UM
    assert abs(reach - radius_um) <= 1
    if fluid == "oil":
        assert round(area_m2 * 1e4, 1) == 11.1 and round(radius_um / 1000, 1) == 18.8
    if fluid == "acid":
        assert area_m2 == 1e-4


def test_a_fluid_bullet_lands_spreads_and_stays_still_to_the_rounds_end():
    """It flies as a dart does, and where it first meets the ribbon it stops: no slide, no bounce; its slot
    keeps the disc's centre, and nothing moves it after."""
    w = _spread("oil")
    spread = dart(w, 0)
    assert (spread["h"], spread["vs"], spread["vlat"], spread["vh"]) == (0, 0, 0, 0)
    assert spread["arc"] > w._cars[0][ARC]  # ahead, where it landed
    for _ in range(120):
        w.step({})
    assert dart(w, 0) == spread
    reach_sq, effect = w.launchers.bullets[0].spread
    assert w.launchers.discs(w._world) == [(spread["arc"], spread["lat"], reach_sq, effect)]


def test_a_fluid_bullet_passes_through_a_car_it_meets():
    """A fluid bullet is a sensor (spec §7.4: fluid sub-meshes are sensors): a car 400 mm ahead is not
    struck, and the bullet flies on."""
    w = standing(2 * M, 2 * M + 400_000, cars=[launcher(ammo_material="water"), car()])
    w.step(HOLD)
    flying = dart(w, 0)["vs"]
    w.step({})
    assert dart(w, 0)["vs"] == flying and w._cars[1][VS] == _speed_without(2)


def test_a_car_on_a_spread_disc_takes_its_fluid_and_one_beside_or_above_it_does_not():
    """The touch: underside within 10 mm of the ribbon and the arc and lateral offset within the radius
    grown by 10 mm; what it does is the fluid's zone effect."""
    w = _spread("oil")
    spread = dart(w, 0)
    discs = w.launchers.discs(w._world)
    reach = math.isqrt(discs[0].reach_sq)
    c = list(w._cars[0])
    for arc, lat, h, touched in [(spread["arc"], spread["lat"], 0, True),
                                 (spread["arc"] + reach, spread["lat"], 0, True),
                                 (spread["arc"] + reach + 1, spread["lat"], 0, False),
                                 (spread["arc"], spread["lat"] - reach, REACH_UM, True),
                                 (spread["arc"], spread["lat"], REACH_UM + 1, False)]:
        c[ARC], c[LAT], c[H] = arc, lat, h
        assert w._frame.fluids.touch(c, discs) == (fluid_effect("oil") if touched else None)


def test_a_car_standing_in_spread_acid_corrodes_by_the_acid_rule():
    """Acid on the body (PC, 65 MPa): ``125e6 // (3·ultimate[kPa])`` ppm of fatigue a frame while the car
    stands in the disc, from the next frame after it spread."""
    w = _spread("acid")
    spread = dart(w, 0)
    target = w.models[0]
    body_at = part_field(target.body, P_FATIGUE)
    place(w, 0, arc=spread["arc"], lat=spread["lat"], h=0, vs=0, vlat=0, vh=0)
    before = w._cars[0][body_at]
    w.step({})
    assert w._cars[0][body_at] - before == ACID_PPM_NUM // (3 * material("pc").ultimate_strength_kpa)


def test_a_spread_disc_is_saved_and_a_solid_or_moving_one_is_refused():
    w = _spread("oil")
    data = w.save_state()
    other = standing(2 * M, cars=[launcher(ammo_material="oil")])
    other.load_state(data)
    assert other._world == w._world
    at = w.launchers.bullets[0].at
    for field, value in [(PR_VS, 1), (PR_H, 5)]:
        broken = list(w._world)
        broken[at + field] = value
        with pytest.raises(SimError) as caught:
            other.load_state(w.codec.pack(broken, w._cars))
        assert caught.value.code == "state-invalid"
    resting = list(w._world)
    resting[at + PR_STATE] = PROJECTILE_RESTING  # a fluid bullet never rests: it spreads
    with raises_coded(SimError, "state-invalid"):
        other.load_state(w.codec.pack(resting, w._cars))
    solid = standing(2 * M)
    solid.step(HOLD)
    spread_solid = list(solid._world)
    b = solid.launchers.bullets[0].at
    spread_solid[b + PR_STATE] = PROJECTILE_DEPLOYED
    spread_solid[b + PR_H] = spread_solid[b + PR_VS] = spread_solid[b + PR_VLAT] = spread_solid[b + PR_VH] = 0
    with raises_coded(SimError, "state-invalid"):
        solid.load_state(solid.codec.pack(spread_solid, solid._cars))


def test_synctest_passes_with_fluid_launchers_spreading_on_the_circuit():
    fluids = ["oil", "acid", "lava", "freezing_fluid"]
    w = World.new(circuit_track(), [launcher(ammo_material=f) for f in fluids] + [car()] * 4, seed=9)
    inputs = RandomInputs([m.chip_skills for m in w.models], 9)
    result = run_synctest(w, 300, 7, inputs.next_frame)
    assert result.ok and result.frames == 300
    assert any(w._world[b.at + PR_STATE] == PROJECTILE_DEPLOYED for b in w.launchers.bullets)
