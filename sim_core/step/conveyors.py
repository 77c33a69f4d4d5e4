"""Conveyor belts carrying the cars that stand on them (spec/simcore.md §7.4 "Entities": an impulse along
the belt's local −Z, capped at μ·N; spec/assets.md §5.6 ``kinematic_conveyor``).

The route-frame model's only surface is the ribbon, so a belt is a patch of it: its footprint is where its
box's corners project on the route (``sim_core.step.footprint``: the span along the route from its
centre's projection, and the span across it), grown by 10 mm. A car stands on it when it is on the
ground (height 0 over the ribbon) with its arc and lateral offset inside that footprint (on a loop, the
arc measured around the seam); where belts overlap, the first in the track's order carries it. The belt
runs along its direction projected on the route sample under its centre (a belt is short and the
sample's frame is taken as its own).

The impulse of a frame, along the belt's direction d (route axes, ppm), is the one that brings the car's
speed along d to the belt's, ``m·(v_belt − v·d)``, capped at ``μ·N`` with N the car's normal impulse of
the frame and μ the Average of its tires' and the belt's friction: a belt carries a light car, and a car
whose speed it matches feels nothing. It adds to the tires' work after them (the belt moves the ground
under them) in ``sim_core.step.physics.advance``.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from sim_core.intmath import UNIT, around_loop, div_trunc
from sim_core.specs.conveyors import ConveyorSpec
from sim_core.specs.materials import material
from sim_core.specs.route import Route
from sim_core.state.layout import ARC, H, LAT
from sim_core.step.footprint import project_box
from sim_core.step.model import CarModel

REACH_UM: Final = 10_000
"""10 mm: how far outside its projected box a belt still carries a car."""


class Belt(NamedTuple):
    """What a car on a belt reads in the frame: the direction along the route axes (s, l, ppm), the belt's
    speed (µm/s) and the friction μ (‰) between the car's tires and the belt."""

    along: int
    across: int
    speed: int
    mu_milli: int


class _Footprint(NamedTuple):
    arc: int  # the centre's arc
    arc_lo: int  # the span along the route, from the centre's arc
    arc_hi: int
    lat_lo: int
    lat_hi: int
    along: int
    across: int
    speed: int
    friction_milli: int


class Conveyors:
    """The round's belts (built once by ``World``; ``belt`` once per live car and frame)."""

    def __init__(self, route: Route, belts: tuple[ConveyorSpec, ...], models: list[CarModel]) -> None:
        self.loop_length = route.length_um if route.loop else 0
        self.footprints = [_footprint(route, b) for b in belts]
        # each car's tire friction (its first tire's material: the built-ins' tires are alike)
        self.tire_friction = [material(m.spec.parts[m.tire_parts[0]].material).friction_milli for m in models]

    def belt(self, slot: int, c: list[int]) -> Belt | None:
        """The belt the car stands on this frame, or None."""
        if c[H] != 0:
            return None
        arc, lat, loop = c[ARC], c[LAT], self.loop_length
        for f in self.footprints:
            d = around_loop(arc - f.arc, loop)
            if f.arc_lo <= d <= f.arc_hi and f.lat_lo <= lat <= f.lat_hi:
                return Belt(f.along, f.across, f.speed, (self.tire_friction[slot] + f.friction_milli) // 2)
        return None


def _footprint(route: Route, belt: ConveyorSpec) -> _Footprint:
    box = project_box(route, belt.min_um, belt.max_um)
    i = box.sample
    dx, dy, dz = belt.direction_e6
    along = div_trunc(dx * route.tx[i] + dy * route.ty[i] + dz * route.tz[i], UNIT)
    across = div_trunc(dx * route.rx[i] + dy * route.ry[i] + dz * route.rz[i], UNIT)
    return _Footprint(box.arc, box.arc_lo - REACH_UM, box.arc_hi + REACH_UM, box.lat_lo - REACH_UM,
                      box.lat_hi + REACH_UM, along, across, belt.speed_um_s, material(belt.material).friction_milli)
