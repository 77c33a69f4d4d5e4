"""Where a point of a car is in the world: the car's frame on its route sample (tangent-aligned, rigid).

A car at (arc, lateral offset, height over the ribbon) has its frame on route sample i (the one
``Route.point`` reads); a point at (x right, y up, z back) in the car's frame is the route point
``(arc − z, lateral + x, height + y)`` of that same sample, so the car stays rigid on a curve. The
arithmetic is ``Route.point_at``'s, written out in the compiled step (``Route`` is interpreted): the
same integers, without a call per point.
"""

from __future__ import annotations

from sim_core.intmath import UNIT, div_trunc
from sim_core.specs.route import Route

Point = tuple[int, int, int]


class CarFrame:
    """A car's frame at ``arc`` (µm along the route), ``lateral`` and ``height`` (its reference point)."""

    def __init__(self, route: Route, arc: int, lateral: int, height: int) -> None:
        i, self.along = _sample(route, arc)
        self.px, self.py, self.pz = route.px[i], route.py[i], route.pz[i]
        self.lateral, self.height = lateral, height
        self.tx, self.ty, self.tz = route.tx[i], route.ty[i], route.tz[i]
        self.rx, self.ry, self.rz = route.rx[i], route.ry[i], route.rz[i]
        self.ux, self.uy, self.uz = route.ux[i], route.uy[i], route.uz[i]

    def at(self, x: int, y: int, z: int) -> Point:
        """The world point (µm) of the car-frame offset (x right, y up, z back) from the reference point."""
        ds, dl, dh = self.along - z, self.lateral + x, self.height + y
        return (self.px + (self.tx * ds + self.rx * dl + self.ux * dh) // UNIT,
                self.py + (self.ty * ds + self.ry * dl + self.uy * dh) // UNIT,
                self.pz + (self.tz * ds + self.rz * dl + self.uz * dh) // UNIT)

    def along_axes(self, jx: int, jy: int, jz: int) -> Point:
        """A world vector (an impulse) along the frame's (tangent, right, up), truncated toward zero."""
        return (div_trunc(jx * self.tx + jy * self.ty + jz * self.tz, UNIT),
                div_trunc(jx * self.rx + jy * self.ry + jz * self.rz, UNIT),
                div_trunc(jx * self.ux + jy * self.uy + jz * self.uz, UNIT))

    def to_world(self, along: int, right: int, up: int) -> Point:
        """A direction along the frame's (tangent, right, up) (ppm) as a world vector, truncated toward zero."""
        return (div_trunc(along * self.tx + right * self.rx + up * self.ux, UNIT),
                div_trunc(along * self.ty + right * self.ry + up * self.uy, UNIT),
                div_trunc(along * self.tz + right * self.rz + up * self.uz, UNIT))


def ribbon_point(route: Route, arc: int, lateral: int, height: int) -> Point:
    """``CarFrame(route, arc, lateral, height).at(0, 0, 0)`` without the frame: the point itself, which is
    all a per-car test of every frame (the fluids') needs."""
    i, ds = _sample(route, arc)
    return (route.px[i] + (route.tx[i] * ds + route.rx[i] * lateral + route.ux[i] * height) // UNIT,
            route.py[i] + (route.ty[i] * ds + route.ry[i] * lateral + route.uy[i] * height) // UNIT,
            route.pz[i] + (route.tz[i] * ds + route.rz[i] * lateral + route.uz[i] * height) // UNIT)


def _sample(route: Route, arc: int) -> tuple[int, int]:
    """The route sample a car at ``arc`` reads (``Route.index`` of its wrapped arc) and how far along it."""
    length, count = route.length_um, route.count
    s = arc % length if route.loop else arc
    i = s * count // length
    i = count - 1 if i >= count else 0 if i < 0 else i
    return i, s - route.arc[i]
