"""The one swing curve of the step's periodic motions: a rotor weapon's swinging arm (``sim_core.step.rotors``)
and a moving track entity (``sim_core.step.obstacles``).

Both go out and back once a period: 0 at its start, the whole amplitude at half the period, 0 again at its
end. ``linear`` moves at a steady speed; the spec's ``sin`` is taken as the smoothstep ``3u² − 2u³`` of
the half period, within 1 % of the ``(1 − cos)/2`` a sine gives and in integers (the spec asks for a
version-pinned approximation of its sine swings, simcore §2).
"""

from __future__ import annotations

from sim_core.intmath import UNIT


def swing_ppm(position: int, period: int, linear: bool) -> int:
    """How far out (ppm of the amplitude) a swing of ``period`` is at ``position`` (0 ≤ position < period)."""
    half = period // 2
    x = position if position < half else period - position
    u = min(UNIT, x * UNIT // half)
    if linear:
        return u
    return (3 * u * u * UNIT - 2 * u * u * u) // (UNIT * UNIT)
