"""A track's magnet sources (spec/assets.md §5.5 ``auto_magnet_sources``, §5.6): one per mesh node of a
magnetism ``source`` material (``magnet_floor``) with ``magnet_source_strength_n`` > 0 in its node extras.

- **Position**: the node's geometric centre, the area-weighted centroid of its triangles (µm, exact).
- **North pole**: its area-weighted mean normal (the sum of its triangles' cross products), as a ppm unit
  vector; the node's +Z where that sum is zero (a closed solid's faces cancel: the spec's fallback).
- **Strength**: 0–10 N in mN; 0 (the default) declares no source.
- **Surface gap**: the centre's signed height over the nearest other static surface its vertical line
  crosses (``sim_core.assets.surface.vertical_gap``; None over nothing): the simulation puts the source
  at that height over its ribbon (docs/sim.md "Magnets").

The declaration is node-level on a track (root-level is for parts): a root-level
``magnet_source_strength_n`` is reported and ignored. A strength on a node of a material that is not a
source is refused (``magnet-source-invalid``). A source on a kinematic entity is reported and not baked:
the simulation has no moving track entities yet (docs/sim.md "Magnets").
"""

from __future__ import annotations

from math import isqrt
from typing import Any

from sim_core.assets import fields
from sim_core.assets.findings import Findings
from sim_core.assets.geometry import triangle_crosses
from sim_core.assets.reader import GlbAsset, Node
from sim_core.assets.surface import vertical_gap
from sim_core.intmath import normalize, round_div
from sim_core.specs.materials import Material


def magnet_sources(asset: GlbAsset, materials: dict[int, Material], moving: set[str], solids: list[Node],
                   findings: Findings) -> list[dict[str, Any]]:
    """The manifest's ``magnets`` (in node order), checking every node's declaration; ``moving`` names the
    kinematic entities, ``solids`` the static colliders (the surface a source's gap is measured to)."""
    if "magnet_source_strength_n" in asset.root_extras:
        findings.warn("magnet-strength-ignored", "a track declares magnet_source_strength_n on its magnet_floor "
                                                 "mesh nodes; the root-level value is ignored")
    sources = []
    for node in asset.mesh_nodes:
        if "magnet_source_strength_n" not in node.extras:
            continue
        where = f"node {node.name or node.index}"
        strength = fields.number(node.extras, "magnet_source_strength_n", where, findings, low=0, high=10,
                                 scale=1000, unit=" N")
        mat = materials.get(node.index)
        if strength is None or mat is None:
            continue
        if mat.magnetism_role != "source":
            findings.error("magnet-source-invalid",
                           f"{where}: magnet_source_strength_n needs a magnetism source material; {mat.id} is not one")
            continue
        if strength == 0:
            continue
        if node.name in moving:
            findings.warn("magnet-source-moving", f"{where}: a magnet on a kinematic entity is not simulated yet")
            continue
        position, pole = _centre_and_pole(node)
        surface = [(n.mesh.vertices_um, n.mesh.triangles) for n in solids if n.mesh is not None and n is not node]
        sources.append({"node": node.name, "source_node_index": node.index, "position_um": position,
                        "strength_mn": strength, "n_pole_ppm": pole,
                        "surface_gap_um": vertical_gap(surface, (position[0], position[1], position[2]))})
    return sources


def _centre_and_pole(node: Node) -> tuple[list[int], list[int]]:
    """Area-weighted centroid of the node's triangles and the unit of their summed normals (else +Z)."""
    mesh = node.mesh
    assert mesh is not None
    a, b, c, cross = triangle_crosses(mesh)
    weights = [isqrt(int(x)) for x in (cross * cross).sum(axis=1).tolist()]  # 2 × each triangle's area
    total = sum(weights)
    sums = (a + b + c).tolist()
    if total:
        centre = [round_div(sum(w * int(s[k]) for w, s in zip(weights, sums, strict=True)), 3 * total) for k in range(3)]
    else:  # only degenerate triangles: the vertices' box centre
        lo, hi = mesh.vertices_um.min(axis=0), mesh.vertices_um.max(axis=0)
        centre = [(int(lo[k]) + int(hi[k])) // 2 for k in range(3)]
    normal = tuple(int(sum(cross[:, k].tolist())) for k in range(3))
    axis = normal if any(normal) else tuple(node.frame.axes_ppm[2])
    return centre, list(normalize(axis))  # type: ignore[arg-type]

