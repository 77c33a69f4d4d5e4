"""Small tracks and cars for focused simulation tests."""

from __future__ import annotations

from dataclasses import replace

from sim_core import World
from sim_core.state.layout import ARC, ARMED, H, LAT, PREV_X, PREV_Y, PREV_Z, VH, VLAT, VS
from sim_core.specs.track import Box, RespawnPoint, RoutePoint, TrackSpec
from sim_core.specs.conveyors import ConveyorSpec
from sim_core.specs.fluids import FluidZone
from sim_core.specs.magnets import MagnetPole, MagnetSource, SteelPoint
from sim_core.specs.vehicle import BatterySpec, ChipSlot, MotorSpec, VehicleSpec, WeaponSpec, baked_part

M = 1_000_000
FWD = (0, 0, -M)
UP = (0, M, 0)
UP_POLE = UP
FRONT_POLE = FWD  # a weapon's Axis +Z points to the vehicle front (−Z)
ALL_SKILLS = (
    ChipSlot("boost", 20), ChipSlot("brake", 10), ChipSlot("swerve_left", 10), ChipSlot("swerve_right", 10),
    ChipSlot("jump", 20), ChipSlot("slam", 10), ChipSlot("stabilize", 10), ChipSlot("weapon", 10),
)


def straight_track(length_m: int = 10, width_um: int = 1_000_000, **overrides) -> TrackSpec:
    """A flat fixed linear track along −Z from z = 0 to z = −length."""
    route = (RoutePoint((0, 0, 0), FWD, UP, width_um), RoutePoint((0, 0, -length_m * M), FWD, UP, width_um))
    fields = {"track_id": "test:straight", "track_type": "fixed", "route": route, "surface_material": "asphalt"}
    fields.update(overrides)
    return TrackSpec(**fields)


TEST_MOTOR = MotorSpec(50, 100_000)
TEST_BATTERY = BatterySpec(500_000, 100_000_000)


def car(chip=ALL_SKILLS, *, motor=TEST_MOTOR, battery=TEST_BATTERY,
        weapon=None, rollers=("FL", "FR", "RL", "RR"), chip_material="pc") -> VehicleSpec:
    g = 1_000_000
    parts = [
        baked_part("chassis", 50 * g, "abs", 9000),
        baked_part("body", 30 * g, "pc", 12000),
        baked_part("motor", 20 * g, "steel", 2200),
        baked_part("battery", 40 * g, "aluminum", 3200),
        *(baked_part("tire", 6 * g, "rubber", 1600, slot=s, radius_um=16_000, volume_mm3=5000)
          for s in ("FL", "FR", "RL", "RR")),
        *(baked_part("roller", 1 * g, "abs", 300, slot=s, radius_um=5_000) for s in rollers),
    ]
    if chip:
        parts.append(baked_part("chip", 3 * g, chip_material, 400))
    if weapon is not None:
        parts.append(baked_part("weapon", 10 * g, "aluminum", 1000))
    return VehicleSpec("test:car", tuple(parts), motor, battery, 160_000, 100_000, 60_000, tuple(chip), weapon)


def archetype(slot: int) -> VehicleSpec:
    """Code-built stand-ins for the speed / heavy / control archetypes (slot mod 3), independent of assets."""
    kind = slot % 3
    if kind == 0:
        return car((ChipSlot("boost", 50), ChipSlot("brake", 20), ChipSlot("weapon", 30)),
                   motor=MotorSpec(30, 150_000), battery=BatterySpec(600_000, 1_944_000_000),
                   weapon=WeaponSpec("passive", 50))
    if kind == 1:
        return car((ChipSlot("slam", 40), ChipSlot("stabilize", 20), ChipSlot("weapon", 40)),
                   motor=MotorSpec(70, 220_000), battery=BatterySpec(900_000, 2_268_000_000),
                   weapon=WeaponSpec("active"), rollers=("FL", "FR", "CL", "CR", "RL", "RR"))
    return car((ChipSlot("stabilize", 30), ChipSlot("swerve_left", 20), ChipSlot("swerve_right", 20),
                ChipSlot("weapon", 30)), motor=MotorSpec(50, 170_000), battery=BatterySpec(750_000, 2_106_000_000),
               weapon=WeaponSpec("active"))


def code_round(cars: int = 8, seed: int = 0) -> World:
    """An 8-player round built entirely in code (circuit track, archetype stand-ins): stable across asset
    changes, so golden hashes and harness tests depend on sim_core alone."""
    from tests.sim_core.circuit import circuit_track

    return World.new(circuit_track(), [archetype(slot) for slot in range(cars)], seed=seed)


def world(track=None, cars=None, count: int = 1) -> World:
    return World.new(track or straight_track(), cars or [car()] * count)


def place(w: World, slot: int, *, arc=None, lat=None, h=None, vs=None, vlat=None, vh=None) -> None:
    """Put a car somewhere (state surgery for rule tests); also resets its sweep origin there."""
    c = w._cars[slot]
    for index, value in ((ARC, arc), (LAT, lat), (H, h), (VS, vs), (VLAT, vlat), (VH, vh)):
        if value is not None:
            c[index] = value
    c[PREV_X], c[PREV_Y], c[PREV_Z] = w.rules.com(c, w.models[slot])
    c[ARMED] = 1 if w.rules.finish.arms(w.rules.finish.side(w.rules.com(c, w.models[slot]))) else 0
    edited(w)


def edited(w: World) -> None:
    """Tell the world its state was edited behind its back (state surgery): its saved bytes are stale,
    and whether each car's cold parts are still (the thermal pass skips them then) is asked again."""
    w._snapshot = None
    w._check_cold_parts()


def packed(w: World) -> bytes:
    """The state packed afresh: ``save_state`` returns the very bytes a state was loaded or restored
    from while it is unchanged, so a round-trip test compares against this instead."""
    return w.codec.pack(w._world, w._cars)


def loop_track(**overrides) -> TrackSpec:
    """A 4 m × 2 m flat fixed loop (rounded rectangle through 6 points), RPn = RP1."""
    pts = [
        ((0, 0, 0), (0, 0, -M)), ((0, 0, -2 * M), (0, 0, -M)), ((1 * M, 0, -3 * M), (M, 0, 0)),
        ((2 * M, 0, -2 * M), (0, 0, M)), ((2 * M, 0, 0), (0, 0, M)), ((1 * M, 0, 1 * M), (-M, 0, 0)),
        ((0, 0, 0), (0, 0, -M)),
    ]
    route = tuple(RoutePoint(p, f, UP, 800_000) for p, f in pts)
    fields = {"track_id": "test:loop", "track_type": "fixed", "route": route, "surface_material": "asphalt",
              "lap_count": 2}
    fields.update(overrides)
    return TrackSpec(**fields)


__all__ = ["ALL_SKILLS", "Box", "M", "RespawnPoint", "archetype", "car", "code_round", "loop_track", "packed", "place",
           "replace", "straight_track", "world"]


def steel_car(offset=(0, 0, 0), weapon: WeaponSpec | None = None) -> VehicleSpec:
    """The test car with a steel point (χ = 1) on its chassis at ``offset`` from its centre."""
    spec = car(weapon=weapon)
    parts = tuple(replace(p, steel=(SteelPoint(offset, 1000),)) if p.part_type == "chassis" else p for p in spec.parts)
    return replace(spec, parts=parts)


def magnet_car(pole=FRONT_POLE, offset=(0, 0, 0)) -> VehicleSpec:
    """The test car with an active magnet weapon (10 % of the chip: 50 W at full charge → 1.5 N)."""
    return car(weapon=WeaponSpec("active", magnet=MagnetPole(offset, pole), mechanism="magnet", axis_e6=pole))


FLUIDS = ("water", "oil", "lava", "freezing_fluid", "acid")


def fluid_zones(track: TrackSpec) -> tuple[FluidZone, ...]:
    """A 0.6 m square 5 mm deep puddle at every route point after the first, the five fluids in turn."""
    return tuple(FluidZone((p.position_um[0] - 300_000, p.position_um[1] - 5_000, p.position_um[2] - 300_000),
                           (p.position_um[0] + 300_000, p.position_um[1], p.position_um[2] + 300_000),
                           FLUIDS[i % len(FLUIDS)]) for i, p in enumerate(track.route[1:]))


def belts(track: TrackSpec) -> tuple[ConveyorSpec, ...]:
    """A 0.8 m square PE belt running forward at 2 m/s under every third route point from the second."""
    return tuple(ConveyorSpec((p.position_um[0] - 400_000, p.position_um[1] - 20_000, p.position_um[2] - 400_000),
                              (p.position_um[0] + 400_000, p.position_um[1], p.position_um[2] + 400_000),
                              (-p.forward_e6[0], -p.forward_e6[1], -p.forward_e6[2]), -2 * M, "pe")
                 for p in track.route[1::3])


def magnet_round(magnets: bool = True, seed: int = 3, fluids: bool = False, pushers: bool = False,
                 conveyors: bool = False) -> World:
    """Four cars on the code-built circuit, magnet weapons (40 % of the chip) in the odd slots and steel
    cars in the even ones, with 10 N floor magnets 2 cm under every other route point (or none), with
    ``fluids`` the puddles of ``fluid_zones``, with ``pushers`` the steel cars armed with a push, and with
    ``conveyors`` the ``belts``."""
    from tests.sim_core.circuit import circuit_track

    base = circuit_track()
    sources = tuple(MagnetSource((p.position_um[0], p.position_um[1] - 20_000, p.position_um[2]), 10_000, UP_POLE)
                    for p in base.route[::2]) if magnets else ()
    chip = (ChipSlot("boost", 30), ChipSlot("weapon", 40))
    push = WeaponSpec("active", mechanism="push", axis_e6=FRONT_POLE)
    steel = replace(steel_car(weapon=push), chip_slots=chip) if pushers else replace(steel_car(), chip_slots=chip[:1])
    cars = [replace(magnet_car(), chip_slots=chip) if slot % 2 else steel for slot in range(4)]
    return World.new(replace(base, magnets=sources, fluids=fluid_zones(base) if fluids else (),
                             conveyors=belts(base) if conveyors else ()), cars, seed=seed)
