"""Built-in cars race on every built-in track in the simulation (manifests → TrackSpec / VehicleSpec)."""

from __future__ import annotations

import pytest

from sim_core.assets.builtins import admitted_builtin
from sim_core.assets.convert import track_spec, vehicle_spec
from sim_core.assets.demo_round import archetype_loadout, archetype_vehicle
from sim_core.assets.loadout import assemble
from sim_core.world import World

MAX_FRAMES = 60 * 300


def test_vehicle_spec_carries_the_assembled_figures() -> None:
    findings, car = assemble(archetype_loadout(1), admitted_builtin)
    assert car is not None
    spec = vehicle_spec(car, "speed")
    assert spec.total_mass_ug == car.total_mass_ug  # both apply the same passive boost to the weapon
    assert (spec.width_um, spec.height_um, spec.length_um) == tuple(car.aabb_max_um[k] - car.aabb_min_um[k] for k in range(3))
    assert spec.motor.auto_input_mw == 125_379 and spec.battery.configured_output_mw == 150_000
    tires = [p for p in spec.parts if p.part_type == "tire"]
    assert [p.slot for p in tires] == ["FL", "FR", "RL", "RR"] and all(
        p.radius_um == 16_000 and p.wear_capacity_mj > 0 for p in tires
    )


def test_track_spec_keeps_the_manifest_geometry() -> None:
    admitted = admitted_builtin("builtin:track-02")
    spec = track_spec(admitted, lap_count=2)
    assert spec.effective_lap_mode == "loop" and spec.laps_to_finish == 2 and spec.player_capacity == 8
    assert len(spec.route) == len(admitted.manifest["route"]) and len(spec.checkpoints) == 6
    assert spec.track_id == "sha256:" + admitted.content_id


@pytest.mark.parametrize("ref", ["builtin:track-01", "builtin:track-02", "builtin:track-03"])
def test_builtin_cars_finish_every_builtin_track(ref: str) -> None:
    cars = [archetype_vehicle(n) for n in (1, 2, 3)]
    world = World.new(track_spec(admitted_builtin(ref), lap_count=1), [cars[slot % 3] for slot in range(8)], seed=4)
    while not world.done and world.frame < MAX_FRAMES:
        world.step({})
    standings = world.standings()
    assert world.done and world.end_reason == "all-finished", standings
    assert all(s["status"] == "finished" for s in standings)


def test_track03s_oil_and_magnet_take_effect_in_a_builtin_race() -> None:
    """Cars of the inner grid slots cross the oil slick; the magnet plate pulls the heavy car's ballast and
    the control car's darts, and leaves the speed car (no steel) alone."""
    cars = [archetype_vehicle(n) for n in (1, 2, 3)]
    world = World.new(track_spec(admitted_builtin("builtin:track-03"), lap_count=1), [cars[s % 3] for s in range(6)], seed=4)
    oiled, pulled = set(), set()
    while not world.done and world.frame < MAX_FRAMES:
        oiled |= {slot for slot, c in enumerate(world._cars) if world._frame.fluids.touch(c)}
        pulls = world._frame.magnets.pulls(world._cars, [()] * 6)
        pulled |= {slot for slot, pull in enumerate(pulls or []) if pull != (0, 0, 0)}
        world.step({})
    assert world.end_reason == "all-finished" and len(oiled) >= 4
    assert pulled and all(slot % 3 for slot in pulled)  # heavy (1, 4) and control (2, 5) only


def test_world_demo_is_built_from_the_shipped_files() -> None:
    world = World.demo(cars=3, seed=0)
    assert [v.vehicle_id for v in world.vehicles] == ["builtin:archetype-01", "builtin:archetype-02", "builtin:archetype-03"]
    assert world.track.track_id == "builtin:track-02"
