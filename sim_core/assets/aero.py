"""A body's baked aero (spec/assets.md body ``auto_aero``; spec/simcore.md §7.4): per signed local axis
the drag area and the centre of pressure, plus the authored ``lift_factor``.

For each axis d of (+X, −X, +Y, −Y, +Z, −Z) the drag area is Σ max(0, n̂·d)·area over the triangles
facing d (the projected area of the surface that faces d: exact for a convex closed mesh) and the
centre of pressure is the centroid of those triangles weighted the same way. A sealed cavity's walls
never meet the air, so the triangles of a connected surface that encloses negative volume (an
inverted inner shell, as in a hollow body) are left out. Everything is exact on the µm vertices
(2·area·n̂ = the integer cross product), rounded once with ``round_div`` (areas in µm², COP in µm).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sim_core.assets.common import Solid
from sim_core.assets.fields import number
from sim_core.assets.findings import Findings
from sim_core.assets.geometry import triangle_crosses
from sim_core.assets.reader import Mesh
from sim_core.intmath import round_div
from sim_core.specs.vehicle import AERO_AXES

_AXIS = {"positiveX": (0, 1), "negativeX": (0, -1), "positiveY": (1, 1), "negativeY": (1, -1),
         "positiveZ": (2, 1), "negativeZ": (2, -1)}
LIFT_FACTOR_LIMIT = 1
"""|lift_factor| ≤ 1 (authored, 0.001 resolution): lift or downforce at most the horizontal drag."""


def _components(mesh: Mesh) -> np.ndarray:
    """The connected surface (by shared vertex position) of each triangle, as the smallest vertex id in it."""
    _, ids = np.unique(mesh.vertices_um, axis=0, return_inverse=True)
    tri = ids.reshape(-1).astype(np.int64)[mesh.triangles]
    label = np.arange(int(tri.max()) + 1, dtype=np.int64)
    while True:  # propagate the smallest label over triangles, then jump pointers, until stable
        low = label[tri].min(axis=1)
        new = label.copy()
        for k in range(3):
            np.minimum.at(new, tri[:, k], low)
        new = new[new]
        if np.array_equal(new, label):
            components: np.ndarray = label[tri[:, 0]]
            return components
        label = new


def _outer_triangles(mesh: Mesh) -> tuple[np.ndarray, np.ndarray]:
    """(vertices a, b, c as object arrays; cross products) of the triangles on surfaces that enclose
    non-negative volume (the outer skin; a sealed cavity's inverted walls are dropped)."""
    a, b, c, cross = triangle_crosses(mesh)
    det = (a * cross).sum(axis=1)
    component = _components(mesh)
    keep = np.ones(len(mesh.triangles), dtype=bool)
    for label in np.unique(component):
        members = component == label
        if int(sum(det[members].tolist())) < 0:
            keep &= ~members
    return np.stack([a, b, c])[:, keep], cross[keep]


def aero_axes(solids: tuple[Solid, ...], fallback_cop_um: list[int]) -> dict[str, dict[str, Any]]:
    """``{axis: {drag_area_um2, center_of_pressure_um}}`` of the solids' outer skin (an axis no
    triangle faces has area 0 and the COP ``fallback_cop_um``)."""
    doubled = dict.fromkeys(AERO_AXES, 0)
    moment = {axis: [0, 0, 0] for axis in AERO_AXES}  # Σ 2·area·(n̂·d)·(a + b + c)
    for solid in solids:
        mesh = solid.node.mesh
        assert mesh is not None
        if mesh.triangle_count == 0:
            continue
        (a, b, c), cross = _outer_triangles(mesh)
        sums = a + b + c
        for axis, (k, sign) in _AXIS.items():
            weight = np.array([max(0, sign * int(x)) for x in cross[:, k].tolist()], dtype=object)
            doubled[axis] += int(sum(weight.tolist()))
            for j in range(3):
                moment[axis][j] += int(sum((weight * sums[:, j]).tolist()))
    return {
        axis: {
            "drag_area_um2": round_div(doubled[axis], 2),
            "center_of_pressure_um": [round_div(moment[axis][j], 3 * doubled[axis]) for j in range(3)]
            if doubled[axis] else list(fallback_cop_um),
        }
        for axis in AERO_AXES
    }


def lift_factor_milli(extras: dict[str, Any], part_type: str, where: str, findings: Findings) -> int | None:
    """The authored ``lift_factor`` × 1000 (default 0: no lift); a body's only (``field-invalid`` on
    another part type, out of [−1, 1] or finer than 0.001); None after a finding."""
    if part_type != "body":
        if "lift_factor" in extras:
            findings.error("field-invalid", f"{where}: 'lift_factor' is read only on a body part, not a {part_type}")
            return None
        return 0
    return number(extras, "lift_factor", where, findings, low=-LIFT_FACTOR_LIMIT, high=LIFT_FACTOR_LIMIT, scale=1000,
                  default=0)
