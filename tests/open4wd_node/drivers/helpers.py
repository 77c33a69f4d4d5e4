"""Worlds for driver tests: every built-in track with the archetype cars, races, and state surgery
through the public save/load (so a test can put a car anywhere)."""

from __future__ import annotations

import struct
from functools import cache

from sim_core import SkillEvent, World
from sim_core.assets.builtins import BUILTIN_REFS, admitted_builtin, type_of
from sim_core.assets.convert import track_spec
from sim_core.assets.demo_round import archetype_vehicle
from sim_core.specs.track import TrackSpec
from sim_core.specs.vehicle import VehicleSpec

from open4wd_node.drivers import check_decision
from open4wd_node.race.driver import Driver

BUILTIN_TRACKS = tuple(ref for ref in BUILTIN_REFS if type_of(ref) == "track")
STATE_HEADER_BYTES = 40


@cache
def builtin_track(ref: str, laps: int = 1) -> TrackSpec:
    return track_spec(admitted_builtin(ref), track_id=ref, lap_count=laps)


@cache
def archetypes() -> tuple[VehicleSpec, ...]:
    """Speed, heavy and control, from the shipped GLBs."""
    return tuple(archetype_vehicle(n) for n in (1, 2, 3))


def builtin_world(ref: str, cars: list[VehicleSpec], laps: int = 1) -> World:
    return World.new(builtin_track(ref, laps), cars, seed=1)


def race(world: World, drivers: dict[int, Driver], seen: list | None = None) -> World:
    """Run the round to its end; every decision is checked against the input rules and, while a car's
    skills are disabled, must be empty. ``seen`` collects (frame, slot, decision)."""
    while not world.done:
        frame = world.frame + 1
        inputs = {}
        for slot, driver in drivers.items():
            decision = driver.decide(world, slot, frame)
            check_decision(world, slot, decision)
            assert len(decision) <= 4
            if world.disable_reason(slot) is not None:
                assert decision == []
            if seen is not None:
                seen.append((frame, slot, decision))
            if decision:
                inputs[slot] = [SkillEvent(s, h) for s, h in decision]
        world.step(inputs)
    return world


def set_fields(world: World, slot: int, fields: dict[str, int]) -> None:
    """Overwrite saved fields of car ``slot`` by name ("vs_um_s", "part[3].temp_mc", …)."""
    data = bytearray(world.save_state())
    names = world.field_names()
    for name, value in fields.items():
        struct.pack_into("<q", data, STATE_HEADER_BYTES + 8 * names.index(f"car[{slot}].{name}"), value)
    world.load_state(bytes(data))


def part_index(vehicle: VehicleSpec, part_type: str) -> int:
    return next(i for i, p in enumerate(vehicle.parts) if p.part_type == part_type)
