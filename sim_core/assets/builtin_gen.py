"""The 27 built-in assets, generated procedurally and baked (builtin-assets.md §5, spec/assets.md §10).

Design targets from the spec: the weakest speed build drives at ≈ 125.4 W and weighs ≈ 215 g with 12
parts, and its heaviest/lightest part ratio (body/roller) is ≈ 249:1, under the 300 limit. Dimensions
follow the visual guide (96 mm wheelbase, Ø32 × 12 tires, Ø24 × 30 motor cans, 60 × 30 mm batteries,
...). Balance targets of this project (``benchmarks/builtin_balance.py`` measures them): no part breaks
from normal driving in a 3-lap race on any built-in track, and one lap of track-02 with the built-in bot
takes every archetype ≤ 40 s, speed fastest, control next, heavy last. Everything is deterministic: same
code, same bytes (``scripts/gen_builtins.py --check`` verifies it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from sim_core.assets.bake import bake
from sim_core.assets.glb_build import GlbBuilder, frame_matrix, translation_matrix
from sim_core.assets.shapes import CIRCLE16, Shape, box, cylinder_x, ribbon, shell

MM = 0.001
ARCHETYPES = ("speed", "heavy", "control")

# chassis-side mounts in mm (x, y, z); vehicle front = −Z, up = +Y, origin = bottom centre of the plate
CANONICAL_MOUNTS = {
    "Mount_Body_F": (0, 6, -52), "Mount_Body_RL": (-25, 6, 52), "Mount_Body_RC": (0, 6, 52), "Mount_Body_RR": (25, 6, 52),
    "Mount_Battery": (0, 6, 10),
    "Mount_Tire_FL": (-41, 3, -48), "Mount_Tire_FR": (41, 3, -48), "Mount_Tire_RL": (-41, 3, 48), "Mount_Tire_RR": (41, 3, 48),
}
CUSTOM_MOUNTS = {
    "Mount_Chip": (0, 6, -22), "Mount_Weapon": (0, 3, -62),
    "Mount_Roller_FL": (-44, 3, -60), "Mount_Roller_FR": (44, 3, -60), "Mount_Roller_CL": (-44, 3, 0),
    "Mount_Roller_CR": (44, 3, 0), "Mount_Roller_RL": (-44, 3, 60), "Mount_Roller_RR": (44, 3, 60),
}
MOTOR_MOUNT = {"speed": (0, 6, 36), "heavy": (0, 6, -34), "control": (0, 6, 32)}  # rear / front / centre-rear


def _mm(*v: float) -> tuple[float, ...]:
    return tuple(x * MM for x in v)


def _empty(b: GlbBuilder, name: str, at: tuple[float, float, float], parent: int | None = None) -> int:
    return b.node(name, matrix=translation_matrix(*_mm(*at)), parent=parent)


def _solid(b: GlbBuilder, name: str, shape: Shape, extras: dict[str, Any] | None = None, parent: int | None = None) -> int:
    return b.node(name, mesh=b.mesh(*shape), extras=extras, parent=parent)


def _box_mm(lo: tuple[float, float, float], hi: tuple[float, float, float]) -> Shape:
    return box(_mm(*lo), _mm(*hi))  # type: ignore[arg-type]


def _part(kind: str, material: str, **fields: Any) -> dict[str, Any]:
    return {"open4wd_version": 1, "type": kind, "material": material, **fields}


# ---------------------------------------------------------------- parts

CHASSIS_THICKNESS = {"speed": 8.0, "heavy": 4.0, "control": 5.0}  # plate mm; speed 8 keeps the build ≈ 215 g (lighter battery)


def chassis(arch: str) -> bytes:
    """The unbaked chassis GLB of archetype ``arch``: a plate with every mount of the template (heavy adds
    front ballast; the motor mount moves per archetype)."""
    b = GlbBuilder()
    thickness = CHASSIS_THICKNESS[arch]
    _solid(b, "Chassis_Plate", _box_mm((-35, 0, -60), (35, thickness, 60)))
    extras = {
        "speed": _part("chassis", "abs"),
        "heavy": _part("chassis", "aluminum", materials=[{"mesh_node": "Chassis_Ballast", "material": "steel"}]),
        "control": _part("chassis", "pc"),
    }[arch]
    if arch == "heavy":  # front ballast: heavy chassis carries its mass forward
        _solid(b, "Chassis_Ballast", _box_mm((-20, 4, -58), (20, 8, -48)))
    for name, at in {**CANONICAL_MOUNTS, **CUSTOM_MOUNTS, "Mount_Motor": MOTOR_MOUNT[arch]}.items():
        _empty(b, name, at)
    return b.build(extras)


def body(arch: str) -> bytes:
    """The unbaked body GLB of archetype ``arch``: a hollow shell on the four body mounts."""
    b = GlbBuilder()
    height, half_w, half_l, wall, material, lift = {  # lift: the authored lift_factor (> 0 downforce)
        "speed": (30.0, 38.0, 62.0, 2.46, "abs", 0),
        "heavy": (36.0, 40.0, 64.0, 3.5, "pc", 0),
        "control": (32.0, 38.0, 62.0, 2.8, "abs", 0.2),
    }[arch]
    _solid(b, "Body_Shell", shell(_mm(-half_w, 6, -half_l), _mm(half_w, 6 + height, half_l), wall * MM))  # type: ignore[arg-type]
    for name in ("Mount_Body_F", "Mount_Body_RL", "Mount_Body_RC", "Mount_Body_RR"):
        _empty(b, name, CANONICAL_MOUNTS[name])
    return b.build(_part("body", material, **({"lift_factor": lift} if lift else {})))


def tire(arch: str) -> bytes:
    """The unbaked tire GLB of archetype ``arch``: a Ø32 mm ring (rubber, or silicone for control)."""
    b = GlbBuilder()
    width, hole, material = {
        "speed": (12.0, 11.0, "rubber"),
        "heavy": (14.0, 10.0, "rubber"),
        "control": (12.0, 11.0, "silicone"),
    }[arch]
    _solid(b, "Tire_Ring", cylinder_x((0.0, 0.0, 0.0), 16 * MM, width * MM, hole * MM))
    _empty(b, "Mount_Tire", (0, 0, 0))
    return b.build(_part("tire", material))


def roller(arch: str) -> bytes:
    """The unbaked roller GLB of archetype ``arch``: a small ring whose material sets the wall response."""
    b = GlbBuilder()
    radius, width, hole, material = {
        "speed": (5.0, 8.0, 3.5, "pe"),
        "heavy": (6.25, 10.0, 4.0, "abs"),
        "control": (5.5, 9.0, 3.75, "pc"),
    }[arch]
    _solid(b, "Roller_Ring", cylinder_x((0.0, 0.0, 0.0), radius * MM, width * MM, hole * MM))
    _empty(b, "Mount_Roller", (0, 0, 0))
    return b.build(_part("roller", material))


# Drive and heat (spec/simcore.md §4.2–4.3, §7.1): a motor draws volume × 80 W/cm³, top speed is
# P·(100 − torque ratio)/100 · 0.015 m/s per W, and drive heats the motor with 0.2·P and the battery with
# 0.15·P, shed through H = area · 80 W/(m²·°C) · (0.25 + 0.75·min(k, 50)/50). A part runs at
# T_air + heat/H in the long run, so what decides whether it survives a race is its area per watt.
# Motors are therefore thin copper cans of the visual guide's Ø24 × 30 mm (control Ø26): the volume (the
# power) sits in a 0.7–1.8 mm wall, and speed keeps its ≈ 125.4 W (1.567 cm³, as before).
# Top speeds: speed 1.50 m/s, control 1.46, heavy 1.35 (heavy pays its torque and mass).
MOTOR = {  # (outer radius, width, bore radius, material, torque ratio) in mm
    "speed": (12.0, 30.0, 11.2665, "copper", 20), "heavy": (12.0, 30.0, 10.157, "copper", 70),
    "control": (13.0, 30.0, 11.936, "copper", 50),
}
# Batteries, 60 × 30 mm in plan. Speed: seven 1 mm ABS cells with 0.6 mm air gaps — ABS keeps its 80 °C
# limit (boost waste heat, 0.02 of a boost's cost, can still cook it), the gaps give it the area to shed
# the drive's 0.15·P (≈ 55 °C in the long run instead of ≈ 180 °C for a solid ABS block). Heavy and
# control: magnesium slabs (350 °C), their motors draw 300 W / 195 W.
BATTERY = {  # (cells, cell height mm, air gap mm, material, configured output W)
    "speed": (7, 1.0, 0.6, "abs", 150.0),
    "heavy": (1, 14.0, 0.0, "magnesium", 312.0),
    "control": (1, 9.0, 0.0, "magnesium", 203.0),
}


def motor(arch: str) -> bytes:
    """A can about X (a ring with a bore); speed 1.5672 cm³ → auto_input_mw 125 379 (the spec's ≈ 125.4 W)."""
    b = GlbBuilder()
    radius, width, bore, material, torque = MOTOR[arch]
    _solid(b, "Motor_Can", cylinder_x((0.0, 0.0, 0.0), radius * MM, width * MM, bore * MM))
    _empty(b, "Mount_Motor", (0, -radius, 0))
    return b.build(_part("motor", material, torque_ratio=torque))


def battery(arch: str) -> bytes:
    """The unbaked battery GLB of archetype ``arch`` (``BATTERY``: a cell stack with air gaps, or a slab)."""
    b = GlbBuilder()
    cells, height, gap, material, output = BATTERY[arch]
    if cells == 1:
        _solid(b, "Battery_Pack", _box_mm((-15, 0, -30), (15, height, 30)))
    for i in range(cells if cells > 1 else 0):  # a stack of flat cells with air gaps between them
        bottom = i * (height + gap)
        _solid(b, f"Battery_Cell_{i + 1}", _box_mm((-15, bottom, -30), (15, bottom + height, 30)))
    _empty(b, "Mount_Battery", (0, 0, 0))
    return b.build(_part("battery", material, configured_output_w=output))


CHIP_SLOTS = {
    "speed": [
        {"skill": "boost", "allocation_pct": 50},
        {"skill": "brake", "allocation_pct": 20},
        {"skill": "weapon", "allocation_pct": 30},
    ],
    "heavy": [
        {"skill": "slam", "allocation_pct": 40},
        {"skill": "stabilize", "allocation_pct": 20},
        {"skill": "weapon", "allocation_pct": 40},
    ],
    "control": [
        {"skill": "stabilize", "allocation_pct": 30},
        {"skill": "swerve_left", "allocation_pct": 20},
        {"skill": "swerve_right", "allocation_pct": 20},
        {"skill": "weapon", "allocation_pct": 30},
    ],
}


def chip(arch: str) -> bytes:
    """The unbaked chip GLB of archetype ``arch`` with its skill slots (``CHIP_SLOTS``)."""
    b = GlbBuilder()
    height, material = {"speed": (6.0, "glass_fiber"), "heavy": (6.5, "glass_fiber"), "control": (11.0, "pc")}[arch]
    _solid(b, "Chip_Board", _box_mm((-15, 0, -10), (15, height, 10)))
    _empty(b, "Mount_Chip", (0, 0, 0))
    return b.build(_part("chip", material, skill_slots=CHIP_SLOTS[arch]))


_FORWARD_AXIS = ((-1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, -1.0))  # an empty whose +Z points to vehicle front


def weapon(arch: str) -> bytes:
    """The unbaked weapon GLB of archetype ``arch``: speed a passive ram, heavy an active magnet (its field
    origin the steel core), control an active launcher with three darts."""
    b = GlbBuilder()
    if arch == "speed":  # passive ram
        _solid(b, "Ram_Head", _box_mm((-11, 0, -45), (11, 14, 0)))
        _empty(b, "Mount_Weapon", (0, 0, 0))
        return b.build(_part("weapon", "abs", passive=True))
    if arch == "heavy":  # active magnet: a steel core on an aluminium base, its north pole to the front
        _solid(b, "Magnet_Base", _box_mm((-10, 0, -20), (10, 16, 0)))
        _solid(b, "Magnet_Core", _box_mm((-20, 16, -30), (20, 20, -22)))
        b.node("Axis", matrix=frame_matrix(_mm(0, 8, -20), *_FORWARD_AXIS))  # type: ignore[arg-type]
        _empty(b, "Mount_Weapon", (0, 0, 0))
        extras = _part(
            "weapon",
            "aluminum",
            passive=False,
            weapon_mechanism="magnet",
            weapon_main_mesh_node="Magnet_Core",
            materials=[{"mesh_node": "Magnet_Core", "material": "steel"}],
        )
        return b.build(extras)
    launcher = _solid(b, "Dart_Launcher", _box_mm((-10, 0, -30), (10, 12, 0)))  # active launch, three darts
    for i, x in enumerate((-6.0, 0.0, 6.0), start=1):
        _solid(b, f"Dart_{i}", _box_mm((x - 1.5, 12, -28), (x + 1.5, 15, -16)), extras={"material": "steel"}, parent=launcher)
    b.node("Axis", matrix=frame_matrix(_mm(0, 13.5, -30), *_FORWARD_AXIS))  # type: ignore[arg-type]
    _empty(b, "Mount_Weapon", (0, 0, 0))
    return b.build(_part("weapon", "abs", passive=False, weapon_mechanism="launch", weapon_main_mesh_node="Dart_Launcher"))


PART_BUILDERS: dict[str, Callable[[str], bytes]] = {
    "chassis": chassis,
    "body": body,
    "tire": tire,
    "motor": motor,
    "battery": battery,
    "roller": roller,
    "chip": chip,
    "weapon": weapon,
}


# ---------------------------------------------------------------- tracks

Vec = tuple[float, float, float]


def _unit(v: Vec) -> Vec:
    n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    return (v[0] / n, v[1] / n, v[2] / n)


def _cross(a: Vec, b: Vec) -> Vec:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _route_frame(position: Vec, forward: Vec, scale: Vec = (1.0, 1.0, 1.0)) -> list[list[float]]:
    """An empty at ``position`` whose −Z is ``forward`` and +Y the surface normal."""
    f = _unit(forward)
    z = (-f[0], -f[1], -f[2])
    x = _unit(_cross((0.0, 1.0, 0.0), z))
    y = _cross(z, x)
    return frame_matrix(position, x, y, z, scale)


def _add_route(b: GlbBuilder, points: list[tuple[Vec, Vec]], width: float) -> list[dict[str, Any]]:
    route = []
    for i, (p, f) in enumerate(points, start=1):
        b.node(f"RoutePoint_{i}", matrix=_route_frame(p, f))
        route.append({"name": f"RoutePoint_{i}", "width_m": width})
    return route


def _box_empty(b: GlbBuilder, name: str, centre: Vec, forward: Vec, size: Vec) -> None:
    b.node(name, matrix=_route_frame(centre, forward, size))


def track_open() -> bytes:
    """track-01: open practice field on snow; two route points, no corridor."""
    b = GlbBuilder()
    _solid(b, "Snowfield", box((-30.0, -6.0, -30.0), (30.0, 0.0, 30.0)))
    route = _add_route(b, [((0.0, 0.0, 20.0), (0.0, 0.0, -1.0)), ((0.0, 0.0, -20.0), (0.0, 0.0, -1.0))], 4.0)
    return b.build({
        "open4wd_version": 1, "type": "track", "material": "snow",
        "track": {"type": "open", "route": route},
        "weather": {"type": "snow", "temperature": -5},
        "physics": {"gravity_direction": [0, -1, 0], "gravity_strength_m_s2": 9.81},
    })


def _stadium(half_straight: float, radius: float) -> list[tuple[Vec, Vec]]:
    """Centreline samples (position, forward) of a stadium loop, counter-clockwise in the x-z plane:
    the top straight (z = +radius) heading −X, the −X semicircle, the bottom straight heading +X, the
    +X semicircle. Arc samples every 22.5°; forward is the tangent (−sin θ, cos θ)."""
    out: list[tuple[Vec, Vec]] = []
    for x in (half_straight * 0.5, 0.0, -half_straight * 0.5, -half_straight):
        out.append(((x, 0.0, radius), (-1.0, 0.0, 0.0)))
    for c, s in CIRCLE16[5:12]:  # θ = 112.5° … 247.5° around (−half_straight, 0)
        out.append(((-half_straight + radius * c, 0.0, radius * s), (-s, 0.0, c)))
    for x in (-half_straight, -half_straight * 0.5, 0.0, half_straight * 0.5, half_straight):
        out.append(((x, 0.0, -radius), (1.0, 0.0, 0.0)))
    for c, s in CIRCLE16[13:] + CIRCLE16[:4]:  # θ = −67.5° … 67.5° around (+half_straight, 0)
        out.append(((half_straight + radius * c, 0.0, radius * s), (-s, 0.0, c)))
    out.append(((half_straight, 0.0, radius), (-1.0, 0.0, 0.0)))
    return out


# track-02 stadium: half straight length, turn radius, road width (m). 14 m straights and 3 m turns: a
# 46.85 m lap, 60 % straight, that the slowest built-in (heavy, 1.35 m/s) drives in ≈ 35 s.
LOOP = (7.0, 3.0, 2.0)


def track_loop() -> bytes:
    """track-02: fixed loop circuit on asphalt for 8 players, 6 checkpoints, kill zones, respawn points."""
    b = GlbBuilder()
    straight, radius, width = LOOP
    centre = _stadium(straight, radius)
    half = width / 2.0 + 0.1
    left = [(p[0] - f[2] * half, 0.0, p[2] + f[0] * half) for p, f in centre]
    right = [(p[0] + f[2] * half, 0.0, p[2] - f[0] * half) for p, f in centre]
    _solid(b, "Circuit_Road", ribbon(left, right, closed=True))
    _solid(b, "Infield_Ground", box((-30.0, -6.0, -20.0), (30.0, -0.02, 20.0)))
    stand = min(10.0, straight)
    _solid(b, "Grandstand", box((-stand, 0.0, radius + 6.0), (stand, 2.0, radius + 10.0)))
    start, start_forward = centre[0][0], centre[0][1]
    route_points = [(start, start_forward)] + centre[1:] + [((start[0] + 0.6, 0.0, start[2]), start_forward)]
    route = _add_route(b, route_points, width)
    checkpoints = []
    for n, k in enumerate((2, 6, 10, 14, 18, 21), start=1):
        p, f = centre[k]
        _box_empty(b, f"Checkpoint_{n}", (p[0], 0.2, p[2]), f, (width + 1.0, 0.5, 1.0))
        checkpoints.append(f"Checkpoint_{n}")
    _box_empty(b, "KillZone_1", (0.0, -4.0, 0.0), (0.0, 0.0, -1.0), (2.0 * straight - 4.0, 2.0, max(2.0 * radius - 10.0, 2.0)))
    _box_empty(b, "KillZone_2", (0.0, -4.0, radius + 3.5), (0.0, 0.0, -1.0), (2.0 * (straight + radius), 2.0, 2.0))
    b.node("RespawnPoint_1", matrix=_route_frame((straight / 2.0, 0.05, radius), (-1.0, 0.0, 0.0)))
    b.node("RespawnPoint_2", matrix=_route_frame((-straight / 2.0, 0.05, -radius), (1.0, 0.0, 0.0)))
    return b.build({
        "open4wd_version": 1, "type": "track", "material": "asphalt",
        "materials": [{"mesh_node": "Infield_Ground", "material": "grass"}, {"mesh_node": "Grandstand", "material": "concrete"}],
        "track": {"type": "fixed", "route": route, "checkpoints": checkpoints},
        "weather": {"type": "normal", "temperature": 20, "wind_speed_mps": 0},
        "physics": {"gravity_strength_m_s2": 9.81},
    })


def _profile() -> list[tuple[float, float]]:
    """(distance along −Z, height) of track-03: flat, a 7.38 % climb, a plateau, a kicker, a gap, descent."""
    return [
        (0.0, 0.0),
        (8.0, 0.0),
        (18.0, 0.738),
        (24.0, 0.738),
        (27.0, 1.188),
        (30.0, 1.188),
        (36.0, 0.8),
        (44.0, 0.8),
        (52.0, 0.0),
        (60.0, 0.0),
    ]


def track_linear() -> bytes:
    """track-03: fixed linear course on dirt in the rain, with slopes and a jump over a gap, an oil slick and
    a magnet plate."""
    b = GlbBuilder()
    profile = _profile()
    gap = (27.0, 30.0)  # no surface between the kicker's lip and the landing
    half = 0.9

    def edge(sign: float, d: float, h: float) -> Vec:
        return (sign * half, h, -d)

    for name, section in (
        ("Course_Start", [p for p in profile if p[0] <= gap[0]]),
        ("Course_Finish", [p for p in profile if p[0] >= gap[1]]),
    ):
        _solid(b, name, ribbon([edge(-1.0, d, h) for d, h in section], [edge(1.0, d, h) for d, h in section]))
    _solid(b, "Valley_Floor", box((-15.0, -5.0, -64.0), (15.0, -1.0, 4.0)))
    _solid(b, "Marshal_Tower", box((8.0, -1.0, -40.0), (10.0, 3.0, -36.0)))
    # an oil slick on the first straight (a sensor, 1 mm over the dirt) and a 2 N magnet plate facing up
    # 1 cm under the last straight: they pull the heavy car's ballast and the control car's darts down
    _solid(b, "Oil_Slick", ribbon([(-0.5, 0.001, -3.0), (-0.5, 0.001, -5.0)], [(0.5, 0.001, -3.0), (0.5, 0.001, -5.0)]),
           extras={"material": "oil"})
    _solid(b, "Magnet_Plate", ribbon([(-0.8, -0.01, -54.0), (-0.8, -0.01, -57.0)], [(0.8, -0.01, -54.0), (0.8, -0.01, -57.0)]),
           extras={"material": "magnet_floor", "magnet_source_strength_n": 2})
    points = []
    for i, (d, h) in enumerate(profile):
        nd, nh = profile[min(i + 1, len(profile) - 1)]
        pd, ph = profile[max(i - 1, 0)]
        points.append(((0.0, h, -d), _unit((0.0, nh - ph, -(nd - pd)))))
    route = _add_route(b, points, 1.6)
    checkpoints = []
    for n, (d, h) in enumerate(((13.0, 0.369), (33.0, 0.994), (48.0, 0.4)), start=1):
        _box_empty(b, f"Checkpoint_{n}", (0.0, h + 0.2, -d), (0.0, 0.0, -1.0), (2.4, 0.4, 1.0))
        checkpoints.append(f"Checkpoint_{n}")
    _box_empty(b, "KillZone_1", (0.0, -0.5, -28.5), (0.0, 0.0, -1.0), (4.0, 0.8, 3.0))
    b.node("RespawnPoint_1", matrix=_route_frame((0.0, 0.85, -32.0), (0.0, 0.0, -1.0)))
    return b.build({
        "open4wd_version": 1, "type": "track", "material": "dirt",
        "materials": [{"mesh_node": "Valley_Floor", "material": "mud"}, {"mesh_node": "Marshal_Tower", "material": "wood"}],
        "track": {"type": "fixed", "route": route, "checkpoints": checkpoints},
        "weather": {"type": "rain", "temperature": 15, "patch": {"spawn_rate_per_min": 5, "lifetime_ms": 45000}},
        "physics": {"gravity_direction": [0, -1, 0], "gravity_strength_m_s2": 9.81},
    })


TRACK_BUILDERS: dict[str, Callable[[], bytes]] = {"track-01": track_open, "track-02": track_loop, "track-03": track_linear}


def generate_sources() -> dict[str, bytes]:
    """Unbaked GLBs by file stem (``chassis-01`` … ``track-03``)."""
    out = {}
    for kind, build in PART_BUILDERS.items():
        for n, arch in enumerate(ARCHETYPES, start=1):
            out[f"{kind}-{n:02d}"] = build(arch)
    for stem, build_track in TRACK_BUILDERS.items():
        out[stem] = build_track()
    return out


def generate() -> dict[str, bytes]:
    """The 27 baked built-ins by file stem."""
    return {stem: bake(data) for stem, data in generate_sources().items()}
