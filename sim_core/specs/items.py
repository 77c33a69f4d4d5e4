"""Checks the specs share: a tuple of validated items (a track's magnet sources and fluid zones, a part's
steel), a unit direction in ppm (a magnet's pole, a weapon's axis) and a track feature's surface gap."""

from __future__ import annotations

from typing import Protocol, TypeVar

from sim_core.errors import SimError


class Validated(Protocol):
    """An item that checks itself, naming itself ``what`` in its refusal."""

    def validate(self, what: str) -> None:
        """``SimError`` with the item's own code unless it is valid."""


V = TypeVar("V", bound=Validated)


def check_all(items: object, kind: type[V], limit: int, code: str, what: str) -> None:
    """``SimError`` ``code`` unless ``items`` is a tuple of at most ``limit`` valid ``kind``."""
    if not isinstance(items, tuple) or len(items) > limit:
        raise SimError(code, f"{what} must be a tuple of at most {limit} {kind.__name__}")
    for i, item in enumerate(items):
        if not isinstance(item, kind):
            raise SimError(code, f"{what}[{i}] must be a {kind.__name__}")
        item.validate(f"{what}[{i}]")


UNIT_TOLERANCE_E6 = 2_000
"""A direction is a unit vector in ppm within ±0.2 % of length 1 (the rounding of a normalised vector)."""


def is_unit_e6(value: object) -> bool:
    """Whether ``value`` is three ints forming a unit vector in ppm."""
    if not (isinstance(value, tuple) and len(value) == 3 and all(type(x) is int for x in value)):
        return False
    length_sq = sum(int(x) * int(x) for x in value)
    return (1_000_000 - UNIT_TOLERANCE_E6) ** 2 <= length_sq <= (1_000_000 + UNIT_TOLERANCE_E6) ** 2


GAP_MAX_UM = 1_000_000_000
"""A track feature's height over the surface beneath it lies within the track's 1 km."""


def is_gap(value: object) -> bool:
    """Whether ``value`` is a track feature's surface gap: None (no surface) or an int within ±1 km."""
    return value is None or (type(value) is int and -GAP_MAX_UM <= value <= GAP_MAX_UM)
