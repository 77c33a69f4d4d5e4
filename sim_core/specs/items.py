"""Checks the specs share: a tuple of validated items (a track's magnet sources and fluid zones, a part's
steel), a unit direction in ppm (a magnet's pole, a weapon's axis), a track feature's box and surface gap."""

from __future__ import annotations

from typing import Protocol, TypeGuard, TypeVar

from sim_core.errors import SimError
from sim_core.intmath import UNIT


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
_UNIT_SQ_LOW = (UNIT - UNIT_TOLERANCE_E6) * (UNIT - UNIT_TOLERANCE_E6)
_UNIT_SQ_HIGH = (UNIT + UNIT_TOLERANCE_E6) * (UNIT + UNIT_TOLERANCE_E6)


def is_unit_e6(value: object) -> bool:
    """Whether ``value`` is three ints forming a unit vector in ppm."""
    if not is_vector(value, 2 * UNIT):
        return False
    length_sq = value[0] * value[0] + value[1] * value[1] + value[2] * value[2]
    return _UNIT_SQ_LOW <= length_sq <= _UNIT_SQ_HIGH


TRACK_REACH_UM = 1_000_000_000
"""A track feature's coordinates and its height over the surface beneath it lie within the track's 1 km."""


def is_gap(value: object) -> bool:
    """Whether ``value`` is a track feature's surface gap: None (no surface) or an int within ±1 km."""
    return value is None or (type(value) is int and -TRACK_REACH_UM <= value <= TRACK_REACH_UM)


def is_vector(value: object, bound: int) -> TypeGuard[tuple[int, int, int]]:
    """Whether ``value`` is three ints within ±``bound``."""
    return (isinstance(value, tuple) and len(value) == 3
            and all(type(x) is int and -bound <= x <= bound for x in value))


def box_problem(low: object, high: object) -> str | None:
    """What is wrong with a track feature's box ``low``..``high`` (world µm; a flat one may have no
    thickness), or None: the caller refuses it with its own code."""
    if not is_vector(low, TRACK_REACH_UM) or not is_vector(high, TRACK_REACH_UM):
        return f"min_um and max_um must be three ints within ±{TRACK_REACH_UM} µm"
    if any(lo > hi for lo, hi in zip(low, high, strict=True)):
        return "min_um must not exceed max_um on any axis"
    return None
