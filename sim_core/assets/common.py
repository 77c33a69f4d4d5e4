"""Rules shared by parts and tracks: the schema marker, material assignment, per-node measurements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from sim_core.assets import constants as C
from sim_core.assets.findings import Findings, shown
from sim_core.assets.geometry import MeshMetrics
from sim_core.assets.material_rules import check_material
from sim_core.assets.reader import GlbAsset, Node
from sim_core.specs.materials import Material
from sim_core.intmath import round_div


def marker_type(root: dict[str, Any], findings: Findings, *, allow_missing_version: bool = False) -> str | None:
    """Loader branches (版本規範.md §15): no marker → reject, version ≠ 1 → reject, else the asset type."""
    version = root.get("open4wd_version")
    if version is None and not allow_missing_version:
        findings.error("schema-marker-invalid",
                       "root extras carry no open4wd_version marker; this is not a finalized Open4WD asset")
        return None
    if version is not None and (isinstance(version, bool) or version != C.ASSET_SCHEMA_VERSION or not isinstance(version, int)):
        findings.error("schema-marker-invalid",
                       f"open4wd_version is {shown(version)}; this node reads only version {C.ASSET_SCHEMA_VERSION}")
        return None
    kind = root.get("type")
    if kind not in C.ASSET_TYPES:
        findings.error("schema-marker-invalid", f"root extras type {shown(kind)} is not one of {', '.join(C.ASSET_TYPES)}")
        return None
    return cast(str, kind)


@dataclass(frozen=True, slots=True)
class Solid:
    """One mesh node with its material and exact measurements."""

    node: Node
    material: Material
    metrics: MeshMetrics


def node_materials(
    asset: GlbAsset,
    findings: Findings,
    *,
    part_type: str | None,
    deprecated: frozenset[str],
    for_new_product: bool,
    nodes: tuple[Node, ...] | None = None,
) -> dict[int, Material]:
    """Material of each mesh node: node-level ``material``, else its ``materials[]`` entry, else the root's."""
    root = asset.root_extras
    where = "root extras"
    root_id = root.get("material")
    if root_id is None:
        findings.error("missing-required-field", f"{where}: required field 'material' (the default material) is missing")
    elif (
        check_material(root_id, where, findings, part_type=part_type, deprecated=deprecated, for_new_product=for_new_product)
        is None
    ):
        root_id = None  # reported once here, not again for every node that falls back to it
    mesh_nodes = {n.name: n for n in asset.mesh_nodes if n.name}
    listed: dict[str, Any] = {}
    entries = root.get("materials", [])
    if not isinstance(entries, list):
        findings.error("field-invalid", f"{where}: 'materials' must be a list of {{mesh_node, material}}")
        entries = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("mesh_node"), str) or "material" not in entry:
            findings.error("field-invalid", f"{where}: materials[{i}] must be an object with mesh_node and material")
            continue
        name = entry["mesh_node"]
        if name not in mesh_nodes:
            findings.error("field-invalid", f"{where}: materials[{i}] names {shown(name)}, which is not a mesh node")
        elif name in listed:
            findings.error("material-double-declared", f"mesh node {shown(name)} appears twice in materials[]")
        else:
            listed[name] = entry["material"]
    result: dict[int, Material] = {}
    for node in nodes if nodes is not None else asset.mesh_nodes:
        own = node.extras.get("material")
        if own is not None and node.name in listed:
            findings.error("material-double-declared",
                           f"mesh node {shown(node.name)} has a node-level material and a materials[] entry")
            continue
        chosen = own if own is not None else listed.get(node.name, root_id)
        if chosen is None:
            continue
        m = check_material(
            chosen,
            f"node {node.name or node.index}",
            findings,
            part_type=part_type,
            deprecated=deprecated,
            for_new_product=for_new_product,
        )
        if m is not None:
            result[node.index] = m
    return result


def mass_ug(volume_um3: int, material: Material) -> int:
    """µg = µm³ × (kg/m³) × 1e-9, rounded half away from zero."""
    return round_div(volume_um3 * material.density_kg_m3, 10**9)


def frame_dict(node: Node) -> dict[str, Any]:
    """An empty's frame for the manifest: origin µm and unit axes ppm."""
    return {"name": node.name, "position_um": list(node.frame.position_um), "axes_ppm": [list(a) for a in node.frame.axes_ppm]}


def check_empties_not_mirrored(asset: GlbAsset, findings: Findings) -> None:
    """``empty-mirrored`` for every empty under a mirroring transform: a mount or route frame must keep
    its handedness, or parts and route points would be placed inside out."""
    for node in asset.empties:
        if node.frame.mirrored:
            findings.error("empty-mirrored",
                           f"empty {node.name or node.index} sits under a mirroring transform (negative determinant)")
