"""Exact segment tests for track triggers: the chassis-COM segment (previous → current frame) against
axis-aligned boxes (checkpoints, kill zones) and against the finish plane. All integer/rational."""

from __future__ import annotations

from fractions import Fraction

from sim_core.intmath import Vec3, mul
from sim_core.specs.track import Box


Bounds = tuple[Vec3, Vec3]


def box_bounds(boxes: tuple[Box, ...]) -> tuple[Bounds, ...]:
    """(min, max) corners of each box, computed once per track."""
    return tuple((box.min_um, box.max_um) for box in boxes)


def hull(boxes: tuple[Bounds, ...]) -> Bounds | None:
    """The smallest box holding every box of ``boxes`` (None for none): a segment that misses it misses
    them all, which lets the rule pass skip a track's kill zones with one test per car and frame."""
    if not boxes:
        return None
    return ((min(lo[0] for lo, _ in boxes), min(lo[1] for lo, _ in boxes), min(lo[2] for lo, _ in boxes)),
            (max(hi[0] for _, hi in boxes), max(hi[1] for _, hi in boxes), max(hi[2] for _, hi in boxes)))


def segment_misses(p0: Vec3, p1: Vec3, bounds: Bounds) -> bool:
    """True when the segment's own bounding box is clear of the box: it cannot touch it (the cheap
    rejection before the exact test; False does not mean it touches)."""
    lo, hi = bounds
    x0, y0, z0 = p0
    x1, y1, z1 = p1
    return ((x0 < lo[0] and x1 < lo[0]) or (x0 > hi[0] and x1 > hi[0]) or (y0 < lo[1] and y1 < lo[1])
            or (y0 > hi[1] and y1 > hi[1]) or (z0 < lo[2] and z1 < lo[2]) or (z0 > hi[2] and z1 > hi[2]))


def segment_box_entry(p0: Vec3, p1: Vec3, bounds: Bounds) -> Fraction | None:
    """Entry parameter t ∈ [0, 1] where the closed segment first touches the closed box, or None.

    A segment starting inside the box enters at t = 0.
    """
    if segment_misses(p0, p1, bounds):
        return None
    lo, hi = bounds
    t_enter, t_exit = Fraction(0), Fraction(1)
    for a in range(3):
        d = p1[a] - p0[a]
        if d == 0:
            if not lo[a] <= p0[a] <= hi[a]:
                return None
            continue
        t1, t2 = Fraction(lo[a] - p0[a], d), Fraction(hi[a] - p0[a], d)
        if t1 > t2:
            t1, t2 = t2, t1
        t_enter, t_exit = max(t_enter, t1), min(t_exit, t2)
        if t_enter > t_exit:
            return None
    return t_enter


def earliest_entry(p0: Vec3, p1: Vec3, boxes: tuple[Bounds, ...]) -> int:
    """Index of the box the segment enters first (ties → lowest index), or -1."""
    best, best_t = -1, None
    for index, bounds in enumerate(boxes):
        t = segment_box_entry(p0, p1, bounds)
        if t is not None and (best_t is None or t < best_t):
            best, best_t = index, t
    return best


class FinishPlane:
    """The unbounded plane at RPn with normal RPn.forward; lateral extent measured along RPn's right."""

    def __init__(self, origin: Vec3, normal_e6: Vec3, right_e6: Vec3, half_width_um: int,
                 plane_eps_um: int, lateral_eps_um: int) -> None:
        self.origin = origin
        self.normal = normal_e6
        self.origin_normal = (*origin, *normal_e6)  # ``side``'s constants in one tuple, for a caller that inlines it
        self.right = right_e6
        self.arm_below = -plane_eps_um * 1_000_000
        self.lateral_limit = (half_width_um + lateral_eps_um) * 1_000_000

    def side(self, p: Vec3) -> int:
        """Signed distance to the plane ×1e6 (µm·1e6); negative = behind."""
        o, n = self.origin, self.normal
        return mul(p[0] - o[0], n[0]) + mul(p[1] - o[1], n[1]) + mul(p[2] - o[2], n[2])  # signed: intmath.mul

    def arms(self, d: int) -> bool:
        """Behind the plane by more than the plane epsilon."""
        return d < self.arm_below

    def crossed(self, p0: Vec3, p1: Vec3, d0: int, d1: int) -> bool:
        """Negative → positive crossing whose crossing point lies within width/2 + ε along RPn's right."""
        if not d0 < 0 < d1:
            return False
        o, r = self.origin, self.right
        lat0 = (p0[0] - o[0]) * r[0] + (p0[1] - o[1]) * r[1] + (p0[2] - o[2]) * r[2]
        dlat = (p1[0] - p0[0]) * r[0] + (p1[1] - p0[1]) * r[1] + (p1[2] - p0[2]) * r[2]
        span = d1 - d0  # crossing at t = -d0 / span
        lateral_scaled = lat0 * span + dlat * (-d0)  # = lateral(×1e6) · span
        return abs(lateral_scaled) <= self.lateral_limit * span
