"""The bake: this node's canonical finalizer (Stage 3 for a sim node).

It writes the marker, the ``auto_*`` authoring caches (derived from the integer manifest, written as
exact decimals) and the embedded manifest into the root extras, keeps the BIN chunk byte for byte, and
admits its own output before returning it, so a bake never emits something admission would refuse.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

from sim_core.assets import constants as C
from sim_core.assets.admission import admit
from sim_core.assets.encoding import write_glb
from sim_core.assets.findings import AssetRejected, Findings
from sim_core.assets.manifest import build_manifest, envelope
from sim_core.assets.reader import read_glb


def um_to_m(value: int) -> Decimal:
    """µm as an exact decimal number of metres (what an author's ``auto_*`` cache shows)."""
    return Decimal(value).scaleb(-6)


def um_vec_to_m(values: tuple[int, ...] | list[int]) -> list[Decimal]:
    """Each µm value as exact decimal metres."""
    return [um_to_m(v) for v in values]


def ppm_vec(values: tuple[int, ...]) -> list[Decimal]:
    """A ppm unit vector as exact decimal components."""
    return [Decimal(v).scaleb(-6) for v in values]


def _chassis_mounts(mounts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The spec's ``{tire[4], roller[6], body[4], single[…]}`` grouping, each ``{name, pos, axes}``."""
    groups: dict[str, list[dict[str, Any]]] = {"tire": [], "roller": [], "body": [], "single": []}
    for f in mounts:
        kind = f["name"].split("_")[1].lower()
        entry = {"name": f["name"], "pos": um_vec_to_m(f["position_um"]), "axes": [ppm_vec(a) for a in f["axes_ppm"]]}
        groups[kind if kind in ("tire", "roller", "body") else "single"].append(entry)
    return groups


def _part_auto(m: dict[str, Any]) -> dict[str, Any]:
    g = m["geometry"]
    lo, hi = g["aabb_min_um"], g["aabb_max_um"]
    auto: dict[str, Any] = {
        "auto_volume_m3": Decimal(g["volume_um3"]).scaleb(-18),
        "auto_volume_estimated": False,
        "auto_mass_g": Decimal(g["mass_ug"]).scaleb(-6),
        "auto_bbox_m": um_vec_to_m([hi[k] - lo[k] for k in range(3)]),
        "auto_aabb_min_m": um_vec_to_m(lo),
        "auto_aabb_max_m": um_vec_to_m(hi),
        "auto_centroid_m": um_vec_to_m(g["centroid_um"]),
        "auto_surface_area_m2": Decimal(g["surface_area_um2"]).scaleb(-12),
        "auto_contact_area_m2": {k: Decimal(v).scaleb(-12) for k, v in g["contact_area_um2"].items()},
        "auto_empties": {
            f["name"]: {"pos_m": um_vec_to_m(f["position_um"]), "axes": [ppm_vec(a) for a in f["axes_ppm"]]} for f in m["mounts"]
        },
        "auto_thermal_limit": None if g["thermal_limit_mc"] is None else Decimal(g["thermal_limit_mc"]).scaleb(-3),
        "auto_fragments": {"version": 1, "count": 0, "method": "voxel_fallback", "total_volume_loss_pct": 0, "fragments": []},
        "auto_feature_deviations": [],
    }
    kind = m["part_type"]
    specific = m[kind]
    if kind == "motor":
        auto["auto_input_mw"] = specific["input_mw"]
    elif kind == "battery":
        auto["auto_energy_capacity_mj"] = specific["energy_capacity_mj"]
    elif kind in ("tire", "roller"):
        auto["auto_hinge"] = True
    elif kind == "chip":
        auto["auto_chip_slots"] = specific["slot_count"]
    elif kind == "weapon":
        auto["auto_inferred"] = bool(specific["axis"] and specific["axis"]["inferred"])
        auto["auto_launch_ammo"] = [
            {"node_name": a["node"], "material": a["material"], "volume_m3": Decimal(a["volume_um3"]).scaleb(-18)}
            for a in specific["ammo"]
        ]
    elif kind == "chassis":
        auto["auto_chassis_mounts"] = _chassis_mounts(m["mounts"])
    elif kind == "body":
        aero = specific["aero"]
        auto["auto_aero"] = {
            "axes": {axis: {"drag_area_m2": Decimal(a["drag_area_um2"]).scaleb(-12),
                            "center_of_pressure_m": um_vec_to_m(a["center_of_pressure_um"])}
                     for axis, a in aero["axes"].items()},
            "lift_factor": Decimal(aero["lift_factor_milli"]).scaleb(-3),
        }
    return auto


def _track_auto(m: dict[str, Any]) -> dict[str, Any]:
    lo, hi = m["aabb_min_um"], m["aabb_max_um"]
    return {
        "auto_track_aabb_m": um_vec_to_m([hi[k] - lo[k] for k in range(3)]),
        "auto_visual_tris": m["visual_triangles"],
        "auto_collider_tris": m["collider_triangles"],
        "auto_player_max": m["player_max"],
        "auto_narrowest_path_m": um_to_m(m["narrowest_path_um"]),
        "auto_route_polyline_3d": [um_vec_to_m(p["position_um"]) for p in m["route"]],
        "auto_magnet_sources": [
            {"node": s["node"], "pos": um_vec_to_m(s["position_um"]), "strength_n": Decimal(s["strength_mn"]).scaleb(-3),
             "n_pole": ppm_vec(s["n_pole_ppm"])}
            for s in m["magnets"]
        ],
    }


def _root_extras_of(doc: dict[str, Any], location: str) -> dict[str, Any]:
    if location == "scene":
        scene_extras: dict[str, Any] = doc["scenes"][doc.get("scene", 0)]["extras"]
        return scene_extras
    extras = doc.get("extras")
    if not isinstance(extras, dict):
        extras = doc["extras"] = {}
    return extras


def bake(data: bytes, *, deprecated: frozenset[str] = frozenset()) -> bytes:
    """Finalize a GLB: the output carries marker, ``auto_*`` fields and the embedded manifest.

    Raises ``AssetRejected`` (a ``SimError``) with every error finding when the source breaks a rule, a
    deprecated material included (a bake makes a new product); the output is admitted before it is returned."""
    asset = read_glb(data)
    findings = Findings()
    manifest = build_manifest(asset, findings, deprecated=deprecated, for_new_product=True, allow_missing_version=True)
    if manifest is None:
        raise AssetRejected(findings.errors)
    doc = copy.deepcopy(asset.container.doc)
    root = _root_extras_of(doc, asset.root_extras_location)
    for key in [k for k in root if k.startswith("auto_") or k == C.MANIFEST_EXTRAS_KEY]:
        del root[key]
    root["open4wd_version"] = C.ASSET_SCHEMA_VERSION
    root.update(_track_auto(manifest) if manifest["kind"] == "track" else _part_auto(manifest))
    root[C.MANIFEST_EXTRAS_KEY] = envelope(manifest)
    out = write_glb(doc, asset.container.bin_chunk)
    admit(out, deprecated=frozenset())  # the finalizer re-validates its own product
    return out
