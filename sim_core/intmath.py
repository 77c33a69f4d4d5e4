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
_HALF_WORD: Final = 1_073_741_824  # 2³⁰; mul: below it a factor is multiplied in machine words by the compiled step
_HALF_MASK: Final = 1_073_741_823  # 2³⁰ − 1

Vec3 = tuple[int, int, int]

__all__ = ["UNIT", "Vec3", "isqrt", "div_round", "round_div", "div_trunc", "mul", "around_loop", "clamp", "component", "dot",
           "cross", "sub", "add", "scale", "distance_sq", "normalize", "sin_cos_e30", "sin_cos_ppm"]

FULL_TURN_MDEG: Final = 360_000
_QUARTER_MDEG: Final = 90_000
TRIG_ONE: Final = 1_000_000_000_000_000_000_000_000_000_000  # 1e30: the scale of ``sin_cos_e30``
PI_E30: Final = 3_141_592_653_589_793_238_462_643_383_280  # π·1e30
_E30_PER_PPM: Final = 1_000_000_000_000_000_000_000_000  # 1e24


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


def mul(a: int, b: int) -> int:
    """a · b (exact), as the compiled step computes it fastest. mypyc multiplies two ints in machine words
    only when both are non-negative and below 2³⁰; any other product (a negative velocity or direction, a
    momentum, a normal force) boxes both into Python ints and multiplies there, several allocations. Here
    the signs are taken out, and a factor from 2³⁰ up to 2⁶⁰ times one below 2³⁰ is split into its high
    and low 30 bits: (b·(a >> 30) << 30) + b·(a & (2³⁰ − 1)) is a·b, in machine words while it fits in 62
    bits. The step's hot products whose factors may be negative or large are written with it."""
    negative = False
    if a < 0:
        a, negative = -a, True
    if b < 0:
        b, negative = -b, not negative
    if a < b:
        a, b = b, a
    if a < _HALF_WORD or b >= _HALF_WORD:  # both small (in C), or both large (beyond a word: Python's)
        product = a * b
    else:
        product = (b * (a >> 30) << 30) + b * (a & _HALF_MASK)
    return -product if negative else product


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


def component(v: Vec3, axis: int) -> int:
    """``v[axis]`` (axis 0, 1 or 2), read with constant indices: the compiled step keeps a three-int tuple
    in machine words, but indexing it by a variable boxes the whole tuple first (an allocation each time)."""
    return v[0] if axis == 0 else v[1] if axis == 1 else v[2]


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


def sin_cos_e30(angle_mdeg: int) -> tuple[int, int]:
    """(sin, cos)·1e30 of ``angle_mdeg`` millidegrees, from integer Taylor series (no libm: every machine
    gets the same bits); each term is truncated toward zero, error far below 1e-20. The step's one sine
    (spec simcore §2: no transcendental functions): the wind's direction and a turning entity's angle."""
    quadrant, rest = divmod(angle_mdeg % FULL_TURN_MDEG, _QUARTER_MDEG)
    x = rest * PI_E30 // 180_000  # radians·1e30, in [0, π/2)
    x2 = x * x // TRIG_ONE
    sin = term = x
    cos = cos_term = TRIG_ONE
    for n in range(1, 30):
        term = div_trunc(-term * x2, (2 * n) * (2 * n + 1) * TRIG_ONE)
        cos_term = div_trunc(-cos_term * x2, (2 * n - 1) * (2 * n) * TRIG_ONE)
        sin += term
        cos += cos_term
    if quadrant == 0:
        return sin, cos
    if quadrant == 1:
        return cos, -sin
    if quadrant == 2:
        return -sin, -cos
    return -cos, sin


def sin_cos_ppm(angle_mdeg: int) -> tuple[int, int]:
    """(sin, cos) of ``angle_mdeg`` millidegrees in ppm (``sin_cos_e30`` truncated toward zero)."""
    sin, cos = sin_cos_e30(angle_mdeg)
    return div_trunc(sin, _E30_PER_PPM), div_trunc(cos, _E30_PER_PPM)
