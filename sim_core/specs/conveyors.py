"""A track's conveyor belts as exact integers (spec/assets.md §5.6 ``kinematic_conveyor``, simcore §7.4
"Entities": an impulse along the entity's local −Z, capped at μ·N).

The bake keeps each conveyor entity's box, axes and ``conveyor_velocity_m_s`` (``sim_core.assets.track``);
``sim_core.assets.convert`` turns them into a ``ConveyorSpec`` and the step (``sim_core.step.conveyors``)
carries the cars standing on it. Validation raises ``SimError`` ``track-invalid-conveyor``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from sim_core.errors import SimError
from sim_core.specs.items import box_problem, is_unit_e6
from sim_core.specs.materials import material

Vec3 = tuple[int, int, int]

CONVEYORS_MAX = 100
"""A track has at most 100 entities (spec/assets.md §5.6)."""
SPEED_MAX_UM_S = 10_000_000
"""|conveyor_velocity_m_s| ≤ 10."""


def _fail(message: str) -> NoReturn:
    raise SimError("track-invalid-conveyor", message)



@dataclass(frozen=True, slots=True)
class ConveyorSpec:
    """One belt: its box ``min_um``..``max_um`` (world, µm), the direction it runs ``direction_e6`` (its
    entity's −Z, a unit vector in ppm), its ``speed_um_s`` (signed: a negative speed runs along +Z) and its
    surface ``material``."""

    min_um: Vec3
    max_um: Vec3
    direction_e6: Vec3
    speed_um_s: int
    material: str

    def validate(self, what: str) -> None:
        """``SimError`` ``track-invalid-conveyor`` unless every field is in range."""
        problem = box_problem(self.min_um, self.max_um)
        if problem is not None:
            _fail(f"{what}: {problem}")
        if not is_unit_e6(self.direction_e6):
            _fail(f"{what}: direction_e6 must be a unit vector (three ints, ppm)")
        if type(self.speed_um_s) is not int or not -SPEED_MAX_UM_S <= self.speed_um_s <= SPEED_MAX_UM_S:
            _fail(f"{what}: speed_um_s must be an int within ±{SPEED_MAX_UM_S} µm/s")
        if not isinstance(self.material, str):
            _fail(f"{what}: material must be a material id")
        surface = material(self.material)
        if surface.is_fluid or not surface.usable_on_track():
            _fail(f"{what}: material {self.material!r} is not a solid track material")
