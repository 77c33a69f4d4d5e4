"""A code-built 8-player circuit for motion tests (it was the demo track until the built-in GLBs arrived).

A fixed loop (~21 m, 1.5 m wide, asphalt, plastic walls 6 cm high, 0.3 m apron): a start straight that
climbs 18 cm to a crest and drops, a 180° far turn, a back straight with an 8 cm dip, a 180° home turn;
three checkpoints (crest, far turn, home turn), a kill-zone pit outside the far turn, two respawn points.
"""

from __future__ import annotations

from sim_core.intmath import UNIT, cross, normalize, sub
from sim_core.specs.track import Box, RespawnPoint, RoutePoint, TrackSpec

MM = 1_000
WIDTH_UM = 1_500_000
_UP = (0, UNIT, 0)
# (x, y, z) in mm and an explicit heading for the flat points (None = along the neighbouring chord)
_ROUTE = (
    ((0, 0, -1000), (0, 0, -1)),
    ((0, 0, -2000), None),
    ((0, 120, -3500), None),
    ((0, 180, -4500), (0, 0, -1)),
    ((0, 0, -6000), None),
    ((0, 0, -7000), (0, 0, -1)),
    ((1500, 0, -8500), (1, 0, 0)),
    ((3000, 0, -7000), (0, 0, 1)),
    ((3000, -80, -4000), (0, 0, 1)),
    ((3000, 0, -1000), (0, 0, 1)),
    ((1500, 0, 500), (-1, 0, 0)),
    ((0, 0, -1000), (0, 0, -1)),
)


def _route_points() -> tuple[RoutePoint, ...]:
    positions = [tuple(v * MM for v in p) for p, _ in _ROUTE]
    points = []
    for i, (_, heading) in enumerate(_ROUTE):
        if heading is None:
            forward = normalize(sub(positions[i + 1], positions[i - 1]))
        else:
            forward = normalize(heading)
        right = normalize(cross(forward, _UP))
        up = normalize(cross(right, forward))
        points.append(RoutePoint(positions[i], forward, up, WIDTH_UM))  # type: ignore[arg-type]
    return tuple(points)


def _box(center_mm: tuple[int, int, int], half_mm: tuple[int, int, int]) -> Box:
    return Box(tuple(v * MM for v in center_mm), tuple(v * MM for v in half_mm))  # type: ignore[arg-type]


def circuit_track() -> TrackSpec:
    return TrackSpec(
        track_id="test:circuit",
        track_type="fixed",
        route=_route_points(),
        surface_material="asphalt",
        wall_material="pc",
        wall_height_um=60_000,
        apron_um=300_000,
        lap_count=6,
        checkpoints=(
            _box((0, 280, -4500), (850, 350, 300)),
            _box((3000, 100, -7000), (850, 350, 300)),
            _box((1500, 100, 500), (300, 350, 850)),
        ),
        kill_zones=(_box((1500, -400, -10200), (2000, 300, 600)),),
        respawn_points=(
            RespawnPoint((0, 0, -2000 * MM), (0, 0, -UNIT), _UP),
            RespawnPoint((3000 * MM, -80 * MM, -4000 * MM), (0, 0, UNIT), _UP),
        ),
    )
