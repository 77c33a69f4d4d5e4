"""Where a track entity's box lies in the route frame: the one projection of conveyor belts
(``sim_core.step.conveyors``) and solid entities (``sim_core.step.obstacles``).

The route-frame model has no track meshes, so an entity's box becomes the ranges its eight corners
project to: along the route (from its centre's projection, around a loop's seam too), across it and
above the ribbon. An entity is short against the route's curvature, so the route sample under its
centre stands for its whole box.
"""

from __future__ import annotations

from typing import NamedTuple

from sim_core.intmath import around_loop
from sim_core.specs.route import Route

Vec3 = tuple[int, int, int]


class Footprint(NamedTuple):
    """An entity's box in the route frame: the spans from its centre's arc, its lateral and height spans,
    and the route sample whose axes stand for the box's."""

    arc: int  # the centre's arc
    arc_lo: int  # the span along the route, from the centre's arc
    arc_hi: int
    lat_lo: int  # the span across it
    lat_hi: int
    h_lo: int  # the span above the ribbon
    h_hi: int
    sample: int  # the route sample under the centre


def project_box(route: Route, lo: Vec3, hi: Vec3) -> Footprint:
    """The footprint of the world box ``lo``..``hi`` (µm) on ``route``."""
    loop = route.length_um if route.loop else 0
    centre_arc, _, _ = route.project(((lo[0] + hi[0]) // 2, (lo[1] + hi[1]) // 2, (lo[2] + hi[2]) // 2))
    spans, lats, heights = [], [], []
    for x in (lo[0], hi[0]):
        for y in (lo[1], hi[1]):
            for z in (lo[2], hi[2]):
                arc, lat, h = route.project((x, y, z))
                spans.append(around_loop(arc - centre_arc, loop))
                lats.append(lat)
                heights.append(h)
    return Footprint(centre_arc, min(spans), max(spans), min(lats), max(lats), min(heights), max(heights),
                     route.index(route.wrap(centre_arc)))
