"""Integer arithmetic of the consensus path.

Sign rule: ``//`` in Python floors (rounds toward −∞) for every sign; that is the rule wherever a
plain floor is written. ``div_round`` rounds to nearest with halves toward +∞ (``floor(a/b + 1/2)``),
used where a floor would bias a signed quantity (velocities, vector components) toward −∞.
``div_trunc`` rounds toward zero, used for decays so that a shrinking value never flips sign.
"""

from __future__ import annotations

from math import isqrt
from typing import Final

UNIT: Final = 1_000_000
"""Integer unit vectors are scaled by 1e6."""

Vec3 = tuple[int, int, int]

__all__ = ["UNIT", "Vec3", "isqrt", "div_round", "round_div", "div_trunc", "around_loop", "clamp", "dot", "cross", "sub", "add",
           "scale", "distance_sq", "normalize", "sin_cos_ppm"]

FULL_TURN_MDEG: Final = 360_000
_EIGHTH_MDEG: Final = 45_000
PI_NUM: Final = 355
PI_DEN: Final = 113
"""π as 355/113 (8.5e-8 relative): a turn's angle in µrad is mdeg · 355 · 1000 / (113 · 180)."""


def div_round(a: int, b: int) -> int:
    """a / b rounded to nearest, halves toward +∞; b must be > 0."""
    return (2 * a + b) // (2 * b)


def round_div(numerator: int, denominator: int) -> int:
    """Integer division rounding half away from zero (the one rounding rule of the bake)."""
    if denominator < 0:
        numerator, denominator = -numerator, -denominator
    q, r = divmod(abs(numerator), denominator)
    if 2 * r >= denominator:
        q += 1
    return q if numerator >= 0 else -q


def div_trunc(a: int, b: int) -> int:
    """a / b rounded toward zero; b must be > 0."""
    return a // b if a >= 0 else -((-a) // b)


def around_loop(gap: int, loop_length: int) -> int:
    """An arc gap brought into [−L/2, L − L/2) on a loop of length ``loop_length`` (the shorter way round);
    the gap as it is when ``loop_length`` is 0 (a linear route)."""
    if not loop_length:
        return gap
    half = loop_length // 2
    return (gap + half) % loop_length - half


def clamp(value: int, low: int, high: int) -> int:
    """``value`` limited to [low, high]."""
    return low if value < low else high if value > high else value


def dot(a: Vec3, b: Vec3) -> int:
    """a · b (exact)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def cross(a: Vec3, b: Vec3) -> Vec3:
    """a × b (exact)."""
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def sub(a: Vec3, b: Vec3) -> Vec3:
    """a − b."""
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


def add(a: Vec3, b: Vec3) -> Vec3:
    """a + b."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def scale(v: Vec3, num: int, den: int) -> Vec3:
    """v · num / den, each component rounded with ``div_round``."""
    return (div_round(v[0] * num, den), div_round(v[1] * num, den), div_round(v[2] * num, den))


def distance_sq(a: Vec3, b: Vec3) -> int:
    """|a − b|² (exact)."""
    dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
    return dx * dx + dy * dy + dz * dz


def normalize(v: Vec3) -> Vec3:
    """v / |v| as a ×1e6 unit vector (components rounded with ``div_round``); ``ZeroDivisionError`` for v = 0."""
    n = isqrt(dot(v, v) * UNIT * UNIT)  # |v|·1e6, floored once at full precision
    if n == 0:
        raise ZeroDivisionError("cannot normalize a zero vector")
    return (div_round(v[0] * UNIT * UNIT, n), div_round(v[1] * UNIT * UNIT, n), div_round(v[2] * UNIT * UNIT, n))


MASK64: Final = 0xFFFF_FFFF_FFFF_FFFF
SPLITMIX64_GAMMA: Final = 0x9E37_79B9_7F4A_7C15


def splitmix64_mix(z: int) -> int:
    """SplitMix64's output function (Steele, Lea, Flood) of a 64-bit state ``z``: pure integer arithmetic,
    the same on every platform and Python version."""
    z = ((z ^ (z >> 30)) * 0xBF58_476D_1CE4_E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D0_49BB_1331_11EB) & MASK64
    return z ^ (z >> 31)


def splitmix64_at(seed: int, index: int) -> int:
    """The ``index``-th output (0-based) of SplitMix64 seeded with ``seed``, without stepping through the
    ones before it: its state after ``index + 1`` steps is ``seed + (index + 1)·γ`` (mod 2⁶⁴)."""
    return splitmix64_mix((seed + (index + 1) * SPLITMIX64_GAMMA) & MASK64)


def sin_cos_ppm(angle_mdeg: int) -> tuple[int, int]:
    """(sin, cos) of ``angle_mdeg`` millidegrees, in ppm: the version-pinned integer approximation of the
    step's rotations (spec simcore §2: no transcendental functions). The angle is folded into the first
    eighth of a turn by the symmetries of the circle, where Taylor series to the x⁷ and x⁸ terms (x in
    µrad, each term floored) are within 3 ppm of the true values."""
    a = angle_mdeg % FULL_TURN_MDEG
    quarter, within = divmod(a, 90_000)
    swap = within > _EIGHTH_MDEG
    if swap:
        within = 90_000 - within
    x = within * PI_NUM * 1000 // (PI_DEN * 180)  # µrad, 0 ≤ x ≤ π/4
    x2 = x * x // UNIT
    x3 = x2 * x // UNIT
    x4 = x2 * x2 // UNIT
    x5 = x4 * x // UNIT
    x6 = x3 * x3 // UNIT
    x7 = x6 * x // UNIT
    x8 = x4 * x4 // UNIT
    s = x - x3 // 6 + x5 // 120 - x7 // 5040
    c = UNIT - x2 // 2 + x4 // 24 - x6 // 720 + x8 // 40320
    if swap:
        s, c = c, s
    if quarter == 0:
        return s, c
    if quarter == 1:
        return c, -s
    if quarter == 2:
        return -s, -c
    return -c, s
