"""Track rules applied to one car after its motion (spec/simcore.md §6.3–6.4).

Within a frame, for a car not under a penalty: checkpoints light in order along the COM segment, then
the finish plane is tested (so a finish in the same frame as a kill-zone entry is credited), then kill
zones (earliest entry, ties → lowest index), then fall-out along gravity, then b-soft; finally the
progress and the last legal point are updated. A car under a penalty is only timed down (a b-soft
penalty cancels if the car is back inside the corridor during its deceleration; falling out escalates
it to a fall-out) and teleported when its timer runs out. Teleports reset the previous COM and arming.
"""

from __future__ import annotations

from typing import Final

from sim_core.constants import (
    CONTACT_HYSTERESIS_FRAMES, FALL_OUT_MARGIN_UM, FINISH_LATERAL_EPS_UM, FINISH_PLANE_EPS_UM, PENALTY_DECEL_FRAMES,
    PENALTY_FADE_FRAMES,
)
from sim_core.intmath import UNIT, Vec3, cross, distance_sq, dot, mul, normalize
from sim_core.state.layout import (
    AIR_FRAMES, ARC, ARMED, FINISHED_FRAME, H, LAPS, LAT, LEGAL_ARC, LEGAL_LAT, NEXT_CP, OUTSIDE, PENALTY_BSOFT,
    PENALTY_FALLOUT, PENALTY_KIND, PENALTY_NONE, PENALTY_TIMER, PREV_X, PREV_Y, PREV_Z, PROGRESS, STATUS,
    STATUS_FINISHED, VH, VLAT, VS,
)
from sim_core.step.model import CarModel
from sim_core.step.placement import Ribbon
from sim_core.specs.route import Route
from sim_core.step.sweeps import FinishPlane, box_bounds, earliest_entry, hull, segment_box_entry, segment_misses
from sim_core.specs.track import TrackSpec

PENALTY_FRAMES: Final = PENALTY_DECEL_FRAMES + PENALTY_FADE_FRAMES


class RuleContext:
    """Track-rule constants derived once from the TrackSpec and its route."""

    def __init__(self, track: TrackSpec, route: Route) -> None:
        self.route = route
        self.fixed = track.track_type == "fixed"
        self.apron_um = track.apron_um
        self.loop = route.loop
        self.laps_to_finish = track.laps_to_finish
        self.checkpoints = box_bounds(track.checkpoints)
        self.kill_zones = box_bounds(track.kill_zones)
        self.kill_zone_hull = hull(self.kill_zones)
        self.checkpoint_arcs = tuple(route.project(box.center_um)[0] for box in track.checkpoints)
        # routeProgressUm's cap by next_checkpoint: the checkpoint's arc, the route's length once all are lit
        self.progress_caps = (*self.checkpoint_arcs, route.length_um)
        self.respawns = tuple(route.project(p.position_um)[:2] for p in track.respawn_points)
        last = track.route[-1]
        right = normalize(cross(last.forward_e6, last.up_e6))
        self.finish = FinishPlane(last.position_um, last.forward_e6, right, last.width_um // 2,
                                  FINISH_PLANE_EPS_UM, FINISH_LATERAL_EPS_UM)
        self.gravity = track.gravity_dir_e6
        lo, hi = _track_aabb(track, route)
        corners = [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
        self.fall_limit = max(dot(corner, self.gravity) for corner in corners) + FALL_OUT_MARGIN_UM * UNIT
        # what the COM and the corridor tests read of each route sample (``Route.point_at`` and the half
        # width), as native objects (built once per world)
        self.ribbon = Ribbon(route)

    def com(self, c: list[int], model: CarModel) -> Vec3:
        """The chassis COM: the ribbon point under the car lifted by its height above the surface + half its height."""
        return self.route.point(c[ARC], c[LAT], c[H] + model.height_um // 2)


def _track_aabb(track: TrackSpec, route: Route) -> tuple[Vec3, Vec3]:
    if track.aabb_min_um is not None and track.aabb_max_um is not None:
        return track.aabb_min_um, track.aabb_max_um
    reach = max(route.width) // 2 + track.apron_um
    lo = (min(route.px) - reach, min(route.py) - reach, min(route.pz) - reach)
    hi = (max(route.px) + reach, max(route.py) + reach, max(route.pz) + reach)
    return lo, hi


def apply_rules(c: list[int], model: CarModel, ctx: RuleContext, frame: int) -> None:
    """Sweeps, laps, progress and penalties of one racing car for the frame that just ran.

    The car's route sample is located once: the COM and the corridor tests below all read it (a lap
    completed here moves the arc by exactly one loop length, which keeps the sample). The common frame
    (nothing entered, nothing crossed) costs a few comparisons: each trigger is first tested against its
    bounding box, and only a possible hit runs the exact test."""
    arc, lat = c[ARC], c[LAT]
    sample, ds = ctx.ribbon.sample(arc)
    half = sample.half_width
    com = sample.point(ds, lat, c[H] + model.height_um // 2)
    x, y, z = com
    prev = (c[PREV_X], c[PREV_Y], c[PREV_Z])
    if c[PENALTY_TIMER]:
        _run_penalty(c, model, ctx, com, half)
        return
    checkpoints = ctx.checkpoints
    if c[NEXT_CP] < len(checkpoints) and not segment_misses(prev, com, checkpoints[c[NEXT_CP]]):
        _light_checkpoints(c, ctx, prev, com)
    plane = ctx.finish
    ox, oy, oz, nx, ny, nz = plane.origin_normal
    d1 = mul(x - ox, nx) + mul(y - oy, ny) + mul(z - oz, nz)  # FinishPlane.side, written out
    if c[ARMED] and plane.crossed(prev, com, plane.side(prev), d1) and c[NEXT_CP] == len(checkpoints):
        _complete_lap(c, ctx, frame)
        if c[STATUS] == STATUS_FINISHED:
            _remember(c, com)
            return
        arc = c[ARC]  # one loop length back
    elif d1 < plane.arm_below:  # FinishPlane.arms
        c[ARMED] = 1
    zones = ctx.kill_zone_hull  # one test against all kill zones at once, then the exact earliest entry
    gx, gy, gz = ctx.gravity
    if zones is not None and not segment_misses(prev, com, zones) and earliest_entry(prev, com, ctx.kill_zones) >= 0:
        _start_penalty(c, PENALTY_FALLOUT)
    elif mul(x, gx) + mul(y, gy) + mul(z, gz) > ctx.fall_limit:  # along gravity below the track's lowest point
        _start_penalty(c, PENALTY_FALLOUT)
    elif ctx.fixed and c[AIR_FRAMES] <= CONTACT_HYSTERESIS_FRAMES and not -half <= lat <= half and (
            -half - ctx.apron_um <= lat <= half + ctx.apron_um):  # beside the corridor, over the apron
        _start_penalty(c, PENALTY_BSOFT)
    # routeProgressUm: monotone within the lap, capped at the next unlit checkpoint's arc length
    cap = ctx.progress_caps[c[NEXT_CP]]
    if (arc if arc < cap else cap) > c[PROGRESS]:
        c[PROGRESS] = arc if arc < cap else cap
    if not c[PENALTY_TIMER] and c[H] == 0 and c[AIR_FRAMES] == 0 and not c[OUTSIDE] and (
            not ctx.fixed or -half <= lat <= half):  # grounded inside the corridor: a legal point
        c[LEGAL_ARC], c[LEGAL_LAT] = arc, lat
    c[PREV_X], c[PREV_Y], c[PREV_Z] = com


def _remember(c: list[int], com: Vec3) -> None:
    c[PREV_X], c[PREV_Y], c[PREV_Z] = com


def _light_checkpoints(c: list[int], ctx: RuleContext, prev: Vec3, com: Vec3) -> None:
    """Light the next unlit checkpoint if the segment enters it, then the one after it if entered later."""
    last_t = None
    while c[NEXT_CP] < len(ctx.checkpoints):
        t = segment_box_entry(prev, com, ctx.checkpoints[c[NEXT_CP]])
        if t is None or (last_t is not None and t < last_t):
            return
        c[NEXT_CP] += 1
        last_t = t


def _complete_lap(c: list[int], ctx: RuleContext, frame: int) -> None:
    c[LAPS] += 1
    if not ctx.loop or c[LAPS] >= ctx.laps_to_finish:
        c[STATUS] = STATUS_FINISHED
        c[FINISHED_FRAME] = frame
        c[PROGRESS] = ctx.route.length_um
        return
    c[NEXT_CP] = 0
    c[ARMED] = 0
    c[ARC] -= ctx.route.length_um
    c[LEGAL_ARC] -= ctx.route.length_um
    c[PROGRESS] = 0


def _start_penalty(c: list[int], kind: int) -> None:
    c[PENALTY_KIND] = kind
    c[PENALTY_TIMER] = PENALTY_FRAMES


def _run_penalty(c: list[int], model: CarModel, ctx: RuleContext, com: Vec3, half: int) -> None:
    timer = c[PENALTY_TIMER]
    if c[PENALTY_KIND] == PENALTY_BSOFT:
        if dot(com, ctx.gravity) > ctx.fall_limit:
            _start_penalty(c, PENALTY_FALLOUT)
            _remember(c, com)
            return
        if timer > PENALTY_FADE_FRAMES and -half <= c[LAT] <= half and not c[OUTSIDE]:
            c[PENALTY_KIND], c[PENALTY_TIMER] = PENALTY_NONE, 0
            _remember(c, com)
            return
    timer -= 1
    c[PENALTY_TIMER] = timer
    if timer:
        _remember(c, com)
        return
    if c[PENALTY_KIND] == PENALTY_BSOFT:
        arc, lat = c[LEGAL_ARC], c[LEGAL_LAT]
    else:
        arc, lat = _respawn_target(c, ctx)
    teleport(c, model, ctx, arc, lat)


def _respawn_target(c: list[int], ctx: RuleContext) -> tuple[int, int]:
    """Nearest respawn point to the car's last legal point (ties → lowest index); none → RP1."""
    route = ctx.route
    anchor = route.point(c[LEGAL_ARC], c[LEGAL_LAT], 0)
    best, best_d = None, None
    for arc, lat in ctx.respawns:
        p = route.point(arc, lat, 0)
        d = distance_sq(p, anchor)
        if best_d is None or d < best_d:
            best, best_d = (arc, lat), d
    arc, lat = best if best is not None else (0, 0)
    if ctx.loop:  # the same place in the lap frame nearest to the last legal point
        length = route.length_um
        arc += (c[LEGAL_ARC] - arc + length // 2) // length * length
    return arc, lat


def teleport(c: list[int], model: CarModel, ctx: RuleContext, arc: int, lat: int) -> None:
    """Put the car at rest on the surface at (arc, lat); resets the sweep origin and finish arming."""
    c[ARC], c[LAT], c[H] = arc, lat, 0
    c[VS] = c[VLAT] = c[VH] = 0
    c[AIR_FRAMES] = c[OUTSIDE] = 0
    c[ARMED] = 0
    c[PENALTY_KIND], c[PENALTY_TIMER] = PENALTY_NONE, 0
    _remember(c, ctx.com(c, model))
