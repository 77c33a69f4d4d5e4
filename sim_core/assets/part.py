"""Part rules (spec/assets.md §2–§4, §9.2) and the part's physics manifest, computed in one pass.

Validation and bake share this analysis so the rules that refuse an asset and the numbers that describe
it can never drift apart: ``analyse_part`` returns the manifest (or None once an error was found).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sim_core.assets import constants as C
from sim_core.assets import fields
from sim_core.assets.aero import aero_axes, lift_factor_milli
from sim_core.assets.common import Solid, check_empties_not_mirrored, frame_dict, mass_ug, node_materials
from sim_core.assets.findings import Findings, shown
from sim_core.assets.geometry import CONTACT_DIRECTIONS, measure, union_aabb
from sim_core.assets.mounts import check_chassis_mounts, check_mount_spacing, mount_nodes
from sim_core.assets.reader import GlbAsset
from sim_core.assets.weapon import analyse_weapon
from sim_core.intmath import round_div

ROOT = "root extras"


@dataclass(frozen=True, slots=True)
class PartContext:
    """What the per-type declaration checks of one part share: the asset, its type, its measured solids
    and the findings being collected."""

    asset: GlbAsset
    part_type: str
    solids: tuple[Solid, ...]
    findings: Findings


def _measure(
    asset: GlbAsset, part_type: str, findings: Findings, deprecated: frozenset[str], for_new_product: bool
) -> tuple[tuple[Solid, ...], int | None]:
    """The solids that got a material, and the total volume (None when the part is over its budget:
    exact integer measuring is linear in triangles, so an oversized part is never measured)."""
    materials = node_materials(asset, findings, part_type=part_type, deprecated=deprecated, for_new_product=for_new_product)
    if not _check_budget(asset, findings):
        return (), None
    solids = []
    volume = 0
    for node in asset.mesh_nodes:
        assert node.mesh is not None
        metrics = measure(node.mesh)
        volume += metrics.volume_um3
        label = node.name or f"node {node.index}"
        if metrics.degenerate_triangles:
            findings.error("degenerate-triangle",
                           f"{label} has {metrics.degenerate_triangles} triangle(s) with area below 1e-8 m²")
        if not metrics.watertight:
            findings.error("mesh-not-watertight",
                           f"{label} is not a closed, consistently wound surface; every part sub-mesh must be watertight")
        elif metrics.six_volume_um3 <= 0:
            findings.error("mesh-volume-invalid", f"{label} encloses no positive volume (inside-out winding?)")
        if node.index in materials:
            solids.append(Solid(node, materials[node.index], metrics))
    return tuple(solids), volume


def _check_budget(asset: GlbAsset, findings: Findings) -> bool:
    vertices = sum(n.mesh.vertex_count for n in asset.mesh_nodes if n.mesh)
    triangles = sum(n.mesh.triangle_count for n in asset.mesh_nodes if n.mesh)
    within = True
    if vertices > C.PART_MAX_VERTICES or triangles > C.PART_MAX_TRIANGLES:
        findings.error("part-geometry-budget",
                       f"the part has {vertices} vertices and {triangles} triangles; at most {C.PART_MAX_VERTICES} of each")
        within = False
    if len(asset.mesh_nodes) > C.MAX_PROXIES_PER_PART:
        findings.error("part-geometry-budget",
                       f"the part has {len(asset.mesh_nodes)} mesh nodes; at most {C.MAX_PROXIES_PER_PART} collider proxies")
    return within


def _check_aabb(lo: tuple[int, ...], hi: tuple[int, ...], findings: Findings) -> None:
    for axis, (a, b) in zip("xyz", zip(lo, hi, strict=True), strict=True):
        if not C.PART_AABB_MIN_UM <= b - a <= C.PART_AABB_MAX_UM:
            findings.error("part-aabb-out-of-range", f"AABB {axis} size is {b - a} µm; it must lie in [0.001, 1] m")


def _check_densities(solids: tuple[Solid, ...], findings: Findings) -> None:
    densities = [s.material.density_kg_m3 for s in solids]
    if densities and max(densities) > C.DENSITY_RATIO_MAX * min(densities):
        findings.error("density-ratio-exceeded",
                       f"densest / lightest material is {max(densities)}/{min(densities)} kg/m³, above {C.DENSITY_RATIO_MAX}")


def _check_feature_deviations(root: dict[str, Any], findings: Findings) -> None:
    deviations = root.get("auto_feature_deviations", [])
    if not isinstance(deviations, list):
        findings.error("interface-measurement-invalid", "auto_feature_deviations must be a list")
    elif deviations:
        findings.error("interface-deviation-exceed",
                       f"auto_feature_deviations lists {len(deviations)} interface deviation(s); an accepted part has none")


def _proxy(solid: Solid) -> dict[str, Any]:
    m = solid.metrics
    proxy = {
        "node": solid.node.name,
        "source_node_index": solid.node.index,
        "material": solid.material.id,
        "volume_um3": m.volume_um3,
        "mass_ug": mass_ug(m.volume_um3, solid.material),
        "centroid_um": list(m.centroid_um()),
        "surface_area_um2": m.area_um2,
        "contact_area_um2": {d: m.contact_um2[d] for d in CONTACT_DIRECTIONS},
        "support_um": [list(p) for p in m.support_um],
    }
    return proxy


def _thermal(solids: tuple[Solid, ...], proxies: list[dict[str, Any]]) -> dict[str, Any]:
    """C = Σ m·c (nJ/K = µg·J/(kg·K)); H = Σ A·80·(0.25 + 0.75·min(k, 50)/50) in µW/K; weakest limit."""
    heat_capacity = 0
    conductance = 0
    limits = []
    for solid, proxy in zip(solids, proxies, strict=True):
        mat = solid.material
        if mat.specific_heat_j_kgk is not None:
            heat_capacity += proxy["mass_ug"] * mat.specific_heat_j_kgk
        if mat.conductivity_mw_mk is not None:
            k = min(mat.conductivity_mw_mk, 50_000)
            conductance += solid.metrics.area_um2 * 80 * (50_000 + 3 * k)
        if mat.thermal_limit_mc is not None:
            limits.append(mat.thermal_limit_mc)
    return {
        "heat_capacity_nj_per_k": heat_capacity,
        "ambient_conductance_uw_per_k": round_div(conductance, 2 * 10**11),
        "thermal_limit_mc": min(limits) if limits else None,
    }


def _weighted_centroid(proxies: list[dict[str, Any]], total_mass: int, fallback: tuple[int, ...]) -> list[int]:
    if total_mass <= 0:
        return list(fallback)
    return [round_div(sum(p["mass_ug"] * p["centroid_um"][k] for p in proxies), total_mass) for k in range(3)]


def _motor(ctx: PartContext, volume: int) -> dict[str, Any] | None:
    ratio = fields.number(ctx.asset.root_extras, "torque_ratio", ROOT, ctx.findings, low=0, high=100, scale=1, unit=" %")
    if ratio is None:
        return None
    return {"torque_ratio_pct": ratio, "input_mw": round_div(volume * C.K_MOTOR_INPUT_MW_PER_M3, C.UM3_PER_M3)}


def _battery(ctx: PartContext, volume: int) -> dict[str, Any] | None:
    output = fields.number(
        ctx.asset.root_extras, "configured_output_w", ROOT, ctx.findings, low=0, high=10**9, scale=1000, unit=" W"
    )
    if output is None:
        return None
    # PART-R-001: 0 < output ≤ volume × K_BATTERY_OUTPUT_W_M3, compared exactly in mW·m³ units
    if output <= 0 or output * C.UM3_PER_M3 > volume * C.K_BATTERY_OUTPUT_MW_PER_M3:
        limit = volume * C.K_BATTERY_OUTPUT_MW_PER_M3 // C.UM3_PER_M3
        ctx.findings.error("battery-output-exceeds-volume",
                           f"configured output {output} mW must be > 0 and ≤ {limit} mW for this volume", rule="PART-R-001")
        return None
    return {"configured_output_mw": output, "energy_capacity_mj": round_div(volume * C.K_BATTERY_ENERGY_MJ_PER_M3, C.UM3_PER_M3)}


def chip_slot_count(volume_um3: int) -> int:
    """Skill slots a chip of this volume offers: 1, plus one per threshold reached (1.5, 3, 6 cm³)."""
    return 1 + sum(1 for t in C.CHIP_SLOT_THRESHOLDS_UM3 if volume_um3 >= t)


def _chip(ctx: PartContext, volume: int) -> dict[str, Any] | None:
    slots = chip_slot_count(volume)
    raw = ctx.asset.root_extras.get("skill_slots")
    if raw is None:
        ctx.findings.error("missing-required-field", f"{ROOT}: required field 'skill_slots' is missing")
        return None
    problems = []
    if not isinstance(raw, list):
        problems.append("skill_slots must be a list of {skill, allocation_pct}")
        raw = []
    if len(raw) > slots:
        problems.append(f"{len(raw)} skill slots but the chip's volume allows {slots}")
    seen, total, parsed = set(), 0, []
    for i, slot in enumerate(raw):
        skill = slot.get("skill") if isinstance(slot, dict) else None
        pct = slot.get("allocation_pct") if isinstance(slot, dict) else None
        if skill not in C.SKILLS:
            problems.append(f"slot {i}: skill {shown(skill)} is not one of {', '.join(C.SKILLS)}")
        elif skill in seen:
            problems.append(f"slot {i}: skill {skill} appears twice")
        else:
            seen.add(skill)
        if isinstance(pct, bool) or not isinstance(pct, int) or not 1 <= pct <= 100:
            problems.append(f"slot {i}: allocation_pct must be an integer 1–100, got {shown(pct)}")
        else:
            total += pct
        parsed.append({"skill": skill, "allocation_pct": pct})
    if total > 100:
        problems.append(f"allocations sum to {total} %, above 100 %")
    if problems:
        ctx.findings.error("chip-allocation-invalid", "; ".join(problems), rule="PHYS-R-001")
        return None
    return {"slot_count": slots, "skill_slots": parsed}


def _hinge(lo: tuple[int, ...], hi: tuple[int, ...], driven: bool) -> dict[str, Any]:
    """Wheel or roller: spins about local +X; radius from the Y/Z extent, width from X."""
    return {
        "radius_um": max(hi[1] - lo[1], hi[2] - lo[2]) // 2,
        "width_um": hi[0] - lo[0],
        "center_um": [(lo[k] + hi[k]) // 2 for k in range(3)],
        "driven": driven,
    }


def _magnet(ctx: PartContext) -> int | None:
    strength = fields.number(
        ctx.asset.root_extras, "magnet_source_strength_n", ROOT, ctx.findings, low=0, high=10, scale=1000, default=0, unit=" N"
    )
    if strength and not any(s.material.magnetism_role == "source" for s in ctx.solids):
        ctx.findings.error("field-invalid", "magnet_source_strength_n > 0 needs a sub-mesh of a magnetism source material")
        return None
    return strength


def _declarations(ctx: PartContext, volume: int) -> dict[str, Any] | None:
    """Type declarations that depend only on volume; checked even when materials failed."""
    if ctx.part_type == "motor":
        return _motor(ctx, volume)
    if ctx.part_type == "battery":
        return _battery(ctx, volume)
    if ctx.part_type == "chip":
        return _chip(ctx, volume)
    return {}


def analyse_part(
    asset: GlbAsset, part_type: str, findings: Findings, *, deprecated: frozenset[str], for_new_product: bool
) -> dict[str, Any] | None:
    """Check every part rule; return the part's manifest body, or None when any error was found."""
    if not asset.mesh_nodes:
        findings.error("no-mesh", "the part has no mesh node")
        return None
    solids, volume = _measure(asset, part_type, findings, deprecated, for_new_product)
    ctx = PartContext(asset, part_type, solids, findings)
    check_empties_not_mirrored(asset, findings)
    mounts = mount_nodes(asset, part_type, findings)
    _check_densities(solids, findings)
    _check_feature_deviations(asset.root_extras, findings)
    check_mount_spacing(mounts, findings)
    if volume is None:
        return None
    specific = _declarations(ctx, volume)
    if not solids or len(solids) != len(asset.mesh_nodes):
        return None
    lo, hi = union_aabb([(s.metrics.aabb_min_um, s.metrics.aabb_max_um) for s in solids])
    _check_aabb(lo, hi, findings)
    if part_type == "chassis":
        check_chassis_mounts(mounts, (lo, hi), findings)
    magnet = _magnet(ctx)
    lift = lift_factor_milli(asset.root_extras, part_type, ROOT, findings)
    proxies = [_proxy(s) for s in solids]
    total_mass = sum(p["mass_ug"] for p in proxies)
    centroid = _weighted_centroid(proxies, total_mass, tuple((lo[k] + hi[k]) // 2 for k in range(3)))
    if part_type == "tire":
        for solid, proxy in zip(solids, proxies, strict=True):
            ultimate = solid.material.ultimate_strength_kpa or 0
            proxy["wear_capacity_mj"] = round_div(proxy["volume_um3"] * ultimate, 10**12)
        if any(p["wear_capacity_mj"] <= 0 for p in proxies):
            findings.error("field-invalid", "every tire sub-mesh needs a material with an ultimate strength (wear capacity > 0)")
    if part_type in ("tire", "roller"):
        specific = {"hinge": _hinge(lo, hi, driven=part_type == "tire")}
    elif part_type == "weapon":
        specific = analyse_weapon(asset, {s.node.index: p for s, p in zip(solids, proxies, strict=True)}, mounts, findings)
    if findings.rejected or specific is None or magnet is None or lift is None:
        return None
    if part_type == "body":
        specific = {"aero": {"axes": aero_axes(solids, centroid), "lift_factor_milli": lift}}
    contact = {d: sum(p["contact_area_um2"][d] for p in proxies) for d in CONTACT_DIRECTIONS}
    return {
        "kind": "part",
        "part_type": part_type,
        "asset_schema_version": C.ASSET_SCHEMA_VERSION,
        "material": asset.root_extras.get("material"),
        "geometry": {
            "volume_um3": volume,
            "mass_ug": total_mass,
            "aabb_min_um": list(lo),
            "aabb_max_um": list(hi),
            "centroid_um": centroid,
            "surface_area_um2": sum(p["surface_area_um2"] for p in proxies),
            "contact_area_um2": contact,
            **_thermal(solids, proxies),
        },
        "magnet_source_strength_mn": magnet,
        "mounts": [frame_dict(mounts[name]) for name in mounts],
        "proxies": proxies,
        part_type: specific,
    }

