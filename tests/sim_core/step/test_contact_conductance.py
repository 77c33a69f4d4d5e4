"""The tires' contact conductance with the track and the rollers' with the walls in the heat solve
(spec §7.1): H = 2e-5·harmonicMean(√kρc)·area·N_imp, with the reservoir at the air temperature."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim_core.constants import THERMAL_C_TU
from sim_core.errors import SimError
from sim_core.intmath import div_round
from sim_core.specs.materials import material
from sim_core.specs.vehicle import CONTACT_AREA_MAX_UM2, VehicleSpec, baked_part
from sim_core.state.layout import P_TEMP, part_field
from sim_core.step.physics import advance
from sim_core.step.model import CarModel, Contact, contact_factor
from sim_core.step.thermal import _touching, conductance_nw, settle

from tests.sim_core.helpers import M, car, edited, place, straight_track, world

AIR_MC = 20_000
BIG_AREA_UM2 = 40_000_000_000  # 0.04 m² (20 cm × 20 cm) on each tire


def tires_of(spec: VehicleSpec, tire_material: str, area_um2: int) -> VehicleSpec:
    """``spec`` with every tire of ``tire_material`` and contact area ``area_um2`` (µm²)."""
    parts = tuple(dataclasses.replace(p, material=tire_material, contact_area_um2=area_um2) if p.part_type == "tire" else p
                  for p in spec.parts)
    return dataclasses.replace(spec, parts=parts)


def copper_car() -> VehicleSpec:
    """The test car with copper tires (6 g, 1600 mm² exposed) of 0.04 m² contact area each."""
    spec = car()
    parts = tuple(dataclasses.replace(baked_part("tire", 6_000_000, "copper", 1600, slot=p.slot, radius_um=16_000,
                                                 volume_mm3=5000), contact_area_um2=BIG_AREA_UM2)
                  if p.part_type == "tire" else p for p in spec.parts)
    return dataclasses.replace(spec, parts=parts)


STEEL_FLOOR = straight_track(surface_material="magnet_floor")  # k 50 W/(m·K), ρ 7850, c 460
HEAVY_NORMAL = 500_000_000_000_000  # 0.5 N·s per tire in a frame (µg·µm/s): a 12 kg car on four tires


def test_the_spec_formula_by_hand_on_copper_tires():
    """Copper tires of 0.04 m² on a steel floor, each pressed with N = 0.5 N·s in the frame: √kρc =
    35 143.705 (copper: 401·8000·385) and 13 436.890; their harmonic mean 2ab/(a + b) = 19 440.770;
    H = 2e-5 · 19 440.770 · 0.04 · 0.5 = 7.776308e-3 W/°C = 7 776 307 nW/°C (floored)."""
    contact = CarModel(copper_car(), STEEL_FLOOR).mechanics(0).tire_plan[0].contact
    touch = conductance_nw(contact, HEAVY_NORMAL)
    a, b = math.sqrt(401 * 8000 * 385), math.sqrt(50 * 7850 * 460)
    assert abs(touch - 2e-5 * (2 * a * b / (a + b)) * 0.04 * 0.5 * 1e9) <= 1  # factors floored to thousandths
    assert touch == 7_776_307
    assert HEAVY_NORMAL >= contact.from_normal


def test_a_pressed_copper_tire_cools_by_hand():
    """The whole solve by hand: a copper tire at 80 °C, no heat this frame, T' = (C·T + dt·(H_air + H)·T_air)
    / (C + dt·(H_air + H)), here with C = 60000·C [mJ/°C] and the conductances in nW/°C (×1000), rounded
    half up: C = 6 g · 385 = 2310 mJ/°C, H_air = 1600 mm² · 80 = 128 000 µW/°C, H = 7 776 307 nW/°C."""
    model = CarModel(copper_car(), STEEL_FLOOR)
    tire = model.tire_parts[0]
    assert (model.heat_capacity[tire], model.conductance[tire]) == (2310, 128_000)
    at = part_field(tire, P_TEMP)
    temps = []
    for normal in (HEAVY_NORMAL, 0):
        c = world(STEEL_FLOOR, cars=(model.spec,))._cars[0]
        c[at] = 80_000
        settle(c, model, model.mechanics(0), [0] * model.part_count, [(0, 0, normal)], True)
        temps.append(c[at])
    capacity_nw, ambient_nw, h = 1000 * THERMAL_C_TU * 2310, 1000 * 128_000, 7_776_307
    by_hand = Fraction(capacity_nw * 80_000 + (ambient_nw + h) * AIR_MC, capacity_nw + ambient_nw + h)
    assert temps[0] == math.floor(by_hand + Fraction(1, 2)) == 79_941  # 79.941 28 °C
    air_only = Fraction(capacity_nw * 80_000 + ambient_nw * AIR_MC, capacity_nw + ambient_nw)
    assert temps[1] == math.floor(air_only + Fraction(1, 2)) == 79_945  # 79.944 64 °C: off the ground, the air alone


def test_a_conductance_that_floors_to_zero_changes_nothing():
    """Rubber on asphalt under a normal impulse one below ``from_normal``: H = 0 and the tire solves
    exactly as without a contact area, at any temperature, with or without heat."""
    spec = tires_of(car(), "rubber", 648_000_000)
    model, bare = CarModel(spec, straight_track()), CarModel(car(), straight_track())
    contact = model.mechanics(0).tire_plan[0].contact
    below = contact.from_normal - 1
    assert conductance_nw(contact, below) == 0 and conductance_nw(contact, contact.from_normal) == 1
    tire = model.tire_parts[0]
    at = part_field(tire, P_TEMP)
    for temp in (AIR_MC, AIR_MC + 3, 75_000):
        for energy in (0, 10**9):
            touched, plain = world(cars=(spec,))._cars[0], world(cars=(car(),))._cars[0]
            touched[at] = plain[at] = temp
            settle(touched, model, model.mechanics(0), [0] * model.part_count, [(energy, 0, below)], True)
            settle(plain, bare, bare.mechanics(0), [0] * bare.part_count, [(energy, 0, below)], True)
            assert touched == plain


def test_no_contact_without_an_exchange_factor_or_an_area():
    assert material("water").exchange_factor_milli == 0
    model = CarModel(car(), straight_track())  # code-built tires: no contact area
    contact = model.mechanics(0).tire_plan[0].contact
    assert contact.factor == 0


@pytest.mark.parametrize("bad", [-1, CONTACT_AREA_MAX_UM2 + 1, 1.5, True, None])
def test_a_bad_contact_area_is_refused_with_its_code(bad):
    spec = car()
    tire = dataclasses.replace(spec.parts[4], contact_area_um2=bad)
    with pytest.raises(SimError) as exc:
        tire.validate("tire")
    assert exc.value.code == "vehicle-invalid-part"


def test_only_a_tire_or_a_roller_has_a_contact_area():
    roller = next(p for p in car().parts if p.part_type == "roller")
    dataclasses.replace(roller, contact_area_um2=1000).validate("roller")
    body = dataclasses.replace(car().parts[1], contact_area_um2=1000)
    with pytest.raises(SimError) as exc:
        body.validate("body")
    assert exc.value.code == "vehicle-invalid-part"


def copper_roller_car() -> VehicleSpec:
    """The test car with copper rollers (1 g, 300 mm² exposed) of 0.01 m² contact area each."""
    spec = car()
    parts = tuple(dataclasses.replace(baked_part("roller", 1_000_000, "copper", 300, slot=p.slot, radius_um=5_000),
                                      contact_area_um2=10_000_000_000)
                  if p.part_type == "roller" else p for p in spec.parts)
    return dataclasses.replace(spec, parts=parts)


STEEL_WALLS = straight_track(wall_material="magnet_floor")


def test_a_roller_pressed_on_the_wall_cools_by_hand():
    """A car at 1 m/s sideways into the right wall: its two right rollers (FR, RR) share the wall's
    normal impulse and exchange heat with the steel wall; the left ones only with the air. By hand:
    H = 2e-5·harmonicMean(35 143.705, 13 436.890)·0.01 m²·N/2 and the solve as for a tire."""
    w = world(STEEL_WALLS, cars=(copper_roller_car(),))
    model = w.models[0]
    place(w, 0, arc=M, lat=440_000, h=0, vh=0, vs=2_000_000, vlat=1_000_000)
    c = w._cars[0]
    rollers = {model.spec.parts[i].slot: i for i in range(model.part_count) if model.spec.parts[i].part_type == "roller"}
    for part in rollers.values():
        c[part_field(part, P_TEMP)] = 80_000
    edited(w)
    mech = model.mechanics(0)
    _, _, _, wall = advance(list(c), model, mech, w.motion, ())
    right = mech.wall_rollers[1]
    assert wall > 0 and right.live == 2 and [h.part for h, _ in right.touching] == [rollers["FR"], rollers["RR"]]
    a, b = math.sqrt(401 * 8000 * 385), math.sqrt(50 * 7850 * 460)
    spec_h_nw = 2e-5 * (2 * a * b / (a + b)) * 0.01 * (wall // 2 // 10**9) * 1e-6 * 1e9  # N in µN·s, floored
    h = conductance_nw(right.touching[0][1], wall // 2)
    assert abs(h - spec_h_nw) <= 1 and h > 0
    w.step({})
    capacity_nw, ambient_nw = 1000 * THERMAL_C_TU * model.heat_capacity[rollers["FR"]], 1000 * model.conductance[rollers["FR"]]
    touched = Fraction(capacity_nw * 80_000 + (ambient_nw + h) * AIR_MC, capacity_nw + ambient_nw + h)
    air_only = Fraction(capacity_nw * 80_000 + ambient_nw * AIR_MC, capacity_nw + ambient_nw)
    assert [c[part_field(rollers[s], P_TEMP)] for s in ("FR", "RR")] == [math.floor(touched + Fraction(1, 2))] * 2
    assert [c[part_field(rollers[s], P_TEMP)] for s in ("FL", "RL")] == [math.floor(air_only + Fraction(1, 2))] * 2
    assert math.floor(touched + Fraction(1, 2)) < math.floor(air_only + Fraction(1, 2))


def test_a_hit_on_the_left_wall_touches_the_left_rollers():
    w = world(STEEL_WALLS, cars=(copper_roller_car(),))
    place(w, 0, arc=M, lat=-440_000, h=0, vh=0, vs=2_000_000, vlat=-1_000_000)
    model = w.models[0]
    _, _, _, wall = advance(list(w._cars[0]), model, model.mechanics(0), w.motion, ())
    assert wall < 0
    assert {model.spec.parts[h.part].slot for h, _ in model.mechanics(0).wall_rollers[0].touching} == {"FL", "RL"}


FACTOR = st.integers(0, 40_000_000)
AREA = st.integers(0, CONTACT_AREA_MAX_UM2)
NORMAL = st.integers(0, 10**16)


@given(FACTOR, FACTOR, AREA, NORMAL)
def test_the_conductance_is_the_formula_floored_in_machine_words(part, surface, area, normal):
    """H = ⌊⌊N/10⁹⌋·⌊4·e_p·e_s·A / ((e_p + e_s)·10⁸)⌋ / 10⁹⌋ nW/°C: at most the exact 4·e_p·e_s·A·N /
    ((e_p + e_s)·10²⁶), and below it by less than 1 + (its two floors' shares); ``from_normal`` is exactly
    where it first reaches 1."""
    factor, from_normal = contact_factor(part, surface, area)
    contact = Contact(factor, from_normal, 1, 0)
    touch = conductance_nw(contact, normal)
    per_unit = Fraction(4 * part * surface * area, (part + surface) * 10**8) if part + surface else Fraction(0)
    assert factor == math.floor(per_unit)
    assert touch == (normal // 10**9) * factor // 10**9
    exact = per_unit * normal / 10**18
    assert touch <= exact < touch + 1 + per_unit / 10**9 + Fraction(normal, 10**18)
    if factor:
        assert (from_normal // 10**9 - 1) * factor < 10**9 <= (from_normal // 10**9) * factor
        assert conductance_nw(contact, from_normal - 1) == 0 < conductance_nw(contact, from_normal)


@given(st.integers(1, 10**12), st.integers(0, 10**9), st.integers(-273_150, 5_000_000),
       st.integers(-273_150, 5_000_000), st.integers(-10**12, 10**12), st.integers(0, 10**9))
def test_the_touching_solve_is_the_rounded_backward_euler_step(capacity, ambient, temp, air, energy, touch):
    """``_touching`` = div_round(C·T + E + (H_air + H)·T_air, C + H_air + H) in nW/°C (C, H_air, E ×1000), and
    with H = 0 the µW/°C solve's integer."""
    contact = Contact(1, 1, 1000 * (capacity + ambient), 1000 * ambient)
    full = div_round(1000 * capacity * temp + 1000 * energy + (1000 * ambient + touch) * air,
                     1000 * (capacity + ambient) + touch)
    assert _touching(temp, energy, air, touch, contact) == full
    if touch == 0:
        assert full == div_round(capacity * temp + energy + ambient * air, capacity + ambient)
