"""TrackSpec and VehicleSpec validation: each rule rejects with its stable code."""

from dataclasses import replace

import pytest

from open4wd_base.errors import LocalError
from sim_core.errors import SimError
from sim_core.specs.track import Box, RoutePoint, TrackSpec
from sim_core.specs.vehicle import BatterySpec, ChipSlot, MotorSpec, VehicleSpec, WeaponSpec, baked_part
from tests.coded import raises_coded

FWD = (0, 0, -1_000_000)
UP = (0, 1_000_000, 0)


def straight(**overrides):
    route = (RoutePoint((0, 0, 0), FWD, UP, 1_000_000), RoutePoint((0, 0, -5_000_000), FWD, UP, 1_000_000))
    return TrackSpec(**{"track_id": "t", "track_type": "fixed", "route": route, "surface_material": "asphalt", **overrides})


def car(**overrides):
    parts = [
        baked_part("chassis", 40_000_000, "abs", 8000),
        baked_part("body", 30_000_000, "abs", 9000),
        baked_part("motor", 20_000_000, "steel", 2000),
        baked_part("battery", 50_000_000, "aluminum", 3000),
        *(baked_part("tire", 8_000_000, "rubber", 1500, slot=s, radius_um=16_000, volume_mm3=7000)
          for s in ("RR", "FL", "RL", "FR")),
        baked_part("roller", 1_000_000, "pe", 200, slot="FL", radius_um=5_000),
        baked_part("chip", 2_000_000, "pc", 400),
    ]
    fields = {
        "vehicle_id": "v", "parts": tuple(parts), "motor": MotorSpec(50, 150_000),
        "battery": BatterySpec(300_000, 2_000_000), "length_um": 160_000, "width_um": 100_000, "height_um": 60_000,
        "chip_slots": (ChipSlot("boost", 50), ChipSlot("swerve_left", 20)),
    }
    fields.update(overrides)
    return VehicleSpec(**fields)


def test_valid_specs_build():
    track = straight()
    assert track.effective_lap_mode == "linear" and track.player_capacity == 5
    vehicle = car()
    assert [p.part_type for p in vehicle.parts][:4] == ["chassis", "body", "motor", "battery"]
    assert [p.slot for p in vehicle.parts if p.part_type == "tire"] == ["FL", "FR", "RL", "RR"]
    assert vehicle.total_mass_ug == 175_000_000


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"track_type": "maze"}, "track-invalid-type"),
        ({"lap_mode": "loop"}, "track-invalid-lap-mode"),
        ({"lap_count": 0}, "track-invalid-lap-count"),
        ({"gravity_um_s2": 100}, "track-invalid-gravity"),
        ({"gravity_dir_e6": (0, -5, 0)}, "track-invalid-vector"),
        ({"surface_material": "nope"}, "unknown-material"),
        ({"time_limit_s": 10}, "track-invalid-time-limit"),
        ({"checkpoints": (Box((0, 0, 0), (0, 1, 1)),)}, "track-invalid-box"),
        ({"aabb_min_um": (0, 0, 0)}, "track-invalid-aabb"),
    ],
)
def test_track_rules(overrides, code):
    with pytest.raises(SimError) as info:
        straight(**overrides)
    assert info.value.code == code


def test_track_start_too_narrow_and_spacing():
    narrow = (RoutePoint((0, 0, 0), FWD, UP, 300_000), RoutePoint((0, 0, -5_000_000), FWD, UP, 300_000))
    with raises_coded(SimError, "track-start-too-narrow"):
        straight(route=narrow)
    close = (RoutePoint((0, 0, 0), FWD, UP, 1_000_000), RoutePoint((0, 0, -50_000), FWD, UP, 1_000_000))
    with raises_coded(SimError, "track-invalid-route"):
        straight(route=close)


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"chip_slots": (ChipSlot("boost", 60), ChipSlot("brake", 50))}, "vehicle-invalid-chip"),
        ({"chip_slots": (ChipSlot("fly", 10),)}, "vehicle-invalid-chip"),
        ({"motor": MotorSpec(101, 1)}, "vehicle-invalid-energy"),
        ({"battery": BatterySpec(0, 1)}, "vehicle-invalid-energy"),
        ({"length_um": 300_000}, "vehicle-aabb-too-large"),
        ({"weapon": WeaponSpec("passive")}, "vehicle-invalid-weapon"),
    ],
)
def test_vehicle_rules(overrides, code):
    with pytest.raises(SimError) as info:
        car(**overrides)
    assert info.value.code == code


def test_vehicle_part_counts_and_mass():
    base = car()
    without_tire = tuple(p for p in base.parts if p.slot != "RR" or p.part_type != "tire")
    with raises_coded(SimError, "vehicle-missing-part"):
        car(parts=without_tire)
    heavy = tuple(replace(p, mass_ug=400_000_000) if p.part_type == "body" else p for p in base.parts)
    with raises_coded(SimError, "vehicle-mass-out-of-range"):
        car(parts=heavy)


def test_passive_weapon_reduces_weapon_mass():
    weapon = baked_part("weapon", 20_000_000, "steel", 1000)
    vehicle = car(parts=(*car().parts, weapon), weapon=WeaponSpec("passive", 77),
                  chip_slots=(ChipSlot("boost", 0 + 50), ChipSlot("weapon", 50)))
    # 50 % allocation × 77 % split × 30 / 100 = 1155 → 11.55 % lighter
    assert vehicle.passive_mass_reduction_x100 == 1155
    assert vehicle.effective_masses_ug[-1] == 20_000_000 * (10_000 - 1155) // 10_000


def test_world_new_rejects_bad_arguments():
    from sim_core import World

    with raises_coded(LocalError, "world-invalid-track"):  # a wrong type is the caller's bug
        World.new("track", [car()])
    with raises_coded(SimError, "world-invalid-vehicles"):
        World.new(straight(), [])
    with raises_coded(SimError, "world-invalid-seed"):
        World.new(straight(), [car()], seed=-1)
    with raises_coded(SimError, "world-too-many-cars"):
        World.new(straight(), [car()] * 6)  # 1 m wide RP1: 5 slots
