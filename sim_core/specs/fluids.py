"""A track's fluid zones as exact integers (spec/simcore.md §7.4 "Fluids", 材質表 §3, §6).

A fluid mesh node of a track (a material with ``is_fluid``: water, oil, freezing fluid, lava, acid) is a
sensor, not a collider: ``sim_core.assets.track`` bakes its axis-aligned box and its material, and the step
(``sim_core.step.fluids``) reads what the material table says the fluid does (``deploy_behavior`` and
``deploy_params``). Validation raises ``SimError`` ``track-invalid-fluid``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from sim_core.errors import SimError
from sim_core.specs.items import TRACK_REACH_UM, box_problem, is_gap
from sim_core.specs.materials import material

Vec3 = tuple[int, int, int]

FLUID_ZONES_MAX = 256
"""A track has at most 256 regions of one kind (spec/assets.md §5.7's solid regions), fluids included."""


def _fail(message: str) -> NoReturn:
    raise SimError("track-invalid-fluid", message)



@dataclass(frozen=True, slots=True)
class FluidZone:
    """One fluid region: its box ``min_um``..``max_um`` (world, µm; a flat puddle may have no thickness),
    its fluid ``material`` id and ``surface_gap_um``, its centre's height over the track surface beneath
    it (None: no surface under or over it; the step then takes the box as it is)."""

    min_um: Vec3
    max_um: Vec3
    material: str
    surface_gap_um: int | None = None

    def validate(self, what: str) -> None:
        """``SimError`` ``track-invalid-fluid`` unless the box is ordered and the material a fluid."""
        problem = box_problem(self.min_um, self.max_um)
        if problem is not None:
            _fail(f"{what}: {problem}")
        if not isinstance(self.material, str) or not material(self.material).is_fluid:
            _fail(f"{what}: material {self.material!r} is not a fluid")
        if not is_gap(self.surface_gap_um):
            _fail(f"{what}: surface_gap_um must be None or an int within ±{TRACK_REACH_UM} µm")
