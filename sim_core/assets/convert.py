"""Manifests → the simulation's ``TrackSpec`` / ``VehicleSpec`` (the race reads nothing else).

Inputs are admitted manifests (rebuilt and digest-checked) and an assembled loadout; every value is
already an integer, so this module only renames and re-scales (nJ/K → mJ/°C) with explicit floors.
"""

from __future__ import annotations

from typing import Any

from sim_core.assets.admission import AdmittedAsset
from sim_core.assets.findings import AssetRejected
from sim_core.assets.loadout import AssembledVehicle, PlacedPart, Resolver, assemble
from sim_core.errors import SimError
from sim_core.intmath import UNIT, Vec3, normalize
from sim_core.specs.conveyors import ConveyorSpec
from sim_core.specs.fluids import FluidZone
from sim_core.specs.magnets import MagnetPole, MagnetSource, SteelPoint
from sim_core.specs.materials import material
from sim_core.specs.obstacles import MotionSpec, ObstacleSpec
from sim_core.specs.track import Box, RespawnPoint, RoutePoint, TrackSpec
from sim_core.specs.vehicle import (
    AERO_AXES, LEFT_ROLLER_SLOTS, AeroSpec, BatterySpec, ChipSlot, LaunchAmmo, MotorSpec, PartSpec, RotorSpec, VehicleSpec,
    WeaponMechanism, WeaponSpec,
)
from sim_core.specs.weather import PatchSpec, WeatherSpec


def _vec(values: list[int]) -> tuple[int, int, int]:
    return (values[0], values[1], values[2])


def _box(entry: dict[str, Any]) -> Box:
    lo, hi = entry["min_um"], entry["max_um"]
    return Box(tuple((lo[k] + hi[k]) // 2 for k in range(3)), tuple((hi[k] - lo[k]) // 2 for k in range(3)))


def track_spec(track: AdmittedAsset, *, track_id: str | None = None, lap_count: int = 3, time_limit_s: int = 600) -> TrackSpec:
    """A race track from an admitted track manifest; lap count and time limit are room settings.

    Raises ``SimError``: ``asset-not-a-track`` for a part's manifest, a ``track-*`` code for settings the
    track rules refuse (a lap count or time limit out of range)."""
    m = track.manifest
    if m.get("kind") != "track":
        raise SimError("asset-not-a-track", f"{track.asset_type} {track.content_id[:16]}… is not a track")
    return TrackSpec(
        track_id=track_id or f"sha256:{track.content_id}",
        track_type=m["track_type"],
        route=tuple(
            RoutePoint(_vec(p["position_um"]), _vec(p["forward_ppm"]), _vec(p["up_ppm"]), p["width_um"]) for p in m["route"]
        ),
        surface_material=m["material"],
        lap_mode=m["lap_mode"],
        lap_count=lap_count,
        checkpoints=tuple(_box(c) for c in m["checkpoints"]),
        kill_zones=tuple(_box(k) for k in m["kill_zones"]),
        respawn_points=tuple(
            RespawnPoint(_vec(r["position_um"]), _vec(r["forward_ppm"]), _vec(r["up_ppm"])) for r in m["respawn_points"]
        ),
        gravity_dir_e6=_vec(m["gravity"]["direction_ppm"]),
        gravity_um_s2=m["gravity"]["strength_um_s2"],
        time_limit_s=time_limit_s,
        air_temperature_mc=m["weather"]["temperature_mc"],
        aabb_min_um=_vec(m["aabb_min_um"]),
        aabb_max_um=_vec(m["aabb_max_um"]),
        weather=_weather(m["weather"]),
        magnets=tuple(MagnetSource(_vec(s["position_um"]), s["strength_mn"], _vec(s["n_pole_ppm"]), s["surface_gap_um"])
                      for s in m["magnets"]),
        fluids=tuple(FluidZone(_vec(f["min_um"]), _vec(f["max_um"]), f["material"], f["surface_gap_um"]) for f in m["fluids"]),
        conveyors=tuple(_conveyor(e) for e in m["entities"] if e["entity_type"] == "kinematic_conveyor"),
        obstacles=tuple(_obstacle(e) for e in m["entities"] if e["entity_type"] == "kinematic_move"
                        or (e["entity_type"] == "decoration" and e["physics"] == "default")),
    )


def _obstacle(entity: dict[str, Any]) -> ObstacleSpec:
    """A solid entity: its box, material, whether it breaks, and a mover's travel turned from its local
    axes into the world."""
    motion = None
    if entity["entity_type"] == "kinematic_move":
        axes = entity["axes_ppm"]

        def turned(local: list[int]) -> Vec3:
            world = [sum(local[k] * axes[k][r] for k in range(3)) // UNIT for r in range(3)]
            return world[0], world[1], world[2]

        motion = MotionSpec(entity["motion_curve"], entity["period_frames"], entity["phase_offset_frames"],
                            turned(entity["amplitude_um"]), turned(entity["rotation_axis_ppm"]),
                            entity["rotation_amplitude_mdeg"], _vec(entity["position_um"]), entity["open_duration_milli"])
    return ObstacleSpec(_vec(entity["min_um"]), _vec(entity["max_um"]), entity["material"], entity["destructible"], motion)


def _conveyor(entity: dict[str, Any]) -> ConveyorSpec:
    """A conveyor entity: its box, its −Z as the direction it runs, its speed and material."""
    z = entity["axes_ppm"][2]
    return ConveyorSpec(_vec(entity["min_um"]), _vec(entity["max_um"]), normalize((-z[0], -z[1], -z[2])),
                        entity["conveyor_velocity_um_s"], entity["material"])


def _weather(block: dict[str, Any]) -> WeatherSpec:
    """The manifest's ``weather`` block (``sim_core.assets.track._weather``: already in spec units) as a
    ``WeatherSpec``; the temperature goes to ``TrackSpec.air_temperature_mc``."""
    patch = block["patch"]
    return WeatherSpec(
        weather_type=block["type"],
        wind_speed_um_s=block["wind_speed_um_s"],
        wind_direction_mdeg=block["wind_direction_mdeg"],
        patch=None if patch is None else PatchSpec(
            spawn_rate_per_min_x1000=patch["spawn_rate_per_min_x1000"],
            lifetime_frames=patch["lifetime_frames"],
            radius_um=patch["radius_um"],
            friction_modifier_milli=patch["friction_modifier_milli"],
            rolling_modifier_milli=patch["rolling_modifier_milli"],
        ),
    )


def _part(placed: PlacedPart, centre: Vec3) -> PartSpec:
    slot, manifest = placed.slot, placed.manifest
    g = manifest["geometry"]
    kind = manifest["part_type"]
    hinge = manifest.get(kind, {}).get("hinge") if kind in ("tire", "roller") else None
    return PartSpec(
        part_type=kind,
        mass_ug=g["mass_ug"],
        material=manifest["material"],
        heat_capacity_mj_per_c=max(1, g["heat_capacity_nj_per_k"] // 1_000_000),
        ambient_conductance_uw_per_c=g["ambient_conductance_uw_per_k"],
        thermal_limit_mc=g["thermal_limit_mc"],
        slot=slot.partition("_")[2],
        radius_um=hinge["radius_um"] if hinge else 0,
        wear_capacity_mj=sum(p.get("wear_capacity_mj", 0) for p in manifest["proxies"]) if kind == "tire" else 0,
        aero=_aero(manifest["body"]["aero"]) if kind == "body" else None,
        steel=tuple(SteelPoint(_offset(placed, p["centroid_um"], centre), material(p["material"]).susceptibility_milli or 0)
                    for p in manifest["proxies"] if material(p["material"]).magnetism_role == "passive"),
        contact_area_um2=_contact_area(kind, slot.partition("_")[2], g["contact_area_um2"]),
    )


def _contact_area(kind: str, slot: str, areas: dict[str, int]) -> int:
    """The six-way area a tire or roller meets its surface with (``PartSpec.contact_area_um2``): a tire's
    bottom (the track), a roller's side toward its wall (left or right by its slot); 0 for other parts."""
    if kind == "tire":
        return areas["bottom"]
    if kind == "roller":
        return areas["left" if slot in LEFT_ROLLER_SLOTS else "right"]
    return 0


def _offset(placed: PlacedPart, point: list[int], centre: Vec3) -> Vec3:
    """A part-local point's offset from the car's centre (the assembled AABB's), in the car's frame."""
    at = placed.placement.apply(point)
    return (at[0] - centre[0], at[1] - centre[1], at[2] - centre[2])


def _weapon(placed: PlacedPart, centre: Vec3, passive_split_pct: int | None) -> WeaponSpec:
    """The weapon as the step reads it: mode and split; an active weapon's mechanism (``general`` without
    actuators is the push, with them the rotors) and its Axis +Z turned into the car's frame; a magnet's
    pole at the centroid of its main mesh node (the field origin); a launcher's bullets where they are held."""
    weapon = placed.manifest["weapon"]
    split = 50 if passive_split_pct is None else passive_split_pct
    if weapon["passive"]:
        return WeaponSpec("passive", split)
    rotation = placed.placement.rotation
    d = weapon["axis"]["direction_ppm"]
    turned = [sum(rotation[r][k] * d[k] for k in range(3)) for r in range(3)]
    axis = normalize((turned[0], turned[1], turned[2]))
    kind = weapon["mechanism"]
    mechanism: WeaponMechanism = ("magnet" if kind == "magnet" else "launch" if kind == "launch"
                                  else "rotor" if weapon["actuators"] else "push")
    magnet = None
    if mechanism == "magnet":
        main = next(p for p in placed.manifest["proxies"] if p["node"] == weapon["main_mesh_node"])
        magnet = MagnetPole(_offset(placed, main["centroid_um"], centre), axis)
    ammo = tuple(LaunchAmmo(b["mass_ug"], b["material"], _offset(placed, b["centroid_um"], centre)) for b in weapon["ammo"])
    rotors = tuple(_rotor(placed, a, centre) for a in weapon["actuators"]) if mechanism == "rotor" else ()
    return WeaponSpec("active", split, magnet, mechanism, axis, ammo, rotors)


def _rotor(placed: PlacedPart, actuator: dict[str, Any], centre: Vec3) -> RotorSpec:
    """One actuator's body as the step reads it: its pivot and axis turned into the car's frame (the
    mass, inertia, reach and span do not change with the part's placement)."""
    body = actuator["body"]
    rotation = placed.placement.rotation
    a = body["axis_ppm"]
    turned = [sum(rotation[r][k] * a[k] for k in range(3)) for r in range(3)]
    return RotorSpec(_offset(placed, body["pivot_um"], centre), normalize((turned[0], turned[1], turned[2])),
                     body["mass_ug"], body["inertia_ug_um2"], body["reach_um"], _pair(body["span_um"]), body["material"],
                     actuator["speed_weight_milli"], actuator["max_angle_mdeg"], actuator["phase_offset_mdeg"],
                     actuator["motion_curve"])


def _pair(values: list[int]) -> tuple[int, int]:
    return (values[0], values[1])


def _aero(aero: dict[str, Any]) -> AeroSpec:
    axes = [aero["axes"][axis] for axis in AERO_AXES]
    return AeroSpec(
        drag_area_um2=(axes[0]["drag_area_um2"], axes[1]["drag_area_um2"], axes[2]["drag_area_um2"],
                       axes[3]["drag_area_um2"], axes[4]["drag_area_um2"], axes[5]["drag_area_um2"]),
        center_of_pressure_um=tuple(_vec(a["center_of_pressure_um"]) for a in axes),
        lift_factor_milli=aero["lift_factor_milli"],
    )


def vehicle_spec(car: AssembledVehicle, vehicle_id: str, passive_split_pct: int | None = None) -> VehicleSpec:
    """A race car from an assembled loadout (baked masses; the spec applies the passive boost itself)."""
    parts = {p.slot: p.manifest for p in car.parts}
    chip = parts.get("chip")
    size = [car.aabb_max_um[k] - car.aabb_min_um[k] for k in range(3)]
    centre = (car.aabb_min_um[0] + size[0] // 2, car.aabb_min_um[1] + size[1] // 2, car.aabb_min_um[2] + size[2] // 2)
    placed_weapon = car.part("weapon")
    return VehicleSpec(
        vehicle_id=vehicle_id,
        parts=tuple(_part(p, centre) for p in car.parts),
        motor=MotorSpec(parts["motor"]["motor"]["torque_ratio_pct"], parts["motor"]["motor"]["input_mw"]),
        battery=BatterySpec(
            parts["battery"]["battery"]["configured_output_mw"], parts["battery"]["battery"]["energy_capacity_mj"]
        ),
        length_um=size[2],
        width_um=size[0],
        height_um=size[1],
        chip_slots=tuple(ChipSlot(s["skill"], s["allocation_pct"]) for s in chip["chip"]["skill_slots"]) if chip else (),
        weapon=None if placed_weapon is None else _weapon(placed_weapon, centre, passive_split_pct),
    )


def vehicle_from_loadout(loadout: dict[str, Any], resolver: Resolver, vehicle_id: str) -> VehicleSpec:
    """Assemble and convert; ``AssetRejected`` lists every loadout finding when the car is illegal."""
    findings, car = assemble(loadout, resolver)
    if car is None:
        raise AssetRejected(findings.errors)
    return vehicle_spec(car, vehicle_id, loadout.get("passiveWeightSplitPct"))
