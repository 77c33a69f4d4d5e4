"""The route seen from above: a track's sampled route frames projected once onto the ground plane.

Every picture of a race (the terminal's braille map, the replay page, the live page) draws the same
``TrackMap``: the centreline and both edges of the ribbon as plan polylines, and each car at its place
on the route (arc position, lateral offset, height) projected the same way. "Above" is against the
track's own gravity direction, so a track authored with another up axis is still seen from above; a
track longer north to south than east to west is turned a quarter, so that it fills a wide screen.

Floats live here and only here: the simulation's route frames are integers (µm, directions ×1e6); the
view turns them into metres once per track (``track_map`` caches by route) and never feeds anything back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim_core.specs.route import Route

OUTLINE_POINTS = 480  # at most this many plan points per polyline: a fine curve at any size the pictures use
UM_PER_M = 1_000_000

Plan = tuple[float, float]  # metres on the ground plane; x to the right and y downwards, as screens count


@dataclass(frozen=True)
class Bounds:
    """The box a map's outline fills, in plan metres."""

    left: float
    top: float
    right: float
    bottom: float

    @property
    def width(self) -> float:
        """Plan extent across, at least a millimetre (a straight route still has a box)."""
        return max(self.right - self.left, 1e-3)

    @property
    def height(self) -> float:
        """Plan extent down, at least a millimetre."""
        return max(self.bottom - self.top, 1e-3)


def _ground_axes(gravity_e6: tuple[int, int, int]) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Two unit vectors spanning the plane across gravity: screen right, and screen down such that right ×
    down points along gravity (the viewer looks down the way things fall). With gravity −y: x and z."""
    norm = math.sqrt(sum(c * c for c in gravity_e6)) or 1.0
    g = tuple(c / norm for c in gravity_e6)
    seed = (1.0, 0.0, 0.0) if abs(g[0]) < 0.9 else (0.0, 0.0, 1.0)
    along = sum(a * b for a, b in zip(seed, g, strict=True))
    raw = tuple(s - along * c for s, c in zip(seed, g, strict=True))
    length = math.sqrt(sum(c * c for c in raw))
    right = (raw[0] / length, raw[1] / length, raw[2] / length)
    down = (g[1] * right[2] - g[2] * right[1], g[2] * right[0] - g[0] * right[2], g[0] * right[1] - g[1] * right[0])
    return right, down


class TrackMap:
    """One track's route in plan metres: ``centre``, ``left`` and ``right`` polylines (at most
    ``OUTLINE_POINTS`` each), ``loop``, ``bounds`` (edges included), ``width_m`` (the ribbon's median
    width), ``length_m``; ``place`` puts a car on it. Build with ``track_map``, which makes one per route."""

    def __init__(self, route: Route, gravity_e6: tuple[int, int, int]) -> None:
        self.route = route
        self.loop = route.loop
        self.length_m = route.length_um / UM_PER_M
        widths = sorted(route.width)
        self.width_m = widths[len(widths) // 2] / UM_PER_M
        stride = max(1, -(-route.count // OUTLINE_POINTS))
        self._samples = list(range(0, route.count + 1, stride))
        if self._samples[-1] != route.count:
            self._samples.append(route.count)
        right, down = _ground_axes(gravity_e6)
        self._project(right, down)
        if self.bounds.height > self.bounds.width:  # turned a quarter (still from above): screens are wide
            self._project(down, (-right[0], -right[1], -right[2]))

    def _project(self, right: tuple[float, float, float], down: tuple[float, float, float]) -> None:
        route, samples = self.route, self._samples
        self._right, self._down = right, down
        self.centre = tuple(self._plan(route.px[i], route.py[i], route.pz[i]) for i in samples)
        self.left = tuple(self._edge(i, -1) for i in samples)
        self.right = tuple(self._edge(i, 1) for i in samples)
        xs = [p[0] for line in (self.left, self.right) for p in line]
        ys = [p[1] for line in (self.left, self.right) for p in line]
        self.bounds = Bounds(min(xs), min(ys), max(xs), max(ys))

    def _plan(self, x: float, y: float, z: float) -> Plan:
        r, d = self._right, self._down
        return ((x * r[0] + y * r[1] + z * r[2]) / UM_PER_M, (x * d[0] + y * d[1] + z * d[2]) / UM_PER_M)

    def _edge(self, i: int, side: int) -> Plan:
        route = self.route
        half = side * route.width[i] / 2 / 1e6  # the right vector is ×1e6
        return self._plan(route.px[i] + route.rx[i] * half, route.py[i] + route.ry[i] * half,
                          route.pz[i] + route.rz[i] * half)

    def place(self, arc_um: int, lat_um: int, h_um: int) -> Plan:
        """Where a car at ``arc_um`` along the route, ``lat_um`` right of the centreline and ``h_um`` above the
        ribbon is seen from above (the route's own integer frame, ``Route.point``, then projected)."""
        return self._plan(*self.route.point(arc_um, lat_um, h_um))


@lru_cache(maxsize=16)
def track_map(route: Route, gravity_e6: tuple[int, int, int]) -> TrackMap:
    """The plan of ``route`` under ``gravity_e6``, made once per route: a world's route is shared by every
    world of its track (``sim_core``'s ``route_for``), so a race's rounds, its replay and its live views
    project it once."""
    return TrackMap(route, gravity_e6)
