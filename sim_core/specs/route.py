"""The route ribbon: cubic Hermite through the route points, sampled into integer frames at equal arc length.

All-integer construction, so every machine builds identical frames:

1. each segment RPi→RPi+1 is a cubic Bézier whose handles are ``forward·chord/3`` (the spec's "tangent
   length = chord × 1/3", read as Bézier handles, i.e. Hermite tangents of length = chord);
2. it is evaluated at ~2.5 mm parameter steps with exact integer Bernstein sums (µm, ``div_round``);
3. the dense polyline's arc length is summed with ``isqrt``; M+1 samples are placed at s_i = i·L // M
   (spacing ≈ ``SAMPLE_SPACING_UM``) by linear interpolation along the polyline;
4. per sample: tangent = normalize(P[i+1] − P[i−1]); up = authored up interpolated by arc length within
   the segment, projected orthogonal to the tangent; right = tangent × up; width interpolated linearly;
   vertical and lateral curvature from the tangent change over ±2 samples; gravity split into
   along-tangent, along-up and along-right components.

A loop whose RPn does not coincide with RP1 gets a closing segment RPn→RP1; the loop's arc wraps at L.
"""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import dataclass

from sim_core.derived_cache import EntryInvalid, EntryKind, process_cache
from sim_core.intmath import UNIT, Vec3, add, cross, distance_sq, div_round, dot, isqrt, normalize, scale, sub
from sim_core.state.codec import digest_of
from sim_core.specs.track import RoutePoint, TrackSpec

SAMPLE_SPACING_UM = 10_000
DENSE_STEP_UM = 2_500
CURVATURE_STENCIL = 2
# the per-sample lists of a Route, in their stored order (``Route.to_bytes``)
SAMPLE_ARRAYS = ("arc", "px", "py", "pz", "tx", "ty", "tz", "rx", "ry", "rz", "ux", "uy", "uz", "width",
                 "g_tangent", "g_up", "g_right", "k_vertical", "k_lateral")
_STORED_HEAD = struct.Struct("<Bqq")  # loop, length_um, count; then the arrays as little-endian int64


@dataclass(frozen=True, slots=True)
class _Segment:
    p0: Vec3
    c0: Vec3
    c1: Vec3
    p1: Vec3
    a: RoutePoint
    b: RoutePoint


def _segment(a: RoutePoint, b: RoutePoint) -> _Segment:
    chord = isqrt(dot(sub(b.position_um, a.position_um), sub(b.position_um, a.position_um)))
    c0 = add(a.position_um, scale(a.forward_e6, chord, 3 * UNIT))
    c1 = sub(b.position_um, scale(b.forward_e6, chord, 3 * UNIT))
    return _Segment(a.position_um, c0, c1, b.position_um, a, b)


def _bezier(seg: _Segment, k: int, steps: int) -> Vec3:
    j = steps - k
    w0, w1, w2, w3 = j * j * j, 3 * j * j * k, 3 * j * k * k, k * k * k
    den = steps * steps * steps
    return tuple(  # type: ignore[return-value]
        div_round(w0 * seg.p0[i] + w1 * seg.c0[i] + w2 * seg.c1[i] + w3 * seg.p1[i], den) for i in range(3)
    )


def _dense_polyline(segments: list[_Segment]) -> tuple[list[Vec3], list[int], list[int]]:
    """Dense points, their cumulative arc length (µm) and the segment index of each point."""
    points: list[Vec3] = [segments[0].p0]
    cumulative = [0]
    owner = [0]
    for index, seg in enumerate(segments):
        chord = isqrt(dot(sub(seg.p1, seg.p0), sub(seg.p1, seg.p0)))
        steps = max(8, chord // DENSE_STEP_UM)
        for k in range(1, steps + 1):
            point = _bezier(seg, k, steps)
            step = isqrt(dot(sub(point, points[-1]), sub(point, points[-1])))
            if step == 0:
                continue
            points.append(point)
            cumulative.append(cumulative[-1] + step)
            owner.append(index)
    return points, cumulative, owner


class Route:
    """Sampled frames of a track's route, flat integer lists indexed by sample (hot-path friendly)."""

    def __init__(self, track: TrackSpec) -> None:
        self.loop = track.effective_lap_mode == "loop"
        points = list(track.route)
        if self.loop and points[-1].position_um != points[0].position_um:
            points.append(points[0])
        segments = [_segment(points[i], points[i + 1]) for i in range(len(points) - 1)]
        dense, cumulative, owner = _dense_polyline(segments)
        self.length_um = cumulative[-1]
        self.count = max(2, self.length_um // SAMPLE_SPACING_UM)  # M intervals, M + 1 samples
        segment_end = [0] * len(segments)
        for j, seg_index in enumerate(owner):
            segment_end[seg_index] = cumulative[j]
        segment_start = [0] + segment_end[:-1]
        self.arc = [i * self.length_um // self.count for i in range(self.count + 1)]
        positions, ups, widths = self._sample(segments, dense, cumulative, owner, segment_start, segment_end)
        self._frames(positions, ups, widths, track)

    def _sample(self, segments: list[_Segment], dense: list[Vec3], cumulative: list[int], owner: list[int],
                seg_start: list[int], seg_end: list[int]) -> tuple[list[Vec3], list[Vec3], list[int]]:
        positions: list[Vec3] = []
        ups: list[Vec3] = []
        widths: list[int] = []
        j = 0
        for s in self.arc:
            while j + 1 < len(dense) - 1 and cumulative[j + 1] <= s:
                j += 1
            span = cumulative[j + 1] - cumulative[j]
            t = min(s - cumulative[j], span)
            delta = sub(dense[j + 1], dense[j])
            positions.append(add(dense[j], scale(delta, t, span)))
            seg_index = owner[j + 1]
            seg = segments[seg_index]
            seg_len = max(1, seg_end[seg_index] - seg_start[seg_index])
            x = min(max(s - seg_start[seg_index], 0), seg_len)
            a_up, b_up, rest = seg.a.up_e6, seg.b.up_e6, seg_len - x  # authored up, weighted by arc length
            ups.append((a_up[0] * rest + b_up[0] * x, a_up[1] * rest + b_up[1] * x, a_up[2] * rest + b_up[2] * x))
            widths.append(div_round(seg.a.width_um * (seg_len - x) + seg.b.width_um * x, seg_len))
        return positions, ups, widths

    def _neighbour(self, i: int, offset: int) -> int:
        if self.loop:  # samples 0 and M are the same place; wrap over the M distinct ones
            return (i + offset) % self.count
        return min(max(i + offset, 0), self.count)

    def _frames(self, positions: list[Vec3], ups: list[Vec3], widths: list[int], track: TrackSpec) -> None:
        n = self.count + 1
        if self.loop:
            positions[-1] = positions[0]
        tangents = []
        for i in range(n):
            a, b = positions[self._neighbour(i, -1)], positions[self._neighbour(i, 1)]
            tangents.append(normalize(sub(b, a)))
        rights, normals = [], []
        for i in range(n):
            t = tangents[i]
            raw = ups[i]
            along = dot(raw, t)
            projected = tuple(raw[k] * UNIT - t[k] * along // UNIT for k in range(3))
            up = normalize(projected)  # type: ignore[arg-type]
            right = normalize(cross(t, up))
            rights.append(right)
            normals.append(normalize(cross(right, t)))
        gravity = scale(track.gravity_dir_e6, track.gravity_um_s2, UNIT)
        self.px, self.py, self.pz = ([p[k] for p in positions] for k in range(3))
        self.tx, self.ty, self.tz = ([v[k] for v in tangents] for k in range(3))
        self.rx, self.ry, self.rz = ([v[k] for v in rights] for k in range(3))
        self.ux, self.uy, self.uz = ([v[k] for v in normals] for k in range(3))
        self.width = widths
        self.g_tangent = [div_round(dot(gravity, t), UNIT) for t in tangents]
        self.g_up = [div_round(dot(gravity, u), UNIT) for u in normals]
        self.g_right = [div_round(dot(gravity, r), UNIT) for r in rights]
        self.k_vertical, self.k_lateral = [], []
        for i in range(n):
            lo, hi = self._neighbour(i, -CURVATURE_STENCIL), self._neighbour(i, CURVATURE_STENCIL)
            span = self._arc_between(lo, hi, i)
            change = sub(tangents[hi], tangents[lo])
            curvature = scale(change, UNIT, max(1, span))  # (1/µm)·1e12 per component
            self.k_vertical.append(div_round(dot(curvature, normals[i]), UNIT))
            self.k_lateral.append(div_round(dot(curvature, rights[i]), UNIT))

    def _arc_between(self, lo: int, hi: int, centre: int) -> int:
        """Arc length from sample ``lo`` to ``hi`` around ``centre`` (wrapping on loops)."""
        if not self.loop:
            return self.arc[hi] - self.arc[lo]
        return (self.arc[hi] - self.arc[lo]) % self.length_um if hi != lo else self.length_um

    # -- queries ----------------------------------------------------------------------------------

    def index(self, s: int) -> int:
        """Sample index i with arc[i] ≤ s < arc[i+1]; ``s`` must already be wrapped/clamped."""
        i = s * self.count // self.length_um
        return self.count - 1 if i >= self.count else 0 if i < 0 else i

    def wrap(self, arc: int) -> int:
        """Arc position on the ribbon: modulo L on loops, clamped to [0, L] on linear routes."""
        if self.loop:
            return arc % self.length_um
        return 0 if arc < 0 else self.length_um if arc > self.length_um else arc

    def point(self, arc: int, lateral: int, height: int) -> Vec3:
        """World position (µm) of the ribbon point at ``arc`` offset by ``lateral`` (right) and ``height`` (up).

        Beyond the ends of a linear route the end frames extend straight along their tangents.
        """
        s = arc % self.length_um if self.loop else arc
        return self.point_at(self.index(s), s, lateral, height)

    def point_at(self, i: int, s: int, lateral: int, height: int) -> Vec3:
        """``point`` for a caller that already located the arc: ``s`` = arc mod L on loops (else the arc
        itself) and ``i = index(s)``, which is also ``index(wrap(arc))``, the sample whose width and frame
        the step reads, so a rule pass computes the index once per car."""
        ds = s - self.arc[i]
        return (
            self.px[i] + (self.tx[i] * ds + self.rx[i] * lateral + self.ux[i] * height) // UNIT,
            self.py[i] + (self.ty[i] * ds + self.ry[i] * lateral + self.uy[i] * height) // UNIT,
            self.pz[i] + (self.tz[i] * ds + self.rz[i] * lateral + self.uz[i] * height) // UNIT,
        )

    def project(self, position: Vec3) -> tuple[int, int, int]:
        """(arc, lateral, height) of the nearest ribbon frame to ``position`` (ties → lowest sample)."""
        best, best_d = 0, None
        for i in range(self.count + 1):
            d = distance_sq(position, (self.px[i], self.py[i], self.pz[i]))
            if best_d is None or d < best_d:
                best, best_d = i, d
        rel = (position[0] - self.px[best], position[1] - self.py[best], position[2] - self.pz[best])
        along = div_round(rel[0] * self.tx[best] + rel[1] * self.ty[best] + rel[2] * self.tz[best], UNIT)
        arc = self.wrap(self.arc[best] + along)
        lateral = div_round(rel[0] * self.rx[best] + rel[1] * self.ry[best] + rel[2] * self.rz[best], UNIT)
        height = div_round(rel[0] * self.ux[best] + rel[1] * self.uy[best] + rel[2] * self.uz[best], UNIT)
        return arc, lateral, height

    def seated(self, position: Vec3, surface_gap_um: int | None) -> Vec3:
        """Where a track feature at ``position``, ``surface_gap_um`` over the track surface beneath it, sits
        in the simulation: the same height over the ribbon at its projection (the ribbon stands for the
        surface, and between route points it may lie centimetres off the mesh); ``position`` as it is
        without a gap (nothing under or over it)."""
        if surface_gap_um is None:
            return position
        arc, lateral, _ = self.project(position)
        return self.point(arc, lateral, surface_gap_um)

    # -- stored form (sim_core.derived_cache) ---------------------------------------------------------

    def to_bytes(self) -> bytes:
        """The route as stored by the derived cache: loop flag, length and count, then every sample array as
        little-endian int64 (``from_bytes`` reads it back exactly)."""
        values = array("q")
        for name in SAMPLE_ARRAYS:
            values.extend(getattr(self, name))
        if sys.byteorder == "big":
            values.byteswap()
        return _STORED_HEAD.pack(self.loop, self.length_um, self.count) + values.tobytes()

    @classmethod
    def from_bytes(cls, payload: bytes) -> "Route":
        """A route exactly as ``to_bytes`` stored it; ``EntryInvalid`` if the sizes do not add up."""
        if len(payload) < _STORED_HEAD.size:
            raise EntryInvalid("route record truncated")
        loop, length_um, count = _STORED_HEAD.unpack_from(payload)
        n = count + 1
        if loop not in (0, 1) or length_um <= 0 or count < 2 or len(payload) != _STORED_HEAD.size + 8 * n * len(SAMPLE_ARRAYS):
            raise EntryInvalid("route record malformed")
        values = array("q")
        values.frombytes(payload[_STORED_HEAD.size :])
        if sys.byteorder == "big":
            values.byteswap()
        route = cls.__new__(cls)
        route.loop, route.length_um, route.count = bool(loop), length_um, count
        for k, name in enumerate(SAMPLE_ARRAYS):
            setattr(route, name, values[k * n : (k + 1) * n].tolist())
        return route


ROUTES: EntryKind[Route] = EntryKind("route", Route.to_bytes, lambda payload, _digest: Route.from_bytes(payload))


def route_for(track: TrackSpec) -> Route:
    """The route of ``track``, sampled once per distinct track and code (``sim_core.derived_cache``:
    ~0.1 s to sample, a millisecond to read back); a Route is never modified after building."""
    return process_cache().get(ROUTES, digest_of(track).hex(), lambda: Route(track))
