"""Tires computed once per group of like tires (``Mechanics.tire_groups`` in the motion, their
``TireHeatWear`` in the thermal pass) give exactly what computing each tire alone gives: the grouping is
only a way of not repeating work. The reference is the same world with every tire in a group of its
own, which is the tire-by-tire loop; cars with mixed tires (another material: another physics group;
another size: another thermal group) and states where like tires differ are covered. The reference's
mechanics are made by the model's own grouping, called one tire at a time, and put into its cache: no
subclass and no patch, so the test runs against the compiled step as it does against the sources."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim_core import World
from sim_core.specs.vehicle import VehicleSpec, baked_part
from sim_core.state.layout import BROKEN_MASK, P_FATIGUE, P_TEMP, part_field
from sim_core.step.model import CarModel, Mechanics

from tests.sim_core.helpers import archetype, car, code_round
from tests.sim_core.step.test_step_golden import HardInputs
from tests.sim_core.circuit import circuit_track


def tire_by_tire(model: CarModel, mask: int) -> Mechanics:
    """``model``'s mechanics for the broken parts ``mask``, with every live tire in a group of its own: the
    motion and thermal passes then run tire by tire."""
    grouped = model.mechanics(mask)
    alone = [model._tire_groups([tire], False) for tire in model.tire_parts if not mask >> tire & 1]
    groups = tuple(g for groups, _ in alone for g in groups)
    return replace(grouped, tire_groups=groups, tire_plan=tuple(p for _, plan in alone for p in plan),
                   idle_loads=((0, 0, 0),) * len(groups))


def compute_tire_by_tire(world: World, masks: list[set[int]]) -> None:
    """Make every model of ``world`` compute tire by tire for the broken parts ``masks[slot]`` (its
    mechanics cache filled with the reference's: the model then never groups them itself)."""
    for model, seen in zip(world.models, masks, strict=True):
        for mask in seen:
            model._cache[mask] = tire_by_tire(model, mask)


def mixed_tires(spec: VehicleSpec) -> VehicleSpec:
    """The rear tires larger (another heat and wear capacity: another thermal group); the front left of
    silicone with the thermal values of the rubber front right (another physics group, the same thermal
    group: two tires that take different heat and wear but solve with the same constants)."""
    g = 1_000_000
    parts = []
    for part in spec.parts:
        if part.part_type == "tire" and part.slot in ("RL", "RR"):
            part = baked_part("tire", 9 * g, "rubber", 2400, slot=part.slot, radius_um=18_000, volume_mm3=8000)
        elif part.part_type == "tire" and part.slot == "FL":
            part = replace(part, material="silicone")
        parts.append(part)
    return replace(spec, parts=tuple(parts))


def rounds(vehicles: list[VehicleSpec], seed: int) -> tuple[World, World]:
    return World.new(circuit_track(), vehicles, seed=seed), World.new(circuit_track(), vehicles, seed=seed)


def test_mixed_tires_make_several_groups():
    model = CarModel(mixed_tires(car()), circuit_track())
    mech = model.mechanics(0)
    assert [g.size for g in mech.tire_groups] == [1, 1, 2]  # silicone FL; rubber FR; the larger rear pair
    assert [len(g.tires) for g in mech.tire_plan] == [1, 1, 2]


@pytest.mark.parametrize("mixed", [False, True])
def test_grouped_tires_step_exactly_as_tire_by_tire(mixed):
    vehicles = [mixed_tires(archetype(slot)) if mixed else archetype(slot) for slot in range(4)]
    grouped, alone = rounds(vehicles, seed=11)
    for world in (grouped, alone):  # like tires in different states on cars 2 and 3: one worn, one hot
        for slot, model in enumerate(world.models[2:], start=2):
            front, rear = model.tire_parts[1], model.tire_parts[2]
            world._cars[slot][part_field(front, P_FATIGUE)] = 600_000 + 10_000 * slot
            world._cars[slot][part_field(rear, P_TEMP)] = 70_000
    inputs = HardInputs(grouped, 11, event=120, hold=600)
    frames, states = [], []
    masks: list[set[int]] = [{c[BROKEN_MASK]} for c in grouped._cars]
    for _ in range(900):
        if grouped.done:
            break
        frames.append(inputs.next_frame())
        grouped.step(frames[-1])
        states.append([list(c) for c in grouped._cars])
        for seen, c in zip(masks, grouped._cars, strict=True):
            seen.add(c[BROKEN_MASK])
    compute_tire_by_tire(alone, masks)
    for frame, state in zip(frames, states, strict=True):
        alone.step(frame)
        assert alone._cars == state, alone.frame
    assert alone.done == grouped.done and alone.standings() == grouped.standings()
    assert any(c[BROKEN_MASK] for c in grouped._cars)  # parts broke on the way (wear or heat)
    # the reference really ran tire by tire: every mechanics it used has one tire per group
    assert all(g.size == 1 for m in alone.models for mech in m._cache.values() for g in mech.tire_groups)
    assert any(g.size > 1 for m in grouped.models for mech in m._cache.values() for g in mech.tire_groups)


def test_code_round_tires_are_one_group_per_car():
    world = code_round(3)
    assert all(len(m.mechanics(0).tire_groups) == 1 and len(m.mechanics(0).tire_plan) == 1 for m in world.models)
