"""Magnets as exact integers (spec/simcore.md §7.4 "Magnets", spec/assets.md §3, §5.5):

- ``MagnetSource``: a track's static source, one per ``magnet_floor`` mesh node with a strength
  (``auto_magnet_sources``: its geometric centre, its north pole, its strength);
- ``SteelPoint``: a car part's passive sub-mesh (a ``passive`` material: steel), where the sources pull;
- ``MagnetPole``: an active magnet weapon's field origin and north pole (Axis +Z), in the car's frame.

The asset pipeline bakes them (``sim_core.assets.track``, ``sim_core.assets.convert``); the step reads
them through ``sim_core.step.magnets``. Validation raises ``SimError`` with the caller's code
(``track-invalid-magnet``, ``vehicle-invalid-magnet``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from sim_core.errors import SimError
from sim_core.specs.items import TRACK_REACH_UM, is_gap, is_unit_e6, is_vector

Vec3 = tuple[int, int, int]

SOURCE_STRENGTH_MAX_MN = 10_000
"""A static source is at most 10 N (``magnet_source_strength_n`` 0–10)."""
SUSCEPTIBILITY_MAX_MILLI = 10_000
"""χ ≤ 10 (steel's is 1.0; the material table has no larger one)."""
CAR_OFFSET_MAX_UM = 1_000_000
"""A point of a car lies within 1 m of its centre (the assembled car is at most 250 mm long)."""


def _fail(code: str, message: str) -> NoReturn:
    raise SimError(code, message)



@dataclass(frozen=True, slots=True)
class MagnetSource:
    """A track's static magnet: ``position_um`` (world, µm), ``strength_mn`` (1…10 000 mN), the north pole
    ``n_pole_e6`` (unit vector, ppm) and ``surface_gap_um``, its height over the track surface beneath it
    (None: no surface under or over it; the step then takes ``position_um`` as it is)."""

    position_um: Vec3
    strength_mn: int
    n_pole_e6: Vec3
    surface_gap_um: int | None = None

    def validate(self, what: str) -> None:
        """``SimError`` ``track-invalid-magnet`` unless every field is in range."""
        if not is_vector(self.position_um, TRACK_REACH_UM):
            _fail("track-invalid-magnet", f"{what}: position_um must be three ints within ±{TRACK_REACH_UM} µm")
        if type(self.strength_mn) is not int or not 1 <= self.strength_mn <= SOURCE_STRENGTH_MAX_MN:
            _fail("track-invalid-magnet", f"{what}: strength_mn must be an int in 1..{SOURCE_STRENGTH_MAX_MN}")
        if not is_unit_e6(self.n_pole_e6):
            _fail("track-invalid-magnet", f"{what}: n_pole_e6 must be a unit vector (three ints, ppm)")
        if not is_gap(self.surface_gap_um):
            _fail("track-invalid-magnet", f"{what}: surface_gap_um must be None or an int within ±{TRACK_REACH_UM} µm")


@dataclass(frozen=True, slots=True)
class SteelPoint:
    """A part's passive sub-mesh: its centroid ``offset_um`` from the car's centre in the car's frame
    (x right, y up, z back: the vehicle front is −Z) and its material's susceptibility (‰)."""

    offset_um: Vec3
    susceptibility_milli: int

    def validate(self, what: str) -> None:
        """``SimError`` ``vehicle-invalid-magnet`` unless the offset and the susceptibility are in range."""
        if not is_vector(self.offset_um, CAR_OFFSET_MAX_UM):
            _fail("vehicle-invalid-magnet", f"{what}: offset_um must be three ints within ±{CAR_OFFSET_MAX_UM} µm")
        if type(self.susceptibility_milli) is not int or not 1 <= self.susceptibility_milli <= SUSCEPTIBILITY_MAX_MILLI:
            _fail("vehicle-invalid-magnet", f"{what}: susceptibility_milli must be an int in 1..{SUSCEPTIBILITY_MAX_MILLI}")


@dataclass(frozen=True, slots=True)
class MagnetPole:
    """An active magnet weapon: its field origin ``offset_um`` from the car's centre and its north pole
    ``n_pole_e6`` (the weapon's Axis +Z), both in the car's frame as ``SteelPoint``'s. Its strength is
    not here: it is the weapon's energy budget of the frame (``sim_core.step.magnets``)."""

    offset_um: Vec3
    n_pole_e6: Vec3

    def validate(self, what: str) -> None:
        """``SimError`` ``vehicle-invalid-magnet`` unless the offset is in range and the pole a unit vector."""
        if not is_vector(self.offset_um, CAR_OFFSET_MAX_UM):
            _fail("vehicle-invalid-magnet", f"{what}: offset_um must be three ints within ±{CAR_OFFSET_MAX_UM} µm")
        if not is_unit_e6(self.n_pole_e6):
            _fail("vehicle-invalid-magnet", f"{what}: n_pole_e6 must be a unit vector (three ints, ppm)")
