"""Distance from a point to a triangle soup, for the route-point surface snap (場地.md §8.1: ±5 mm).

Bake-time float64 on integer µm inputs, elementwise only (fixed operation order, no BLAS, no pairwise
sums), so every peer reaches the same verdict. Triangles are first filtered by their AABB grown by the
search radius, so only the few near the point are examined exactly.
"""

from __future__ import annotations

import numpy as np


def _dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    products: np.ndarray = (u[:, 0] * v[:, 0] + u[:, 1] * v[:, 1]) + u[:, 2] * v[:, 2]
    return products


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.stack(
        [u[:, 1] * v[:, 2] - u[:, 2] * v[:, 1], u[:, 2] * v[:, 0] - u[:, 0] * v[:, 2], u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]],
        axis=1,
    )


def _segment_d2(p: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    d = v - u
    dd = _dot(d, d)
    s = np.clip(np.divide(_dot(p - u, d), dd, out=np.zeros_like(dd), where=dd > 0), 0.0, 1.0)
    q = u + d * s[:, None]
    return _dot(p - q, p - q)


class SurfaceIndex:
    """One mesh's triangles as float64 corner arrays with their AABBs, built once per mesh."""

    def __init__(self, vertices_um: np.ndarray, triangles: np.ndarray) -> None:
        self.a, self.b, self.c = (vertices_um[triangles[:, k]].astype(np.float64) for k in range(3))
        self.lo = np.minimum(np.minimum(self.a, self.b), self.c)
        self.hi = np.maximum(np.maximum(self.a, self.b), self.c)

    def within(self, point: tuple[int, int, int], radius_um: int) -> bool:
        """Whether some triangle lies within ``radius_um`` of ``point`` (all in µm)."""
        p0 = np.array(point, dtype=np.float64)
        near = ((self.lo - radius_um <= p0) & (p0 <= self.hi + radius_um)).all(axis=1)
        if not near.any():
            return False
        a, b, c = self.a[near], self.b[near], self.c[near]
        p = np.broadcast_to(p0, a.shape)
        n = _cross(b - a, c - a)
        nn = _dot(n, n)
        w = _dot(p - a, n)
        plane_d2 = np.divide(w * w, nn, out=np.full_like(nn, np.inf), where=nn > 0)
        inside = (
            (nn > 0)
            & (_dot(_cross(b - a, p - a), n) >= 0)
            & (_dot(_cross(c - b, p - b), n) >= 0)
            & (_dot(_cross(a - c, p - c), n) >= 0)
        )
        edges = np.minimum(np.minimum(_segment_d2(p, a, b), _segment_d2(p, b, c)), _segment_d2(p, c, a))
        d2 = np.where(inside, plane_d2, edges)
        return bool((d2 <= float(radius_um) * float(radius_um)).any())
