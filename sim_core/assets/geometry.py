"""Exact integer geometry of a quantised mesh: volume, watertightness, areas, centroid, supports.

Vertices arrive as integer µm; every quantity here is computed with Python integers (numpy object
arrays where it helps), so the result is the same on every machine and bounded only by memory, which
the reader's caps bound already.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sim_core.assets.constants import DEGENERATE_TRIANGLE_AREA_UM2
from sim_core.assets.reader import Mesh
from sim_core.intmath import round_div

CONTACT_DIRECTIONS = ("front", "back", "left", "right", "top", "bottom")
# (axis, sign): front = −Z, back = +Z, left = −X, right = +X, top = +Y, bottom = −Y (零件與共用介面.md §4.1)
_CONTACT_AXES = {"front": (2, -1), "back": (2, 1), "left": (0, -1), "right": (0, 1), "top": (1, 1), "bottom": (1, -1)}
SUPPORT_DIRECTIONS = tuple((x, y, z) for x in (-1, 0, 1) for y in (-1, 0, 1) for z in (-1, 0, 1) if (x, y, z) != (0, 0, 0))


@dataclass(frozen=True, slots=True)
class MeshMetrics:
    """Exact measurements of one quantised mesh (µm, µm², µm³): the numbers the part and track rules
    judge and the manifest records."""

    six_volume_um3: int  # 6 × signed volume (exact)
    watertight: bool
    degenerate_triangles: int
    area_um2: int
    contact_um2: dict[str, int]
    centroid_numerator: tuple[int, int, int]  # Σ det·(a+b+c); centroid = numerator / (4·six_volume)
    aabb_min_um: tuple[int, int, int]
    aabb_max_um: tuple[int, int, int]
    support_um: tuple[tuple[int, int, int], ...]

    @property
    def volume_um3(self) -> int:
        """Enclosed volume, rounded half away from zero."""
        return round_div(self.six_volume_um3, 6)

    def centroid_um(self) -> tuple[int, int, int]:
        """Volume centroid (rounded); the AABB centre for a mesh that encloses no volume."""
        if self.six_volume_um3 == 0:
            return tuple((lo + hi) // 2 for lo, hi in zip(self.aabb_min_um, self.aabb_max_um, strict=True))  # type: ignore[return-value]
        return tuple(round_div(n, 4 * self.six_volume_um3) for n in self.centroid_numerator)  # type: ignore[return-value]


def is_watertight(mesh: Mesh) -> bool:
    """Closed and consistently oriented: each directed edge (by position) once, its reverse once."""
    if mesh.triangle_count == 0:
        return False
    _, ids = np.unique(mesh.vertices_um, axis=0, return_inverse=True)
    ids = ids.reshape(-1).astype(np.int64)
    t = ids[mesh.triangles]
    n = int(ids.max()) + 1
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    if (a == b).any():
        return False
    forward = np.unique(a * n + b, return_counts=True)
    if (forward[1] != 1).any():
        return False
    return bool(np.array_equal(forward[0], np.sort(b * n + a)))


def triangle_crosses(mesh: Mesh) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The corners a, b, c of every triangle and their cross products (b−a)×(c−a) (2 × area along the
    normal), as exact Python-integer object arrays (µm, µm²): what every measurement of a mesh sums."""
    v = mesh.vertices_um.astype(object)
    t = mesh.triangles
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    e1, e2 = b - a, c - a
    cross = np.stack(
        [
            e1[:, 1] * e2[:, 2] - e1[:, 2] * e2[:, 1],
            e1[:, 2] * e2[:, 0] - e1[:, 0] * e2[:, 2],
            e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0],
        ],
        axis=1,
    )
    return a, b, c, cross


def measure(mesh: Mesh) -> MeshMetrics:
    """Every ``MeshMetrics`` of ``mesh`` with exact integer arithmetic, so peers measure alike."""
    t = mesh.triangles
    a, b, c, cross = triangle_crosses(mesh)
    det = (a * cross).sum(axis=1) if len(t) else np.zeros(0, dtype=object)  # a·((b−a)×(c−a)) = a·(b×c)
    six_volume = int(sum(det.tolist()))
    norms2 = (cross * cross).sum(axis=1).tolist() if len(t) else []
    doubled_areas = [math.isqrt(int(x)) for x in norms2]
    floor = 2 * DEGENERATE_TRIANGLE_AREA_UM2  # |cross| = 2 × area
    degenerate = sum(1 for x in norms2 if x < floor * floor)
    contact = {}
    for name, (axis, sign) in _CONTACT_AXES.items():
        comp = cross[:, axis].tolist() if len(t) else []
        contact[name] = sum(max(0, sign * int(x)) for x in comp) // 2
    sums = a + b + c
    centroid_num = tuple(int(sum((det * sums[:, k]).tolist())) if len(t) else 0 for k in range(3))
    verts = mesh.vertices_um
    used = verts[np.unique(t)] if len(t) else verts
    lo = tuple(int(x) for x in used.min(axis=0)) if len(used) else (0, 0, 0)
    hi = tuple(int(x) for x in used.max(axis=0)) if len(used) else (0, 0, 0)
    supports = tuple(_support(used, d) for d in SUPPORT_DIRECTIONS) if len(used) else ()
    return MeshMetrics(
        six_volume_um3=six_volume,
        watertight=is_watertight(mesh),
        degenerate_triangles=degenerate,
        area_um2=sum(doubled_areas) // 2,
        contact_um2=contact,
        centroid_numerator=centroid_num,  # type: ignore[arg-type]
        aabb_min_um=lo,  # type: ignore[arg-type]
        aabb_max_um=hi,  # type: ignore[arg-type]
        support_um=supports,
    )


def _support(points: np.ndarray, direction: tuple[int, int, int]) -> tuple[int, int, int]:
    """The first vertex (lowest index) farthest along an integer direction."""
    dots = points[:, 0] * direction[0] + points[:, 1] * direction[1] + points[:, 2] * direction[2]
    p = points[int(np.argmax(dots))]
    return (int(p[0]), int(p[1]), int(p[2]))


def union_aabb(
    boxes: list[tuple[tuple[int, int, int], tuple[int, int, int]]],
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The smallest box holding every (min, max) box of a non-empty list."""
    lo = tuple(min(b[0][k] for b in boxes) for k in range(3))
    hi = tuple(max(b[1][k] for b in boxes) for k in range(3))
    return lo, hi  # type: ignore[return-value]
