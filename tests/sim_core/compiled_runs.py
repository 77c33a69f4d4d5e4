"""Runs whose every figure the compiled step must reproduce (``tests/sim_core/test_compiled.py``): the golden
frame chains (pinned), a rollback sync-test of a built-in round, one with every magnet, fluid, push and belt,
and one with launchers, rotors and solid entities (their final hashes and re-simulated frames)."""

from __future__ import annotations

from dataclasses import replace

from sim_core import World
from sim_core.harness.scripted import RandomInputs
from sim_core.harness.synctest import run_synctest

from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import car, magnet_round, place
from tests.sim_core.step.test_launch import launcher
from tests.sim_core.step.test_obstacles import entity_row
from tests.sim_core.step.test_rotors import disc, spinner
from tests.sim_core.step.test_step_golden import CASES, SCENARIOS, frame_chain

SYNCTEST_FRAMES, SYNCTEST_DISTANCE = 600, 7


def golden_chains() -> dict[str, list[object]]:
    """Every golden scenario's [chain, frames stepped] by ``scenario/seed`` (``test_step_golden.GOLDEN``)."""
    return {f"{scenario}/{seed}": list(frame_chain(SCENARIOS[scenario], seed, frames, event, hold, reload_at, damage))
            for scenario, seed, frames, event, hold, reload_at, damage in CASES}


def synctest_figures() -> list[object]:
    """[passed, re-simulated frames, final state hash] of a sync-test of the built-in round, 8 cars."""
    world = World.demo(cars=8, seed=11)
    inputs = RandomInputs([m.chip_skills for m in world.models], 11)
    result = run_synctest(world, SYNCTEST_FRAMES, SYNCTEST_DISTANCE, inputs.next_frame)
    return [result.ok, result.resimulated_frames, result.final_hash.hex()]


def magnet_figures() -> list[object]:
    """[passed, re-simulated frames, final state hash] of a sync-test with floor magnets, held magnet
    weapons, steel, push weapons, the five fluids and belts (``tests.sim_core.helpers.magnet_round``): the
    magnets' arithmetic, every fluid's effect, the pushes and the belts."""
    world = magnet_round(fluids=True, pushers=True, conveyors=True)
    inputs = RandomInputs([m.chip_skills for m in world.models], 3)
    result = run_synctest(world, SYNCTEST_FRAMES, SYNCTEST_DISTANCE, inputs.next_frame)
    return [result.ok, result.resimulated_frames, result.final_hash.hex()]


def weapons_and_entities_figures() -> list[object]:
    """[passed, re-simulated frames, final state hash] of a sync-test with what moves and breaks things: a
    disc rotor and a swinging arm each 10 mm behind a car in its lane, launchers of solid and of fluid
    bullets (the spread discs), on the circuit with a row of fixed, moving and destructible entities across
    its first straight (``test_obstacles.entity_row``): the launch pool's flights and hits, the rotors' spin
    and strikes, the entities' swings and impacts."""
    arm = disc(max_angle_mdeg=120_000, phase_mdeg=30_000)
    cars = [spinner(), car(), spinner(arm), car(), launcher(), launcher(ammo_material="oil"), car(), car()]
    world = World.new(replace(circuit_track(), obstacles=entity_row()), cars, seed=4)
    for pair in range(4):
        arc, lat = 1_000_000 + pair * 400_000, pair % 2 * 100_000 - 50_000
        place(world, 2 * pair, arc=arc, lat=lat, h=0, vs=0, vlat=0, vh=0)
        place(world, 2 * pair + 1, arc=arc + 170_000, lat=lat, h=0, vs=0, vlat=0, vh=0)
    inputs = RandomInputs([m.chip_skills for m in world.models], 4)
    result = run_synctest(world, SYNCTEST_FRAMES, SYNCTEST_DISTANCE, inputs.next_frame)
    return [result.ok, result.resimulated_frames, result.final_hash.hex()]
