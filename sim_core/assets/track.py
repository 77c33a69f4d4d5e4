"""Track rules (spec/assets.md §5, §9.3) and the track's physics manifest, computed in one pass.

Not checked (documented in docs/assets.md): Draco/KTX2 being mandatory for distribution, exposure
grids and the narrowest-path measurement (reported as the narrowest route width).
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import pairwise
from decimal import Decimal
from typing import Any

from sim_core.assets import constants as C
from sim_core.assets import fields
from sim_core.assets.common import check_empties_not_mirrored, node_materials
from sim_core.assets.findings import Findings, shown
from sim_core.assets.reader import GlbAsset, Node
from sim_core.assets.surface import SurfaceIndex, vertical_gap
from sim_core.assets.track_magnets import magnet_sources

EMPTY_PREFIXES = ("RoutePoint_", "Checkpoint_", "KillZone_", "RespawnPoint_")
_INDEXED = re.compile(r"^(RoutePoint|Checkpoint|KillZone|RespawnPoint)_([1-9][0-9]*)$")
BoxAabb = tuple[tuple[int, int, int], tuple[int, int, int]]
DEFAULT_GRAVITY_DIRECTION = (Decimal(0), Decimal(-1), Decimal(0))
ZERO_VECTOR = (Decimal(0), Decimal(0), Decimal(0))


def _block(root: dict[str, Any], key: str, findings: Findings) -> dict[str, Any] | None:
    block = root.get(key)
    if not isinstance(block, dict):
        findings.error("missing-required-field", f"root extras need a {key!r} object (defaults are allowed inside it)")
        return None
    return block


def _indexed_empties(asset: GlbAsset, findings: Findings) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {p: [] for p in EMPTY_PREFIXES}
    for node in asset.nodes:
        prefix = next((p for p in EMPTY_PREFIXES if node.name.startswith(p)), None)
        if prefix is None:
            continue
        if not _INDEXED.match(node.name) or node.mesh is not None:
            findings.error("empty-name-invalid",
                           f"{shown(node.name)} must be an empty named {prefix}<n> with n a positive integer")
            continue
        out[prefix].append(node)
    for nodes in out.values():
        nodes.sort(key=lambda n: int(n.name.rsplit("_", 1)[1]))
    return out


def _box(node: Node) -> BoxAabb:
    """Axis-aligned box of a box empty (scale = full size along its local axes)."""
    half = []
    for i in range(3):
        extent = sum(abs(node.frame.axes_ppm[j][i]) * node.frame.scale_um[j] for j in range(3))
        half.append(extent // 2_000_000)
    p = node.frame.position_um
    return (p[0] - half[0], p[1] - half[1], p[2] - half[2]), (p[0] + half[0], p[1] + half[1], p[2] + half[2])


def _inside(box: BoxAabb, aabb: BoxAabb) -> bool:
    return all(aabb[0][k] <= box[0][k] and box[1][k] <= aabb[1][k] for k in range(3))


def _orthonormal(up: tuple[int, int, int], back: tuple[int, int, int]) -> bool:
    """Unit vectors (±0.2 %) within ~3° of perpendicular, as the simulation's route frames require."""
    unit = all(998_000**2 <= sum(c * c for c in v) <= 1_002_000**2 for v in (up, back))
    return unit and abs(sum(a * b for a, b in zip(up, back, strict=True))) <= 50_000 * 1_000_000


def _route(
    track: dict[str, Any], empties: dict[str, list[Node]], findings: Findings
) -> tuple[str, str, list[dict[str, Any]]] | None:
    track_type = fields.choice(track, "type", "track", findings, ("open", "fixed"))
    raw = track.get("route")
    if not isinstance(raw, list):
        findings.error("missing-required-field", "track.route must be a list of {name, width_m}")
        return None
    if len(raw) > C.MAX_ROUTE_POINTS:
        findings.error("route-count-invalid", f"track.route has {len(raw)} points; at most {C.MAX_ROUTE_POINTS}")
        return None
    by_name = {n.name: n for n in empties["RoutePoint_"]}
    listed: set[str] = set()
    points: list[dict[str, Any]] = []
    for i, entry in enumerate(raw):
        name = entry.get("name") if isinstance(entry, dict) else None
        node = by_name.get(name) if isinstance(name, str) else None
        if node is None or not isinstance(name, str) or name in listed:
            findings.error("route-empty-mismatch",
                           f"track.route[{i}] names {shown(name)}, which is not a RoutePoint_<n> empty listed once")
            continue
        listed.add(name)
        width = fields.number(entry, "width_m", f"track.route[{i}]", findings, low=0, high=500, scale=1_000_000, unit=" m")
        if width is not None and width <= 0:
            findings.error("route-width-invalid", f"track.route[{i}] width_m must be > 0")
            width = None
        if width is None:
            continue
        f = node.frame
        if not _orthonormal(f.axes_ppm[1], f.axes_ppm[2]):
            findings.error("route-frame-invalid",
                           f"{name}: the empty's +Y (up) and −Z (forward) must be unit length and perpendicular")
            continue
        points.append(
            {
                "name": name,
                "position_um": list(f.position_um),
                "forward_ppm": [-a for a in f.axes_ppm[2]],
                "up_ppm": list(f.axes_ppm[1]),
                "width_um": width,
            }
        )
    orphans = sorted(set(by_name) - set(listed))
    if orphans:
        findings.error("route-empty-mismatch", f"RoutePoint empties not listed in track.route: {', '.join(orphans)}")
    if track_type is None or findings.rejected:
        return None
    if (track_type == "open" and len(points) != 2) or len(points) < 2:
        findings.error(
            "route-count-invalid",
            f"a {track_type} track needs {'exactly' if track_type == 'open' else 'at least'} 2 route points; "
            f"it has {len(points)}",
        )
        return None
    for a, b in pairwise(points):
        d2 = sum((a["position_um"][k] - b["position_um"][k]) ** 2 for k in range(3))
        if d2 < C.ROUTEPOINT_MIN_SPACING_UM**2:
            findings.error("route-spacing-invalid", f"{a['name']} and {b['name']} are closer than 0.1 m")
    ends2 = sum((points[0]["position_um"][k] - points[-1]["position_um"][k]) ** 2 for k in range(3))
    auto = "loop" if track_type == "fixed" and len(points) >= 3 and ends2 < C.LAP_MODE_LOOP_DISTANCE_UM**2 else "linear"
    lap_mode = fields.choice(track, "lap_mode", "track", findings, ("linear", "loop"), default=auto)
    if lap_mode != auto and (track_type == "open" or len(points) < 3):
        findings.error("field-invalid",
                       f"track.lap_mode {shown(lap_mode)} may be overridden only on fixed tracks with ≥ 3 route points")
    return track_type, lap_mode or auto, points


def _named_boxes(
    track: dict[str, Any], empties: dict[str, list[Node]], aabb: BoxAabb, findings: Findings
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = track.get("checkpoints", [])
    by_name = {n.name: n for n in empties["Checkpoint_"]}
    if (
        not isinstance(names, list)
        or not all(isinstance(n, str) and n in by_name for n in names)
        or len(set(names)) != len(names)
    ):
        findings.error("route-empty-mismatch", "track.checkpoints must list distinct Checkpoint_<n> empties by name")
        names = list(dict.fromkeys(n for n in names if isinstance(n, str) and n in by_name)) if isinstance(names, list) else []
    orphans = sorted(set(by_name) - set(names))
    if orphans:
        findings.error("route-empty-mismatch", f"Checkpoint empties not listed in track.checkpoints: {', '.join(orphans)}")
    size = [aabb[1][k] - aabb[0][k] for k in range(3)]
    checkpoints = []
    for name in names:
        node = by_name[name]
        box = _box(node)
        small = any(node.frame.scale_um[k] < C.CHECKPOINT_MIN_SIZE_UM[k] for k in range(3))
        large = any((box[1][k] - box[0][k]) * 100 > size[k] * C.CHECKPOINT_MAX_FRACTION_PCT for k in range(3))
        if small or large:
            findings.error("checkpoint-scale-invalid",
                           f"{name}: size must be at least [0.1, 0.1, 1] m and at most 10 % of the track AABB per axis")
        checkpoints.append(_box_entry(name, box))
    kill_zones = [_box_entry(n.name, _box(n)) for n in empties["KillZone_"]]
    for entry in kill_zones:
        if any(hi - lo <= 0 for lo, hi in zip(entry["min_um"], entry["max_um"], strict=True)):
            findings.error("killzone-scale-invalid", f"{entry['name']}: a kill zone box needs a positive size on every axis")
    if len(checkpoints) > C.MAX_CHECKPOINTS or len(kill_zones) > C.MAX_KILL_ZONES:
        findings.error("track-budget", f"at most {C.MAX_CHECKPOINTS} checkpoints and {C.MAX_KILL_ZONES} kill zones")
    for entry in checkpoints + kill_zones:
        if not _inside((tuple(entry["min_um"]), tuple(entry["max_um"])), aabb):
            findings.error("box-outside-track", f"{entry['name']} is not fully inside the track AABB")
    return checkpoints, kill_zones


def _box_entry(name: str, box: BoxAabb) -> dict[str, Any]:
    return {"name": name, "min_um": list(box[0]), "max_um": list(box[1])}


def _gravity(physics: dict[str, Any], findings: Findings) -> dict[str, Any] | None:
    direction = fields.vector3(physics, "gravity_direction", "physics", findings, default=DEFAULT_GRAVITY_DIRECTION)
    strength = fields.number(
        physics,
        "gravity_strength_m_s2",
        "physics",
        findings,
        low=Decimal("1.6"),
        high=25,
        scale=1_000_000,
        default=C.GRAVITY_DEFAULT_UM_S2,
        unit=" m/s²",
    )
    if direction is not None and all(d == 0 for d in direction):
        findings.error("gravity-invalid", "physics.gravity_direction must not be the zero vector")
        return None
    if direction is None or strength is None:
        return None
    return {"direction_ppm": fields.unit_ppm(direction), "strength_um_s2": strength}


def _weather(weather: dict[str, Any], findings: Findings) -> dict[str, Any] | None:
    before = len(findings.items)
    kind = fields.choice(weather, "type", "weather", findings, C.WEATHER_TYPES, default="normal")
    if kind is None:
        return None
    low, high, default = C.WEATHER_TEMPERATURE_MC[kind]
    temp = fields.number(
        weather, "temperature", "weather", findings, low=low // 1000, high=high // 1000, scale=1000, default=default, unit=" °C"
    )
    wind = fields.number(weather, "wind_speed_mps", "weather", findings, low=0, high=30, scale=1_000_000, default=0, unit=" m/s")
    wind_dir = fields.number(
        weather, "wind_direction_deg", "weather", findings, low=-360, high=360, scale=1000, default=0, unit=" degrees"
    )
    patch_raw = weather.get("patch")
    patch = None
    if kind == "normal":
        if patch_raw is not None:
            findings.error("weather-invalid", "weather.patch is allowed only with rain or snow")
    else:
        raw = patch_raw if isinstance(patch_raw, dict) else {}
        snow = kind == "snow"

        def get(key: str, spec: tuple[str, str, int, int], scale: int) -> int | None:
            low, high = Decimal(spec[0]), Decimal(spec[1])
            return fields.number(
                raw, key, "weather.patch", findings, low=low, high=high, scale=scale, default=spec[3] if snow else spec[2]
            )

        patch = {
            "spawn_rate_per_min_x1000": get("spawn_rate_per_min", C.PATCH_SPAWN_RATE_PER_MIN, 1000),
            "lifetime_frames": None,
            "radius_um": get("radius_m", C.PATCH_RADIUS_M, 1_000_000),
            "friction_modifier_milli": get("friction_modifier", C.PATCH_FRICTION_MODIFIER, 1000),
            "rolling_modifier_milli": get("rolling_modifier", C.PATCH_ROLLING_MODIFIER, 1000),
        }
        lifetime_ms = get("lifetime_ms", C.PATCH_LIFETIME_MS, 1)
        patch["lifetime_frames"] = None if lifetime_ms is None else lifetime_ms * 60 // 1000
    findings.items[before:] = [
        replace(f, code="weather-invalid") if f.code == "field-invalid" else f for f in findings.items[before:]
    ]
    if len(findings.items) > before:
        return None
    return {"type": kind, "temperature_mc": temp, "wind_speed_um_s": wind, "wind_direction_mdeg": wind_dir, "patch": patch}


def _entities(asset: GlbAsset, findings: Findings, materials: dict[int, Any]) -> list[dict[str, Any]]:
    entities = []
    for node in asset.nodes:
        kind = node.extras.get("entity_type")
        if kind is None:
            continue
        where = f"entity {node.name or node.index}"
        local = Findings()
        if kind not in C.ENTITY_TYPES:
            local.error("entity-invalid", f"{where}: entity_type {shown(kind)} is not one of {', '.join(C.ENTITY_TYPES)}")
        physics = fields.choice(node.extras, "physics", where, local, ("default", "visual_only"), default="default")
        destructible = fields.flag(node.extras, "destructible", where, local, default=False)
        if physics == "visual_only" and (kind != "decoration" or destructible):
            local.error("entity-invalid", f"{where}: visual_only is allowed only on non-destructible decorations")
        if node.mesh is None or node.index not in materials or "material" not in node.extras:
            local.error("entity-invalid", f"{where}: an entity is a mesh node with its own node-level material")
        entry: dict[str, Any] = {"node": node.name, "entity_type": kind, "physics": physics, "destructible": destructible,
                                 "material": materials[node.index].id if node.index in materials else None,
                                 "position_um": list(node.frame.position_um), "axes_ppm": [list(a) for a in node.frame.axes_ppm],
                                 **_mesh_box(node)}
        if kind == "kinematic_move":
            period = fields.number(node.extras, "period_ms", where, local, low=500, high=3_600_000, scale=1)
            phase = fields.number(node.extras, "phase_offset_ms", where, local, low=0, high=3_600_000, scale=1, default=0)
            amplitude = [
                fields.scaled(d, 1_000_000)
                for d in fields.vector3(node.extras, "amplitude_m", where, local, default=ZERO_VECTOR) or ()
            ]
            if None in amplitude or sum(a * a for a in amplitude if a is not None) > 20_000_000**2:
                local.error("entity-invalid", f"{where}: amplitude_m must be µm-resolution and at most 20 m long")
            curve = fields.choice(node.extras, "motion_curve", where, local, ("sin", "step", "linear"))
            entry.update(
                motion_curve=curve,
                period_frames=None if period is None else period * 60 // 1000,
                phase_offset_frames=None if phase is None else phase * 60 // 1000,
                amplitude_um=amplitude,
                **_rotation(node.extras, where, local, curve),
            )
        elif kind == "kinematic_conveyor":
            entry["conveyor_velocity_um_s"] = fields.number(
                node.extras, "conveyor_velocity_m_s", where, local, low=-10, high=10, scale=1_000_000
            )
        findings.items.extend(replace(f, code="entity-invalid") for f in local.items)
        entities.append(entry)
    if len(entities) > C.MAX_ENTITIES or sum(1 for e in entities if e["destructible"]) > C.MAX_DESTRUCTIBLE_ENTITIES:
        findings.error("track-budget", f"at most {C.MAX_ENTITIES} entities and {C.MAX_DESTRUCTIBLE_ENTITIES} destructible ones")
    return entities


def _rotation(extras: dict[str, Any], where: str, local: Findings, curve: str | None) -> dict[str, Any]:
    """A mover's turn (spec §5.6): ``rotation_axis`` (local, non-zero) with ``rotation_amplitude_deg``
    (1–360, 360 a steady whole turn), both or neither, as ``rotation_axis_ppm`` (local unit, ppm) and
    ``rotation_amplitude_mdeg`` (0: it does not turn); ``open_duration_ratio`` (0–1, step curves only)
    as ``open_duration_milli`` (default 500: out for the first half of the period)."""
    axis = fields.vector3(extras, "rotation_axis", where, local, default=None)
    degrees = fields.number(extras, "rotation_amplitude_deg", where, local, low=1, high=360, scale=1000, default=None)
    if ("rotation_axis" in extras) != ("rotation_amplitude_deg" in extras):
        local.error("entity-invalid", f"{where}: rotation_axis and rotation_amplitude_deg go together")
    if axis is not None and all(a == 0 for a in axis):
        local.error("entity-invalid", f"{where}: rotation_axis must not be the zero vector")
        axis = None
    open_milli = fields.number(extras, "open_duration_ratio", where, local, low=0, high=1, scale=1000, default=500)
    if "open_duration_ratio" in extras and curve != "step":
        local.error("entity-invalid", f"{where}: open_duration_ratio is for the step motion_curve only")
    if axis is None or degrees is None:
        return {"rotation_axis_ppm": [0, 0, 0], "rotation_amplitude_mdeg": 0, "open_duration_milli": open_milli}
    return {"rotation_axis_ppm": fields.unit_ppm(axis), "rotation_amplitude_mdeg": degrees,
            "open_duration_milli": open_milli}


def _mesh_box(node: Node) -> dict[str, list[int]]:
    """``min_um`` and ``max_um``: the box of a mesh node's vertices (a node without vertices: its position)."""
    if node.mesh is None or not node.mesh.vertex_count:
        return {"min_um": list(node.frame.position_um), "max_um": list(node.frame.position_um)}
    return {"min_um": [int(x) for x in node.mesh.vertices_um.min(axis=0)],
            "max_um": [int(x) for x in node.mesh.vertices_um.max(axis=0)]}


def _fluid(node: Node, material_id: str, solids: list[Node]) -> dict[str, Any]:
    """A fluid node as a sensor box, with its centre's gap over the static surface (as a magnet's)."""
    box = _mesh_box(node)
    lo, hi = box["min_um"], box["max_um"]
    centre = ((lo[0] + hi[0]) // 2, (lo[1] + hi[1]) // 2, (lo[2] + hi[2]) // 2)
    surface = [(n.mesh.vertices_um, n.mesh.triangles) for n in solids if n.mesh is not None]
    return {"node": node.name, "source_node_index": node.index, "material": material_id, **box,
            "surface_gap_um": vertical_gap(surface, centre)}


def _check_surface_snap(points: list[dict[str, Any]], solids: list[Node], findings: Findings) -> None:
    """Every route point lies within ±5 mm of a static collider surface (ROUTEPOINT_SURFACE_TOLERANCE_M)."""
    surfaces = [SurfaceIndex(n.mesh.vertices_um, n.mesh.triangles) for n in solids if n.mesh is not None]
    for p in points:
        if not any(s.within(tuple(p["position_um"]), C.ROUTEPOINT_SURFACE_TOLERANCE_UM) for s in surfaces):
            findings.error("routepoint-off-surface", f"{p['name']} is more than 5 mm from every static collider surface")


def analyse_track(
    asset: GlbAsset, findings: Findings, *, deprecated: frozenset[str], for_new_product: bool
) -> dict[str, Any] | None:
    """Check every track rule; return the track's manifest body, or None when any error was found."""
    root = asset.root_extras
    if not asset.mesh_nodes:
        findings.error("no-mesh", "the track has no mesh node")
        return None
    materials = node_materials(asset, findings, part_type=None, deprecated=deprecated, for_new_product=for_new_product)
    check_empties_not_mirrored(asset, findings)
    track, weather, physics = (
        _block(root, "track", findings),
        _block(root, "weather", findings),
        _block(root, "physics", findings),
    )
    empties = _indexed_empties(asset, findings)
    verts = [n.mesh.vertices_um for n in asset.mesh_nodes if n.mesh is not None and n.mesh.vertex_count]
    if not verts:
        findings.error("no-mesh", "the track's meshes have no vertices")
        return None
    lo = tuple(int(min(v[:, k].min() for v in verts)) for k in range(3))
    hi = tuple(int(max(v[:, k].max() for v in verts)) for k in range(3))
    aabb: BoxAabb = (lo, hi)  # type: ignore[assignment]
    if any(hi[k] - lo[k] > C.TRACK_AABB_MAX_UM[k] for k in range(3)):
        findings.error("track-aabb-out-of-range", "the track AABB must be at most 500 × 100 × 500 m (x, y, z)")
    entities = _entities(asset, findings, materials)
    entity_nodes = {e["node"] for e in entities}
    solids = [
        n for n in asset.mesh_nodes if n.name not in entity_nodes and n.index in materials and not materials[n.index].is_fluid
    ]
    fluid_nodes = [n for n in asset.mesh_nodes if n.name not in entity_nodes and n.index in materials
                   and materials[n.index].is_fluid and n.mesh and n.mesh.vertex_count]
    collider_tris = sum(n.mesh.triangle_count for n in solids if n.mesh)
    visual_tris = sum(n.mesh.triangle_count for n in asset.mesh_nodes if n.mesh)
    within_budget = not (collider_tris > C.MAX_TRACK_COLLIDER_TRIANGLES or visual_tris > C.MAX_TRACK_VISUAL_TRIANGLES
                         or len(solids) > 256 or len(fluid_nodes) > 256)
    if not within_budget:
        findings.error("track-budget", "a track allows at most 500 000 collider triangles, 3 000 000 visual triangles, "
                                       "256 solid regions and 256 fluid regions")
    # measured against the surface only within the budget (bounded work per file)
    magnets = magnet_sources(asset, materials, {e["node"] for e in entities if e["entity_type"] != "decoration"}, solids,
                             findings) if within_budget else []
    fluids = [_fluid(n, materials[n.index].id, solids) for n in fluid_nodes] if within_budget else []
    if track is None or weather is None or physics is None:
        return None
    route = _route(track, empties, findings)
    if route is not None:
        _check_surface_snap(route[2], solids, findings)
    checkpoints, kill_zones = _named_boxes(track, empties, aabb, findings)
    respawns = []
    for n in empties["RespawnPoint_"]:
        if not _orthonormal(n.frame.axes_ppm[1], n.frame.axes_ppm[2]):
            findings.error("route-frame-invalid",
                           f"{n.name}: the empty's +Y (up) and −Z (heading) must be unit length and perpendicular")
        if not _inside((n.frame.position_um, n.frame.position_um), aabb):
            findings.error("box-outside-track", f"{n.name} is not inside the track AABB")
        respawns.append(
            {
                "name": n.name,
                "position_um": list(n.frame.position_um),
                "forward_ppm": [-a for a in n.frame.axes_ppm[2]],
                "up_ppm": list(n.frame.axes_ppm[1]),
            }
        )
    if kill_zones and not respawns:
        findings.warn("killzone-without-respawn", "the track has kill zones but no RespawnPoint; fallen cars restart at RP1")
    gravity = _gravity(physics, findings)
    weather_block = _weather(weather, findings)
    if route is None:
        return None
    track_type, lap_mode, points = route
    player_max = min(C.MAX_PLAYERS, points[0]["width_um"] // C.START_GRID_CELL_WIDTH_UM)
    if player_max < C.MIN_PLAYERS:
        findings.error("player-capacity-invalid",
                       f"RP1 is {points[0]['width_um']} µm wide; it must hold at least 2 start slots of 0.18 m")
    elif player_max < C.MAX_PLAYERS:
        findings.warn("start-grid-narrow", f"RP1 holds {player_max} start slots; 8 players need 1.44 m")
    if findings.rejected:
        return None
    return {
        "kind": "track",
        "asset_schema_version": C.ASSET_SCHEMA_VERSION,
        "material": root.get("material"),
        "track_type": track_type,
        "lap_mode": lap_mode,
        "route": points,
        "checkpoints": checkpoints,
        "kill_zones": kill_zones,
        "respawn_points": respawns,
        "gravity": gravity,
        "weather": weather_block,
        "aabb_min_um": list(lo),
        "aabb_max_um": list(hi),
        "player_max": player_max,
        "collider_triangles": collider_tris,
        "visual_triangles": visual_tris,
        "narrowest_path_um": min(p["width_um"] for p in points),
        "solids": [
            {
                "node": n.name,
                "source_node_index": n.index,
                "material": materials[n.index].id,
                "triangles": n.mesh.triangle_count if n.mesh else 0,
            }
            for n in sorted(solids, key=lambda n: (materials[n.index].index, n.index))
        ],
        "entities": entities,
        "magnets": magnets,
        "fluids": fluids,
    }
