"""Solid track entities (spec/simcore.md §7.4 "Entities", spec/assets.md §5.6): fixed decorations, movers
(``kinematic_move``), and the destructible ones among them.

The route-frame model has no track meshes, so an entity is its box's footprint in the route frame
(``sim_core.step.footprint``: the spans along the route, across it and above the ribbon). A mover's box
travels by its amplitude (turned onto the route axes under its centre) times the swing of its period at
the frame (``sim_core.step.curves``; ``step``: all the way for the first half of the period, back for the
second): its pose is a function of the frame alone, as the spec's kinematics are, so it is not saved.

After car-to-car contact, every live car (not a ghost) is kept out of every intact entity, car by car in
slot order, entity by entity in the track's order. A car that came into an entity's box (or right
through a thin one) along the route during the frame, clear of it at the frame's start, is put back on
the side it came from; any other car overlapping the box is put out through the face of least
penetration (along the route, across it, or up onto its top; down only while the car stays above the
ribbon).
If the car moves into the face faster than the entity does, the entity (immovable: a kinematic or fixed
body) gives it ``(1 + e)·m·v_close`` (e the Average of the two restitutions) and the impact's energy
``½·m·v_close²`` is impact fatigue (§7.2, ``contact.add_impact``) on the car's body and, on a destructible
entity, on the entity with its material's strengths and its own face's area. A destructible entity breaks
as a part does (stress above 1.5 × ultimate at once, or fatigue 1e6 ppm), in the end-of-frame order of the
track; once broken it has no collider and no motion (its fragments are visual only, spec §3). Its
fatigue and break frame are saved (``OBSTACLE_FIELDS``); the others have no state.

An entity's top is not ground: a car standing on it has no traction and slides off as the frame's physics
lets it. There is no friction against an entity's faces.
"""

from __future__ import annotations

from typing import Final

from sim_core.constants import FATIGUE_BREAK_PPM
from sim_core.intmath import (
    FULL_TURN_MDEG, UNIT, around_loop, component, cross, div_round, div_trunc, dot, mul, sin_cos_ppm,
)
from sim_core.specs.materials import material
from sim_core.specs.obstacles import ObstacleSpec
from sim_core.specs.route import Route
from sim_core.state.layout import (
    ARC, H, LAT, OB_BREAK, OB_FATIGUE, OBSTACLE_STRIDE, POSITION_FIELDS, VELOCITY_FIELDS, W_FRAME,
)
from sim_core.step.contact import NO_ATTACKER, Collider, ContactBox, add_impact, commit_loads, impact_fatigue
from sim_core.step.curves import swing_ppm
from sim_core.step.footprint import project_box

CURVE_STEP: Final = 0
CURVE_LINEAR: Final = 1
CURVE_SIN: Final = 2
CURVES: Final = {"step": CURVE_STEP, "linear": CURVE_LINEAR, "sin": CURVE_SIN}

Box = tuple[int, int, int, int, int, int, int]
"""An entity's box at a frame (``Obstacle.box_at``): its lows and highs along s, l and h, and its travel
along s."""


class Pose:
    """Where an entity's box is at a frame, in the route frame: its lows and highs along s, l and h (s from
    its rest centre's arc), its s span a frame before, each face's velocity (µm/s: the lows', then the
    highs', the change over the frame), and its travel along s now and a frame before (a car's arc is
    brought around a loop's seam from there, the entity's own centre). A native object, not a tuple: the
    pair test and the keep-out read its fields as machine words, where a tuple kept in a list is boxed
    and unboxed whole at each read (and boxed again when an axis indexes it)."""

    def __init__(self, now: Box, before: Box) -> None:
        self.lows = (now[0], now[1], now[2])
        self.highs = (now[3], now[4], now[5])
        self.low_before, self.high_before = before[0], before[3]
        self.low_velocities = (mul(now[0] - before[0], 60), mul(now[1] - before[1], 60), mul(now[2] - before[2], 60))
        self.high_velocities = (mul(now[3] - before[3], 60), mul(now[4] - before[4], 60),
                                mul(now[5] - before[5], 60))
        self.travel, self.travel_before = now[6], before[6]


class Obstacle:
    """One solid entity's constants: its footprint (the centre's arc; its spans along, across and above
    the route), its travel along the route axes, its turn (the axis in the route frame, the pivot from the
    rest centre, the amplitude) with the curve, period and phase, its restitution and, when destructible,
    its strengths and its slot's first index in the world's list (-1: not destructible)."""

    def __init__(self, route: Route, spec: ObstacleSpec, at: int) -> None:
        box = project_box(route, spec.min_um, spec.max_um)
        self.arc = box.arc
        self.lows = (box.arc_lo, box.lat_lo, box.h_lo)
        self.highs = (box.arc_hi, box.lat_hi, box.h_hi)
        spans = (box.arc_hi - box.arc_lo, box.lat_hi - box.lat_lo, box.h_hi - box.h_lo)
        self.faces = (spans[1] * spans[2], spans[0] * spans[2], spans[0] * spans[1])  # µm², by the face's axis
        solid = material(spec.material)
        self.restitution_milli = solid.restitution_milli
        strengths = (solid.yield_strength_kpa, solid.ultimate_strength_kpa)
        self.strength_kpa = (strengths[0], strengths[1]) if spec.destructible and strengths[0] is not None \
            and strengths[1] is not None else None
        self.at = at
        motion = spec.motion
        i = box.sample
        self.travel = (0, 0, 0)
        self.turn_mdeg = 0
        self.axis = (0, 0, 0)
        self.pivot = (0, 0, 0)
        self.curve, self.period, self.phase, self.open = CURVE_STEP, 1, 0, 1
        if motion is not None:
            self.travel = _along_route(route, i, motion.amplitude_um)
            self.curve, self.period, self.phase = CURVES[motion.curve], motion.period_frames, motion.phase_frames
            self.open = motion.period_frames * motion.open_milli // 1000
            if motion.rotation_mdeg:
                self.turn_mdeg = motion.rotation_mdeg
                # the route frame (t, r, u) is left-handed where t × r = −u: a turn keeps the world's sense
                # (right-handed about the world axis) by turning the other way in it
                handed = _along_route(route, i, cross((route.tx[i], route.ty[i], route.tz[i]),
                                                      (route.rx[i], route.ry[i], route.rz[i])))
                self.axis = _along_route(route, i, motion.rotation_axis_e6)
                if handed[2] < 0:
                    self.turn_mdeg = -self.turn_mdeg
                pivot_arc, pivot_lat, pivot_h = route.project(motion.pivot_um)
                loop = route.length_um if route.loop else 0
                self.pivot = (around_loop(pivot_arc - box.arc, loop), pivot_lat, pivot_h)
        self.moves = self.travel != (0, 0, 0) or self.turn_mdeg != 0
        still = (*self.lows, *self.highs, 0)
        self.still = Pose(still, still)
        # the last two boxes computed (``_box_cached``), each with its frame: two native slots, not a dict
        self._frame_a = self._frame_b = 0
        self._box_a = self._box_b = self.box_at(0)

    def swing(self, frame: int) -> int:
        """How far out (ppm) the entity's motion is at ``frame``."""
        t = (frame + self.phase) % self.period
        if self.curve == CURVE_STEP:
            return UNIT if t < self.open else 0
        return swing_ppm(t, self.period, self.curve == CURVE_LINEAR)

    def box_at(self, frame: int) -> Box:
        """Its lows and highs along s, l and h at ``frame`` and its travel along s: the rest box turned
        about the pivot (a box that turns is the box around its turned corners), then moved by its travel."""
        out = self.swing(frame)
        if not self.turn_mdeg:
            lows, highs = self.lows, self.highs
        else:
            if abs(self.turn_mdeg) == FULL_TURN_MDEG:  # a whole turn: steadily, once a period
                angle = (frame + self.phase) % self.period * FULL_TURN_MDEG // self.period
                angle = angle if self.turn_mdeg > 0 else -angle
            else:
                angle = div_trunc(mul(self.turn_mdeg, out), UNIT)
            lows, highs = _turned_box(self.lows, self.highs, self.pivot, self.axis, angle)
        shift = [div_trunc(mul(travel, out), UNIT) if travel else 0 for travel in self.travel]
        return (lows[0] + shift[0], lows[1] + shift[1], lows[2] + shift[2],
                highs[0] + shift[0], highs[1] + shift[1], highs[2] + shift[2], shift[0])

    def pose(self, frame: int) -> Pose:
        """Where it stands at ``frame`` (``Pose``): its box now, its s span a frame before, and its faces'
        velocities over the frame. A box is a function of the frame alone, so the last two are kept: a
        frame's "before" is the previous frame's "now" (a turn's sine is a 30-term series)."""
        if not self.moves:
            return self.still
        return Pose(self._box_cached(frame), self._box_cached(frame - 1))

    def _box_cached(self, frame: int) -> Box:
        """``box_at(frame)``, from the last two boxes computed when it is one of them; a new one replaces
        the older (lower frame) of the two."""
        if frame == self._frame_a:
            return self._box_a
        if frame == self._frame_b:
            return self._box_b
        box = self.box_at(frame)
        if self._frame_a < self._frame_b:
            self._frame_a, self._box_a = frame, box
        else:
            self._frame_b, self._box_b = frame, box
        return box


def _along_route(route: Route, i: int, v: tuple[int, int, int]) -> tuple[int, int, int]:
    """World vector ``v`` on the route axes (tangent, right, up) of sample ``i``."""
    return (div_trunc(v[0] * route.tx[i] + v[1] * route.ty[i] + v[2] * route.tz[i], UNIT),
            div_trunc(v[0] * route.rx[i] + v[1] * route.ry[i] + v[2] * route.rz[i], UNIT),
            div_trunc(v[0] * route.ux[i] + v[1] * route.uy[i] + v[2] * route.uz[i], UNIT))


def _turned_box(lows: tuple[int, int, int], highs: tuple[int, int, int], pivot: tuple[int, int, int],
                axis: tuple[int, int, int], angle_mdeg: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The box around the corners of ``lows``..``highs`` turned by ``angle_mdeg`` about ``axis`` (unit, ppm)
    through ``pivot`` (Rodrigues' rotation, each product truncated toward zero)."""
    sin, cos = sin_cos_ppm(angle_mdeg)
    kx, ky, kz = axis
    lo = [0, 0, 0]
    hi = [0, 0, 0]
    first = True
    for x in (lows[0], highs[0]):
        for y in (lows[1], highs[1]):
            for z in (lows[2], highs[2]):
                v = (x - pivot[0], y - pivot[1], z - pivot[2])
                vx, vy, vz = v
                cx, cy, cz = cross(axis, v)  # k × v, ppm·µm
                keep = div_trunc(dot(axis, v), UNIT) * (UNIT - cos)
                turned = (pivot[0] + div_trunc(vx * cos + div_trunc(cx, UNIT) * sin + div_trunc(kx * keep, UNIT), UNIT),
                          pivot[1] + div_trunc(vy * cos + div_trunc(cy, UNIT) * sin + div_trunc(ky * keep, UNIT), UNIT),
                          pivot[2] + div_trunc(vz * cos + div_trunc(cz, UNIT) * sin + div_trunc(kz * keep, UNIT), UNIT))
                for k in range(3):
                    if first or turned[k] < lo[k]:
                        lo[k] = turned[k]
                    if first or turned[k] > hi[k]:
                        hi[k] = turned[k]
                first = False
    return (lo[0], lo[1], lo[2]), (hi[0], hi[1], hi[2])


def _way_out(out_high: int, out_low: int) -> tuple[int, bool]:
    """The shorter way out of a box along one axis, from how far a car must move to leave it through its
    high face and through its low face: (that distance, whether through the high face); the high face on
    a tie."""
    return (out_high, True) if out_high <= out_low else (out_low, False)


class Obstacles:
    """The round's solid entities (module docstring); ``slots``: the destructible ones, each with a slot
    in the world's list from ``base`` on (0: nothing saved)."""

    def __init__(self, route: Route, specs: tuple[ObstacleSpec, ...], base: int) -> None:
        self.loop_length = route.length_um if route.loop else 0
        self.obstacles: list[Obstacle] = []
        slots = 0
        for spec in specs:
            self.obstacles.append(Obstacle(route, spec, base + slots * OBSTACLE_STRIDE if spec.destructible else -1))
            slots += spec.destructible
        self.slots = slots

    def collide(self, world: list[int], cars: list[list[int]], starts: list[list[int]],
                boxes: list[ContactBox], colliders: list[Collider]) -> dict[int, int]:
        """Keep every live car out of every intact entity (module docstring), ``starts`` each car's arc,
        lateral offset and height when the frame began; the parts the impacts break, as a bit mask per car.
        The entities they break are broken here, at the frame this step makes."""
        frame = world[W_FRAME] + 1
        loop = self.loop_length
        poses = [obstacle.pose(frame) for obstacle in self.obstacles]
        loads: dict[tuple[int, int], list[int]] = {}
        struck: dict[int, list[int]] = {}  # entity → [fatigue added, broken at once]
        for slot, c in enumerate(cars):
            box = boxes[slot]
            if not box.mass:
                continue
            half = box.length // 2
            arc, start_arc = c[ARC], starts[slot][0]
            for k, obstacle in enumerate(self.obstacles):
                if obstacle.at >= 0 and world[obstacle.at + OB_BREAK]:
                    continue
                pose = poses[k]
                # the car's centre from the entity's rest centre, now and when the frame began (around a loop's
                # seam from where the entity's centre is then)
                rel = around_loop(arc - obstacle.arc - pose.travel, loop) + pose.travel
                was = around_loop(start_arc - obstacle.arc - pose.travel_before, loop) + pose.travel_before
                if ((rel - half >= pose.highs[0] and was - half >= pose.high_before)
                        or (rel + half <= pose.lows[0] and was + half <= pose.low_before)):
                    continue  # on one side of it along the route all the frame (most pairs, most frames)
                self._keep_out(c, rel, was, box, obstacle, pose, colliders[slot], slot, k, loads, struck)
        for k in sorted(struck):
            at = self.obstacles[k].at
            added, at_once = struck[k]
            world[at + OB_FATIGUE] = min(world[at + OB_FATIGUE] + added, FATIGUE_BREAK_PPM)
            if at_once or world[at + OB_FATIGUE] >= FATIGUE_BREAK_PPM:
                world[at + OB_BREAK] = frame
        return commit_loads(cars, loads) if loads else {}

    @staticmethod
    def _keep_out(c: list[int], rel_s: int, was: int, box: ContactBox, obstacle: Obstacle,
                  pose: Pose, collider: Collider, slot: int, k: int,
                  loads: dict[tuple[int, int], list[int]], struck: dict[int, list[int]]) -> None:
        """One car against one entity (module docstring): ``rel_s`` and ``was``, the car's centre from the
        entity's rest centre along the route now and when the frame began; ``pose``, the entity's box now
        (``Obstacle.pose``)."""
        length, width, height, mass, restitution = box.length, box.width, box.height, box.mass, box.restitution
        lat, h = c[LAT], c[H]
        car_lo = (rel_s - length // 2, lat - width // 2, h)
        car_hi = (rel_s + length // 2, lat + width // 2, h + height)
        lows, highs = pose.lows, pose.highs
        if car_hi[1] <= lows[1] or car_lo[1] >= highs[1] or car_hi[2] <= lows[2] or car_lo[2] >= highs[2]:
            return
        if was + length // 2 <= pose.low_before and lows[0] < car_hi[0]:  # came in (or through) from behind during the frame
            axis, outward, depth = 0, False, car_hi[0] - lows[0]
        elif was - length // 2 >= pose.high_before and highs[0] > car_lo[0]:  # from ahead, going backwards
            axis, outward, depth = 0, True, highs[0] - car_lo[0]
        elif car_hi[0] <= lows[0] or car_lo[0] >= highs[0]:
            return
        else:  # the face of least penetration, the first axis (s, l, h) on a tie
            depth, outward = _way_out(highs[0] - car_lo[0], car_hi[0] - lows[0])
            axis = 0
            best, way = _way_out(highs[1] - car_lo[1], car_hi[1] - lows[1])
            if best < depth:
                axis, outward, depth = 1, way, best
            out_plus, out_minus = highs[2] - car_lo[2], car_hi[2] - lows[2]
            best, way = _way_out(out_plus, out_minus if h >= out_minus else out_plus + 1)  # never down through the ribbon
            if best < depth:
                axis, outward, depth = 2, way, best
        # the car is put out through the face on the high side (outward) or the low side, at that face's velocity
        position = component(POSITION_FIELDS, axis)
        c[position] = c[position] + (depth if outward else -depth)
        velocity = component(VELOCITY_FIELDS, axis)
        face_velocity = component(pose.high_velocities if outward else pose.low_velocities, axis)
        closing = face_velocity - c[velocity] if outward else c[velocity] - face_velocity
        if closing <= 0:
            return
        e = (obstacle.restitution_milli + restitution) // 2
        rebound = div_round((1000 + e) * closing, 1000)
        c[velocity] = c[velocity] + (rebound if outward else -rebound)
        energy = mass * closing * closing // 2
        part, strength = collider.struck_part(c)
        if strength is not None:
            add_impact(loads, slot, part, energy, component((width * height, length * height, length * width), axis),
                       strength, NO_ATTACKER, {})
        if obstacle.strength_kpa is not None:
            added, at_once = impact_fatigue(energy, component(obstacle.faces, axis), obstacle.strength_kpa)
            hit = struck.setdefault(k, [0, 0])
            hit[0] = hit[0] + added
            hit[1] = hit[1] | at_once

    def valid_pool(self, world: list[int]) -> bool:
        """Whether a decoded state's destructible entities are ones this round can reach (``StateLimits``):
        fatigue 0..1e6 ppm, intact (break frame 0, fatigue under 1e6) or broken at a frame not after the
        state's."""
        frame = world[W_FRAME]
        for obstacle in self.obstacles:
            at = obstacle.at
            if at < 0:
                continue
            fatigue, broke = world[at + OB_FATIGUE], world[at + OB_BREAK]
            if not 0 <= fatigue <= FATIGUE_BREAK_PPM or not 0 <= broke <= frame or (not broke and fatigue == FATIGUE_BREAK_PPM):
                return False
        return True
