"""Tires computed once per group of like tires (``Mechanics.tire_groups`` in the motion, their
``TireHeatWear`` in the thermal pass) give exactly what computing each tire alone gives: the grouping is
only a way of not repeating work. The reference is the same world with every tire in a group of its
own, which is the tire-by-tire loop; cars with mixed tires (another material: another physics group;
another size: another thermal group) and states where like tires differ are covered."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sim_core import World
from sim_core.specs.vehicle import VehicleSpec, baked_part
from sim_core.state.layout import BROKEN_MASK, P_FATIGUE, P_TEMP, part_field
import sim_core.step.model as model_module
from sim_core.step.model import CarModel, TireGroup, TireHeatWear

from tests.compiled_marks import sources_only
from tests.sim_core.helpers import archetype, car, code_round
from tests.sim_core.step.test_step_golden import HardInputs
from tests.sim_core.circuit import circuit_track


class TireByTire(CarModel):
    """A car model whose groups hold one tire each: the motion and thermal passes then run tire by tire."""

    def _tire_groups(self, tires: list[int], wet: bool) -> tuple[tuple[TireGroup, ...], tuple[TireHeatWear, ...]]:
        alone = [super(TireByTire, self)._tire_groups([tire], wet) for tire in tires]
        return tuple(g for groups, _ in alone for g in groups), tuple(p for _, plan in alone for p in plan)


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
    grouped = World.new(circuit_track(), vehicles, seed=seed)
    alone = World.new(circuit_track(), vehicles, seed=seed)
    alone.models = [TireByTire(v, alone.track) for v in vehicles]
    return grouped, alone


def test_mixed_tires_make_several_groups():
    model = CarModel(mixed_tires(car()), circuit_track())
    mech = model.mechanics(0)
    assert [g.size for g in mech.tire_groups] == [1, 1, 2]  # silicone FL; rubber FR; the larger rear pair
    assert [len(g.tires) for g in mech.tire_plan] == [1, 1, 2]


@sources_only(model_module, "the reference is a Python subclass of CarModel")
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
    for _ in range(900):
        if grouped.done:
            break
        frame = inputs.next_frame()
        grouped.step(frame)
        alone.step(frame)
        assert grouped._cars == alone._cars, grouped.frame
    assert alone.done == grouped.done and alone.standings() == grouped.standings()
    assert any(c[BROKEN_MASK] for c in grouped._cars)  # parts broke on the way (wear or heat)


def test_code_round_tires_are_one_group_per_car():
    world = code_round(3)
    assert all(len(m.mechanics(0).tire_groups) == 1 and len(m.mechanics(0).tire_plan) == 1 for m in world.models)
