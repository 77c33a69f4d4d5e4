"""Relative-airflow aero (spec/simcore.md §7.4, §9.1 ``physics/weather-aero``): the spec's aero vector, the
weight cap, wind, the wind's direction convention, and the impulse's way through the route-frame motion."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim_core import World
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest
from sim_core.intmath import isqrt
from sim_core.specs.route import Route
from sim_core.specs.vehicle import AeroSpec, VehicleSpec
from sim_core.state.layout import AIR_FRAMES, H, VH, VLAT, VS
from sim_core.step.aero import aero_impulse, aero_model, weight_cap, wind_vector_um_s
from sim_core.step.model import CarModel
from sim_core.step.physics import TrackContext, advance

from tests.sim_core.helpers import car, straight_track, world

N_S = 10**15  # µg·µm/s per N·s
G = 9_806_650  # µm/s², the default gravity
COPS = ((0, 0, 0),) * 6


def model_of(areas: tuple[int, int, int, int, int, int], lift_milli: int = 0):
    return aero_model(AeroSpec(areas, COPS, lift_milli))


def test_the_spec_aero_vector():
    """§9.1: A = 0.01 m² (the front, −Z), a body moving at 10 m/s toward −Z (forward) in still air,
    lift_factor 0.2: drag 0.01 N·s backward (+Z), downforce 0.002 N·s; the cap (2·m·g) is not hit."""
    front = model_of((0, 0, 0, 0, 0, 10_000_000_000), lift_milli=200)
    cap = weight_cap(200_000_000, G)  # a 200 g car: 2·0.2·9.80665/60 = 0.0654 N·s
    js, jl, jh = aero_impulse(front, -10_000_000, 0, 0, cap)  # air = wind − v = −10 m/s along the tangent
    assert (js, jl, jh) == (-N_S // 100, 0, -2 * N_S // 1000)  # 0.6·0.01·10²/60 = 0.01 N·s; 0.2 of it down
    assert js * js + jh * jh < cap * cap  # forceScale 1


def test_the_sign_of_the_airflow_picks_the_face_it_meets():
    """+X, −X, +Y, −Y, +Z, −Z areas 1..6 (×1e8 µm²): air moving forward (toward −Z) meets the back (+Z),
    backward the front (−Z); to the right (+X) the left side (−X); upward the bottom (−Y)."""
    m = model_of(tuple(k * 100_000_000 for k in range(1, 7)))
    big = 10**30
    one = 10_000_000  # 10 m/s: J = A·v²/1e11 = A·1000
    assert aero_impulse(m, one, 0, 0, big) == (5 * 10**11, 0, 0)
    assert aero_impulse(m, -one, 0, 0, big) == (-6 * 10**11, 0, 0)
    assert aero_impulse(m, 0, one, 0, big) == (0, 2 * 10**11, 0)
    assert aero_impulse(m, 0, -one, 0, big) == (0, -1 * 10**11, 0)
    assert aero_impulse(m, 0, 0, one, big) == (0, 0, 4 * 10**11)
    assert aero_impulse(m, 0, 0, -one, big) == (0, 0, -3 * 10**11)
    assert aero_impulse(m, 0, 0, 0, big) == (0, 0, 0)


def test_lift_takes_the_horizontal_drag_only_and_negative_is_lift():
    """Air 3 m/s backward and 4 m/s to the left and 12 m/s down (|v| = 13 m/s), 1e9 µm² every face:
    drag per axis A·v_axis·13e6/1e11; lift −0.5 of |(s, l)| points up."""
    m = model_of((10**9,) * 6, lift_milli=-500)
    js, jl, jh = aero_impulse(m, -3_000_000, -4_000_000, -12_000_000, 10**30)
    assert (js, jl) == (-390_000_000_000, -520_000_000_000)  # 1e9·3e6·13e6/1e11, and 4e6
    assert jh == -1_560_000_000_000 + 325_000_000_000  # drag 12e6 down; lift 0.5·|(3.9, 5.2)e11| = 3.25e11 up


def test_the_weight_cap_scales_every_axis_alike():
    """A 50 g car in a 30 m/s head wind, A = 0.01 m², lift 0.2: drag 0.09 N·s and downforce 0.018 N·s
    exceed 2·m·g·dt = 2·0.05·9.80665/60 = 0.016344 N·s; both shrink by cap/|J|."""
    cap = weight_cap(50_000_000, G)
    assert cap == 16_344_416_666_666
    m = model_of((0, 0, 0, 0, 0, 10_000_000_000), lift_milli=200)
    js, jl, jh = aero_impulse(m, -30_000_000, 0, 0, cap)
    total = isqrt(90 * 10**24 * 90 + 18 * 10**24 * 18)  # |(−9e13, −1.8e13)| = 1.8e13·√26 = 9.17823512446…e13
    assert total == 91_782_351_244_670
    assert (js, jl, jh) == (-(90 * 10**12 * cap // total), 0, -(18 * 10**12 * cap // total))
    assert (js, jh) == (-16_027_019_138_773, -3_205_403_827_754)  # 0.016027 and 0.003205 N·s
    assert cap * cap - 2 * cap < js * js + jh * jh <= cap * cap


def test_wind_direction_convention_and_integer_trig():
    """0° blows toward +X, 90° toward −Z (spec §7.4), horizontal; no libm: exact at the quarter turns."""
    s = 10_000_000
    assert wind_vector_um_s(s, 0) == (s, 0, 0)
    assert wind_vector_um_s(s, 90_000) == (0, 0, -s)
    assert wind_vector_um_s(s, 180_000) == (-s, 0, 0)
    assert wind_vector_um_s(s, 270_000) == (0, 0, s)
    assert wind_vector_um_s(s, 360_000) == (s, 0, 0)
    assert wind_vector_um_s(s, 30_000) == (8_660_254, 0, -5_000_000)  # cos 30° = 0.8660254038
    assert wind_vector_um_s(s, 45_000) == (7_071_068, 0, -7_071_068)  # 0.7071067812
    assert wind_vector_um_s(30_000_000, 123_456) == (-16_538_893, 0, -25_029_283)  # 30 m/s·(cos, −sin) 123.456°
    for mdeg in range(0, 360_000, 7_919):
        x, _, z = wind_vector_um_s(s, mdeg)
        assert (s - 1) ** 2 <= x * x + z * z <= (s + 1) ** 2


def aero_car(areas=(3_720_000_000, 3_720_000_000, 9_424_000_000, 9_424_000_000, 2_280_000_000, 2_280_000_000),
             lift_milli: int = 0) -> VehicleSpec:
    """The test car with a body aero (by default body-01's areas)."""
    spec = car()
    parts = tuple(replace(p, aero=AeroSpec(areas, COPS, lift_milli)) if p.part_type == "body" else p for p in spec.parts)
    return replace(spec, parts=parts)


def one_frame(spec: VehicleSpec, *, wind=(0, 0, 0), h: int = 0, vs: int = 0, vlat: int = 0, vh: int = 0,
              mask: int = 0) -> list[int]:
    """One ``advance`` of a car on a flat straight track (tangent −Z, right +X, up +Y); its state after."""
    track = straight_track(length_m=20)
    w = world(track, [spec])
    c = list(w._cars[0])
    c[H], c[VS], c[VLAT], c[VH] = h, vs, vlat, vh
    model = CarModel(spec, track)
    ctx = TrackContext(Route(track), True, track.wall_height_um, track.apron_um, wind)
    advance(c, model, model.mechanics(mask), ctx, ())
    return c


def test_airborne_the_aero_impulse_changes_the_velocity_by_j_over_m():
    """A car in the air at 2 m/s forward: with aero its forward speed drops by J/m (div_round), J from
    ``aero_impulse`` (the body-01 front: 2.28e9·2e6·2e6/1e11 = 91 200 000 µg·µm/s)."""
    spec = aero_car()
    plain, aero = one_frame(car(), h=50_000, vs=2_000_000), one_frame(spec, h=50_000, vs=2_000_000)
    mass = spec.total_mass_ug
    assert aero_impulse(CarModel(spec, straight_track()).aero, -2_000_000, 0, 0, 10**30) == (-91_200_000_000, 0, 0)
    assert plain[VS] == 2_000_000
    assert aero[VS] == (2 * (60 * mass * 2_000_000 - 60 * 91_200_000_000) + 60 * mass) // (120 * mass)
    assert aero[VS] < plain[VS]


def test_a_crosswind_is_held_by_the_tires_on_the_ground_and_pushes_a_car_in_the_air():
    """Wind 10 m/s toward +X (0°) is the track's right: grounded, the tires' lateral grip holds it (no
    sideways speed); airborne, it pushes the car right by the left side's drag over the mass."""
    spec = aero_car()
    wind = wind_vector_um_s(10_000_000, 0)
    grounded = one_frame(spec, wind=wind)
    assert grounded[VLAT] == 0 and grounded[AIR_FRAMES] == 0
    flying = one_frame(spec, wind=wind, h=50_000)
    j = 3_720_000_000 * 10_000_000 * 10_000_000 // 10**11  # left side (−X) area, air 10 m/s to the right
    mass = spec.total_mass_ug
    assert flying[VLAT] == (2 * 60 * j + 60 * mass) // (120 * mass) > 0


def test_wind_is_projected_on_each_sample_of_the_route():
    track = straight_track(length_m=5)
    ctx = TrackContext(Route(track), True, track.wall_height_um, track.apron_um, wind_vector_um_s(4_000_000, 90_000))
    assert ctx.wind is not None and set(ctx.wind) == {(4_000_000, 0, 0)}  # toward −Z = along the tangent: a tailwind
    assert TrackContext(Route(track), True, track.wall_height_um, track.apron_um).wind is None


def test_a_broken_body_has_no_aero_and_code_built_cars_have_none():
    spec = aero_car()
    model = CarModel(spec, straight_track())
    assert model.mechanics(0).aero is not None and model.mechanics(1 << model.body).aero is None
    assert CarModel(car(), straight_track()).mechanics(0).aero is None


@pytest.mark.parametrize("aero", [
    AeroSpec((1, 2, 3, 4, 5), COPS),
    AeroSpec((1, 2, 3, 4, 5, -6), COPS),
    AeroSpec((1, 2, 3, 4, 5, 10**12 + 1), COPS),
    AeroSpec((1,) * 6, COPS[:5]),
    AeroSpec((1,) * 6, ((0, 0, 0.5),) * 6),
    AeroSpec((1,) * 6, COPS, 1001),
])
def test_a_bad_aero_spec_is_refused(aero):
    spec = car()
    parts = tuple(replace(p, aero=aero) if p.part_type == "body" else p for p in spec.parts)
    with pytest.raises(SimError) as caught:
        replace(spec, parts=parts)
    assert caught.value.code == "vehicle-invalid-aero"


def test_only_a_body_carries_aero():
    spec = car()
    parts = tuple(replace(p, aero=AeroSpec((1,) * 6, COPS)) if p.part_type == "motor" else p for p in spec.parts)
    with pytest.raises(SimError) as caught:
        replace(spec, parts=parts)
    assert caught.value.code == "vehicle-invalid-aero"


def test_synctest_passes_on_the_demo_round_with_aero_active():
    """The built-in cars' bodies have baked aero (body-03 with downforce): rollback and re-simulation
    give the same states."""
    w = World.demo(cars=3, seed=4)
    assert all(model.aero is not None for model in w.models) and w.models[2].aero.lift_milli == 200
    inputs = RandomInputs([m.chip_skills for m in w.models], 4)
    result = run_synctest(w, 180, 7, inputs.next_frame)
    assert result.ok and result.frames == 180


def test_synctest_passes_in_a_strong_wind_and_the_wind_changes_the_race():
    """The demo round's track declaring a 20 m/s wind toward 45°: the world reads it from
    ``TrackSpec.weather`` (projected on every route sample), rollback and re-simulation still agree, and
    the race differs from the still-air one."""
    def windy(seed: int) -> World:
        still = World.demo(cars=3, seed=seed)
        weather = replace(still.track.weather, wind_speed_um_s=20_000_000, wind_direction_mdeg=45_000)
        w = World.new(replace(still.track, weather=weather), still.vehicles, seed=seed)
        assert w.motion.wind == TrackContext(w.route, True, w.track.wall_height_um, w.track.apron_um,
                                             wind_vector_um_s(20_000_000, 45_000)).wind != still.motion.wind
        return w

    still, w = World.demo(cars=3, seed=5), windy(5)
    for _ in range(120):
        still.step({})
    inputs = RandomInputs([m.chip_skills for m in w.models], 5)
    result = run_synctest(windy(5), 120, 7, inputs.next_frame)
    assert result.ok and result.frames == 120
    for _ in range(120):
        w.step({})
    assert w.state_hash() != still.state_hash()
