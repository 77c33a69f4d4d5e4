"""Weapon declarations (spec/assets.md §3 weapon, §9.2): mechanism, Axis, actuators, launch ammo."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sim_core.assets import constants as C
from sim_core.assets import fields
from sim_core.assets.findings import Findings, shown
from sim_core.assets.reader import GlbAsset, Node
from sim_core.intmath import UNIT, Vec3, cross, dot, isqrt, normalize, sub

ROOT = "root extras"


def _children(asset: GlbAsset, parent: int | None) -> list[Node]:
    """A node's children in glTF ``children`` order (the order that means something: chains, firing)."""
    by_index = {n.index: n for n in asset.nodes}
    if parent is None:
        return [n for n in asset.nodes if n.parent is None]
    return [by_index[i] for i in by_index[parent].children if i in by_index]


def _axis(asset: GlbAsset, mounts: dict[str, Node], passive: bool, findings: Findings) -> dict[str, Any] | None:
    node = asset.node("Axis")
    if node is not None and node.mesh is None:
        return {"position_um": list(node.frame.position_um), "direction_ppm": list(node.frame.axes_ppm[2]), "inferred": False}
    if not passive:
        findings.error("weapon-active-incomplete", "an active weapon needs an empty named Axis (+Z = direction of action)")
        return None
    mount = mounts.get("Mount_Weapon")
    if mount is None:
        return None
    # passive weapons may omit Axis; this node infers it as the weapon mount's +Z (spec leaves the inference open)
    return {"position_um": list(mount.frame.position_um), "direction_ppm": list(mount.frame.axes_ppm[2]), "inferred": True}


def _payload(
    asset: GlbAsset, spec: dict[str, Any], where: str, claimed: set[str], findings: Findings
) -> tuple[dict[str, Any], int] | None:
    has_mesh, has_chain = "mesh_node" in spec, "chain" in spec
    if has_mesh == has_chain:
        findings.error("weapon-payload-invalid", f"{where}: exactly one of mesh_node or chain is required")
        return None
    if has_mesh:
        name = spec["mesh_node"]
        node = asset.node(name) if isinstance(name, str) else None
        if node is None or node.mesh is None or name in claimed:
            findings.error("weapon-payload-invalid",
                           f"{where}: mesh_node {shown(name)} must name a mesh node not driven by another actuator")
            return None
        claimed.add(name)
        return {"mesh_node": name}, 1
    chain = spec["chain"]
    if not isinstance(chain, list) or len(chain) > C.MAX_WEAPON_DRIVEN_BODIES:
        findings.error("weapon-payload-invalid",
                       f"{where}: chain must be a list of at most {C.MAX_WEAPON_DRIVEN_BODIES} segment names")
        return None
    nodes = [asset.node(n) if isinstance(n, str) else None for n in chain] if chain else [None]
    if any(n is None or n.mesh is None or not n.name.startswith("Chain_Segment_") or n.name in claimed for n in nodes):
        findings.error("weapon-payload-invalid",
                       f"{where}: chain must list Chain_Segment_* mesh nodes not driven by another actuator")
        return None
    parents = {n.parent for n in nodes}  # type: ignore[union-attr]
    if len(parents) != 1:
        findings.error("weapon-payload-invalid", f"{where}: chain segments must be siblings (one formed chain)")
        return None
    siblings = [c.name for c in _children(asset, nodes[0].parent) if c.name in chain]  # type: ignore[union-attr]
    if siblings != list(chain):
        findings.error("weapon-payload-invalid", f"{where}: chain order must follow the glTF children order")
        return None
    claimed.update(chain)
    return {"chain": list(chain)}, len(chain)


def _body(asset: GlbAsset, names: list[str], pivot: Node, axis_local: list[int],
          proxies: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """What the step needs of the body an actuator turns (a rotor, or a chain taken as one body), in the
    part's frame: the pivot, the axis (pivot-local → part frame), the mass, the moment of inertia about the
    axis (µg·µm²), how far the farthest support point lies from the axis (reach) and the body's extent along
    the axis from the pivot (span); the material of its first node. Each node's inertia is its mass at its
    centroid's distance plus half its support points' mean squared spread about the centroid (exact for a
    disc on its axis; a bar's 1/8 for 1/12): the bake knows each node's convex proxy, not its mass
    distribution. None when a node has no proxy (the part's own findings name it)."""
    frame = pivot.frame.axes_ppm
    turned = [sum(axis_local[k] * frame[k][r] for k in range(3)) // UNIT for r in range(3)]
    axis = normalize((turned[0], turned[1], turned[2]))
    origin = pivot.frame.position_um

    def off_axis_sq(point: Vec3, base: Vec3) -> int:
        d = sub(point, base)
        c = cross(axis, d)
        return dot(c, c) // (UNIT * UNIT)

    mass = inertia = reach_sq = 0
    span: list[int] = []
    first_material = None
    for name in names:
        node = asset.node(name)
        proxy = proxies.get(node.index) if node is not None else None
        if proxy is None:
            return None
        first_material = first_material or proxy["material"]
        m, centroid = proxy["mass_ug"], _vec3(proxy["centroid_um"])
        points = [_vec3(p) for p in proxy["support_um"]] or [centroid]
        spread = sum(off_axis_sq(p, centroid) for p in points) // len(points)
        mass += m
        inertia += m * off_axis_sq(centroid, origin) + m * spread // 2
        reach_sq = max([reach_sq, *(off_axis_sq(p, origin) for p in points)])
        span.extend(dot(sub(p, origin), axis) // UNIT for p in points)
    reach = max(1, isqrt(reach_sq))
    return {"pivot_um": list(origin), "axis_ppm": list(axis), "mass_ug": mass,
            "inertia_ug_um2": min(max(1, inertia), mass * reach * reach), "reach_um": reach,
            "span_um": [min(span), max(span)], "material": first_material}


def _vec3(values: list[int]) -> Vec3:
    return (values[0], values[1], values[2])


def _actuators(asset: GlbAsset, proxies: dict[int, dict[str, Any]], findings: Findings) -> list[dict[str, Any]] | None:
    raw = asset.root_extras.get("weapon_actuators", [])
    if not isinstance(raw, list) or len(raw) > C.MAX_WEAPON_DRIVEN_PIVOTS:
        findings.error("weapon-actuator-invalid", f"weapon_actuators must be a list of at most {C.MAX_WEAPON_DRIVEN_PIVOTS}")
        return None
    out: list[dict[str, Any]] = []
    pivots: set[str] = set()
    claimed: set[str] = set()
    bodies = 0
    for i, spec in enumerate(raw):
        where = f"weapon_actuators[{i}]"
        if not isinstance(spec, dict):
            findings.error("weapon-actuator-invalid", f"{where} must be an object")
            return None
        local = Findings()
        pivot = spec.get("pivot_node")
        pivot_node = asset.node(pivot) if isinstance(pivot, str) else None
        if (
            not isinstance(pivot, str)
            or pivot_node is None
            or pivot_node.mesh is not None
            or not pivot.startswith("Pivot_")
            or pivot in pivots
        ):
            local.error("weapon-actuator-invalid", f"{where}: pivot_node {shown(pivot)} must name its own Pivot_* empty")
        else:
            pivots.add(pivot)
        angle = fields.number(spec, "weapon_max_angle_deg", where, local, low=1, high=360, scale=1000, unit=" degrees")
        weight = fields.number(spec, "speed_weight", where, local, low=0, high=1000, scale=1000, default=1000)
        phase = fields.number(spec, "phase_offset_deg", where, local, low=0, high=360, scale=1000, default=0)
        curve = fields.choice(spec, "motion_curve", where, local, ("sin", "linear"), default="sin")
        axis = fields.vector3(spec, "rotation_axis", where, local)
        if axis is not None and all(a == 0 for a in axis):
            local.error("weapon-actuator-invalid", f"{where}: rotation_axis must not be the zero vector")
        payload = _payload(asset, spec, where, claimed, local)
        findings.extend(_as_actuator_findings(local))
        if local.rejected or payload is None or axis is None or pivot_node is None:
            continue
        bodies += payload[1]
        rotation_axis = fields.unit_ppm(axis)
        names = [payload[0]["mesh_node"]] if "mesh_node" in payload[0] else payload[0]["chain"]
        body = _body(asset, names, pivot_node, rotation_axis, proxies)
        if body is None:
            continue
        out.append(
            {
                "pivot_node": pivot,
                "rotation_axis_ppm": rotation_axis,
                "max_angle_mdeg": angle,
                "speed_weight_milli": weight,
                "phase_offset_mdeg": phase,
                "motion_curve": curve,
                **payload[0],
                "body": body,
            }
        )
    if bodies > C.MAX_WEAPON_DRIVEN_BODIES:
        findings.error("weapon-actuator-invalid", f"actuators drive {bodies} bodies; at most {C.MAX_WEAPON_DRIVEN_BODIES}")
    return None if findings.rejected else out


def _as_actuator_findings(local: Findings) -> Findings:
    """Range errors inside an actuator are actuator errors; payload errors keep their own code."""
    return Findings([f if f.code.startswith("weapon-") else replace(f, code="weapon-actuator-invalid") for f in local.items])


def _ammo(
    asset: GlbAsset, main: Node, axis: dict[str, Any], proxies: dict[int, dict[str, Any]], findings: Findings
) -> list[dict[str, Any]] | None:
    bullets = [n for n in _children(asset, main.index) if n.mesh is not None and "material" in n.extras]  # firing order
    if not 1 <= len(bullets) <= C.LAUNCH_AMMO_COUNT_MAX:
        findings.error(
            "launch-ammo-invalid",
            f"a launch weapon needs 1–{C.LAUNCH_AMMO_COUNT_MAX} bullets "
            f"(mesh children of the main mesh node with a node-level material); found {len(bullets)}",
        )
        return None
    origin, direction = axis["position_um"], axis["direction_ppm"]
    assert main.mesh is not None
    v = main.mesh.vertices_um
    reach = int(
        ((v[:, 0] - origin[0]) * direction[0] + (v[:, 1] - origin[1]) * direction[1] + (v[:, 2] - origin[2]) * direction[2]).max()
    )
    ammo = []
    for b in bullets:
        proxy = proxies.get(b.index)
        if proxy is None:
            return None
        along = sum((proxy["centroid_um"][k] - origin[k]) * direction[k] for k in range(3))
        ammo.append(
            {
                "node": b.name,
                "material": proxy["material"],
                "volume_um3": proxy["volume_um3"],
                "mass_ug": proxy["mass_ug"],
                "centroid_um": proxy["centroid_um"],
                # distance along Axis +Z from the bullet's centroid to the launcher's front face
                "exit_distance_um": max(0, (reach - along) // 1_000_000),
            }
        )
    return ammo


def analyse_weapon(
    asset: GlbAsset, proxies: dict[int, dict[str, Any]], mounts: dict[str, Node], findings: Findings
) -> dict[str, Any] | None:
    """The weapon's manifest body (passive flag, mechanism, main mesh node, Axis, actuators, launch
    ammo), or None once a finding refused it."""
    root = asset.root_extras
    passive = fields.flag(root, "passive", ROOT, findings)
    if passive is None:
        return None
    axis = _axis(asset, mounts, passive, findings)
    if passive:
        return {"passive": True, "mechanism": None, "main_mesh_node": None, "axis": axis, "actuators": [], "ammo": []}
    mechanism = root.get("weapon_mechanism")
    main_name = root.get("weapon_main_mesh_node")
    main = asset.node(main_name) if isinstance(main_name, str) else None
    if mechanism not in C.WEAPON_MECHANISMS or main is None or main.mesh is None:
        findings.error(
            "weapon-active-incomplete",
            f"an active weapon needs weapon_mechanism ({', '.join(C.WEAPON_MECHANISMS)}) "
            "and weapon_main_mesh_node naming a mesh node",
        )
        return None
    actuators = _actuators(asset, proxies, findings) if mechanism == "general" else []
    ammo = _ammo(asset, main, axis, proxies, findings) if mechanism == "launch" and axis is not None else []
    if actuators is None or ammo is None or axis is None:
        return None
    return {
        "passive": False,
        "mechanism": mechanism,
        "main_mesh_node": main_name,
        "axis": axis,
        "actuators": actuators,
        "ammo": ammo,
    }
