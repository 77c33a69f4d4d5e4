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
from sim_core.specs.items import is_unit_e6
from sim_core.specs.materials import material

Vec3 = tuple[int, int, int]

CONVEYORS_MAX = 100
"""A track has at most 100 entities (spec/assets.md §5.6)."""
SPEED_MAX_UM_S = 10_000_000
"""|conveyor_velocity_m_s| ≤ 10."""
POSITION_MAX_UM = 1_000_000_000


def _fail(message: str) -> NoReturn:
    raise SimError("track-invalid-conveyor", message)


def _corner(value: object) -> bool:
    return (isinstance(value, tuple) and len(value) == 3
            and all(type(x) is int and -POSITION_MAX_UM <= x <= POSITION_MAX_UM for x in value))


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
        if not _corner(self.min_um) or not _corner(self.max_um):
            _fail(f"{what}: min_um and max_um must be three ints within ±{POSITION_MAX_UM} µm")
        if any(lo > hi for lo, hi in zip(self.min_um, self.max_um, strict=True)):
            _fail(f"{what}: min_um must not exceed max_um on any axis")
        if not is_unit_e6(self.direction_e6):
            _fail(f"{what}: direction_e6 must be a unit vector (three ints, ppm)")
        if type(self.speed_um_s) is not int or not -SPEED_MAX_UM_S <= self.speed_um_s <= SPEED_MAX_UM_S:
            _fail(f"{what}: speed_um_s must be an int within ±{SPEED_MAX_UM_S} µm/s")
        if not isinstance(self.material, str):
            _fail(f"{what}: material must be a material id")
        surface = material(self.material)
        if surface.is_fluid or not surface.usable_on_track():
            _fail(f"{what}: material {self.material!r} is not a solid track material")
