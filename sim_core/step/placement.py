"""Where a point of a car is in the world: the car's frame on its route sample (tangent-aligned, rigid).

A car at (arc, lateral offset, height over the ribbon) has its frame on route sample i (the one
``Route.point`` reads); a point at (x right, y up, z back) in the car's frame is the route point
``(arc − z, lateral + x, height + y)`` of that same sample, so the car stays rigid on a curve. The
arithmetic is ``Route.point_at``'s, written out in the compiled step over ``Ribbon``'s per-sample objects
(``Route`` is interpreted: reading its arrays costs an attribute lookup each), its products of signed
factors with ``intmath.mul``: the same integers.
"""

from __future__ import annotations

from sim_core.intmath import UNIT, div_trunc, mul
from sim_core.specs.route import Route

Point = tuple[int, int, int]


class Sample:
    """A route sample as the passes of every frame read it: its arc, position (x, y, z), tangent, right and
    up (ppm), and half width. A native object, not a tuple: its fields are read as machine words, where a
    tuple kept in a list is boxed, and unboxed whole (fourteen ints) at each read."""

    def __init__(self, arc: int, px: int, py: int, pz: int, tx: int, ty: int, tz: int, rx: int, ry: int, rz: int,
                 ux: int, uy: int, uz: int, width: int) -> None:
        self.arc, self.half_width = arc, width // 2
        self.px, self.py, self.pz = px, py, pz
        self.tx, self.ty, self.tz = tx, ty, tz
        self.rx, self.ry, self.rz = rx, ry, rz
        self.ux, self.uy, self.uz = ux, uy, uz

    def point(self, ds: int, lateral: int, height: int) -> Point:
        """The route point ``ds`` along this sample, ``lateral`` to its right and ``height`` above it
        (``Route.point_at``'s arithmetic, its signed products with ``intmath.mul``)."""
        return (self.px + (mul(self.tx, ds) + mul(self.rx, lateral) + mul(self.ux, height)) // UNIT,
                self.py + (mul(self.ty, ds) + mul(self.ry, lateral) + mul(self.uy, height)) // UNIT,
                self.pz + (mul(self.tz, ds) + mul(self.rz, lateral) + mul(self.uz, height)) // UNIT)


class Ribbon:
    """The route's samples as one object each, for the passes that place points on it every frame (built once
    per world: by the rules, and where magnets or fluids need it)."""

    def __init__(self, route: Route) -> None:
        self.loop, self.length_um, self.count = route.loop, route.length_um, route.count
        self.samples = [Sample(*values) for values in zip(route.arc, route.px, route.py, route.pz, route.tx, route.ty,
                                                          route.tz, route.rx, route.ry, route.rz, route.ux, route.uy,
                                                          route.uz, route.width, strict=True)]

    def sample(self, arc: int) -> tuple[Sample, int]:
        """The sample a car at ``arc`` reads (``Route.index`` of its wrapped arc) and how far along it it is."""
        length, count = self.length_um, self.count
        s = arc % length if self.loop else arc
        i = s * count // length
        i = count - 1 if i >= count else 0 if i < 0 else i
        found = self.samples[i]
        return found, s - found.arc


class CarFrame:
    """A car's frame at ``arc`` (µm along the route), ``lateral`` and ``height`` (its reference point)."""

    def __init__(self, ribbon: Ribbon, arc: int, lateral: int, height: int) -> None:
        s, self.along = ribbon.sample(arc)
        self.px, self.py, self.pz, self.tx, self.ty, self.tz = s.px, s.py, s.pz, s.tx, s.ty, s.tz
        self.rx, self.ry, self.rz, self.ux, self.uy, self.uz = s.rx, s.ry, s.rz, s.ux, s.uy, s.uz
        self.lateral, self.height = lateral, height

    def at(self, x: int, y: int, z: int) -> Point:
        """The world point (µm) of the car-frame offset (x right, y up, z back) from the reference point."""
        ds, dl, dh = self.along - z, self.lateral + x, self.height + y
        return (self.px + (mul(self.tx, ds) + mul(self.rx, dl) + mul(self.ux, dh)) // UNIT,
                self.py + (mul(self.ty, ds) + mul(self.ry, dl) + mul(self.uy, dh)) // UNIT,
                self.pz + (mul(self.tz, ds) + mul(self.rz, dl) + mul(self.uz, dh)) // UNIT)

    def along_axes(self, jx: int, jy: int, jz: int) -> Point:
        """A world vector (an impulse) along the frame's (tangent, right, up), truncated toward zero."""
        return (div_trunc(mul(jx, self.tx) + mul(jy, self.ty) + mul(jz, self.tz), UNIT),
                div_trunc(mul(jx, self.rx) + mul(jy, self.ry) + mul(jz, self.rz), UNIT),
                div_trunc(mul(jx, self.ux) + mul(jy, self.uy) + mul(jz, self.uz), UNIT))

    def to_world(self, along: int, right: int, up: int) -> Point:
        """A direction along the frame's (tangent, right, up) (ppm) as a world vector, truncated toward zero."""
        return (div_trunc(along * self.tx + right * self.rx + up * self.ux, UNIT),
                div_trunc(along * self.ty + right * self.ry + up * self.uy, UNIT),
                div_trunc(along * self.tz + right * self.rz + up * self.uz, UNIT))


def ribbon_point(ribbon: Ribbon, arc: int, lateral: int, height: int) -> Point:
    """``CarFrame(ribbon, arc, lateral, height).at(0, 0, 0)`` without the frame: the point itself, which is
    all a per-car test of every frame (the fluids') needs."""
    sample, ds = ribbon.sample(arc)
    return sample.point(ds, lateral, height)
