"""Distance from a point to a triangle soup, for the route-point surface snap (場地.md §8.1: ±5 mm), and a
point's exact height over the surface beneath it (``vertical_gap``: how a magnet or a fluid sits on the
track, which the simulation re-seats on its ribbon).

Bake-time float64 on integer µm inputs, elementwise only (fixed operation order, no BLAS, no pairwise
sums), so every peer reaches the same verdict. Triangles are first filtered by their AABB grown by the
search radius, so only the few near the point are examined exactly.
"""

from __future__ import annotations

import numpy as np

from sim_core.intmath import round_div


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


def vertical_gap(meshes: list[tuple[np.ndarray, np.ndarray]], point: tuple[int, int, int]) -> int | None:
    """The signed height (µm) of ``point`` above the nearest surface that its vertical line (world Y)
    crosses, over every triangle of ``meshes`` ((vertices µm, triangles) pairs), or None when the line
    crosses none. Exact integers (the manifest records it, so every peer must compute the same): a
    triangle is crossed when the point's (x, z) lies inside its (x, z) projection (edges included), and
    the surface's height there is the barycentric mean of its corners' heights, rounded half away from 0."""
    px, py, pz = point
    best: int | None = None
    for vertices, triangles in meshes:
        v = vertices.astype(np.int64)
        a, b, c = v[triangles[:, 0]], v[triangles[:, 1]], v[triangles[:, 2]]
        lo_x = np.minimum(np.minimum(a[:, 0], b[:, 0]), c[:, 0])
        hi_x = np.maximum(np.maximum(a[:, 0], b[:, 0]), c[:, 0])
        lo_z = np.minimum(np.minimum(a[:, 2], b[:, 2]), c[:, 2])
        hi_z = np.maximum(np.maximum(a[:, 2], b[:, 2]), c[:, 2])
        for k in np.nonzero((lo_x <= px) & (px <= hi_x) & (lo_z <= pz) & (pz <= hi_z))[0].tolist():
            height = _height_at(a[k].tolist(), b[k].tolist(), c[k].tolist(), px, pz)
            if height is not None and (best is None or abs(py - height) < abs(best)):
                best = py - height
    return best


def _height_at(a: list[int], b: list[int], c: list[int], px: int, pz: int) -> int | None:
    """The triangle's height at (px, pz) when that lies in its (x, z) projection, else None."""
    def edge(u: list[int], v: list[int]) -> int:  # twice the signed (x, z) area of (u, v, p)
        return (v[0] - u[0]) * (pz - u[2]) - (v[2] - u[2]) * (px - u[0])

    wa, wb, wc = edge(b, c), edge(c, a), edge(a, b)
    total = wa + wb + wc
    if total == 0 or not ((wa >= 0 and wb >= 0 and wc >= 0) or (wa <= 0 and wb <= 0 and wc <= 0)):
        return None  # a vertical triangle, or (x, z) outside it
    return round_div(wa * a[1] + wb * b[1] + wc * c[1], total)
