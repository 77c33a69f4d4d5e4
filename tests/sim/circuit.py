"""The demo round built in code until the built-in GLB assets exist (the assets issue switches to them).

Track: a fixed 8-player loop (~21 m, 1.5 m wide, 6 laps so that a 60 s headless run stays in one round, asphalt with plastic walls 6 cm high and a 0.3 m
apron): a start straight that climbs 18 cm to a crest and drops, a 180° far turn, a back straight with
an 8 cm dip, a 180° home turn; three checkpoints (crest, far turn, home turn), a kill-zone pit outside
the far turn and two respawn points. Cars: the spec's three archetypes speed / heavy / control with
their published chip layouts (builtin §10), assigned to slots in turn.
"""

from __future__ import annotations

from sim_core.intmath import UNIT, cross, normalize, sub
from sim_core.track import Box, RespawnPoint, RoutePoint, TrackSpec
from sim_core.vehicle import BatterySpec, ChipSlot, MotorSpec, VehicleSpec, WeaponSpec, baked_part

MM = 1_000
WIDTH_UM = 1_500_000
_UP = (0, UNIT, 0)
# (x, y, z) in mm and an explicit heading for the flat points (None = along the neighbouring chord)
_ROUTE = (
    ((0, 0, -1000), (0, 0, -1)),
    ((0, 0, -2000), None),
    ((0, 120, -3500), None),
    ((0, 180, -4500), (0, 0, -1)),
    ((0, 0, -6000), None),
    ((0, 0, -7000), (0, 0, -1)),
    ((1500, 0, -8500), (1, 0, 0)),
    ((3000, 0, -7000), (0, 0, 1)),
    ((3000, -80, -4000), (0, 0, 1)),
    ((3000, 0, -1000), (0, 0, 1)),
    ((1500, 0, 500), (-1, 0, 0)),
    ((0, 0, -1000), (0, 0, -1)),
)


def _route_points() -> tuple[RoutePoint, ...]:
    positions = [tuple(v * MM for v in p) for p, _ in _ROUTE]
    points = []
    for i, (_, heading) in enumerate(_ROUTE):
        if heading is None:
            forward = normalize(sub(positions[i + 1], positions[i - 1]))
        else:
            forward = normalize(heading)
        right = normalize(cross(forward, _UP))
        up = normalize(cross(right, forward))
        points.append(RoutePoint(positions[i], forward, up, WIDTH_UM))  # type: ignore[arg-type]
    return tuple(points)


def _box(center_mm: tuple[int, int, int], half_mm: tuple[int, int, int]) -> Box:
    return Box(tuple(v * MM for v in center_mm), tuple(v * MM for v in half_mm))  # type: ignore[arg-type]


def demo_track() -> TrackSpec:
    return TrackSpec(
        track_id="demo:loop-circuit",
        track_type="fixed",
        route=_route_points(),
        surface_material="asphalt",
        wall_material="pc",
        wall_height_um=60_000,
        apron_um=300_000,
        lap_count=6,
        checkpoints=(
            _box((0, 280, -4500), (850, 350, 300)),
            _box((3000, 100, -7000), (850, 350, 300)),
            _box((1500, 100, 500), (300, 350, 850)),
        ),
        kill_zones=(_box((1500, -400, -10200), (2000, 300, 600)),),
        respawn_points=(
            RespawnPoint((0, 0, -2000 * MM), (0, 0, -UNIT), _UP),
            RespawnPoint((3000 * MM, -80 * MM, -4000 * MM), (0, 0, UNIT), _UP),
        ),
    )


def _car(name: str, *, masses_g: dict[str, int], body: str, roller: str, roller_slots: tuple[str, ...],
         tire_radius_um: int, roller_radius_um: int, motor: MotorSpec, battery: BatterySpec,
         chip: tuple[ChipSlot, ...], weapon: WeaponSpec, weapon_material: str) -> VehicleSpec:
    g = 1_000_000
    parts = [
        baked_part("chassis", masses_g["chassis"] * g, "abs", 9000),
        baked_part("body", masses_g["body"] * g, body, 12000),
        baked_part("motor", masses_g["motor"] * g, "steel", 2200),
        baked_part("battery", masses_g["battery"] * g, "aluminum", 3200),
        *(baked_part("tire", masses_g["tire"] * g, "rubber", 1600, slot=s, radius_um=tire_radius_um,
                     volume_mm3=masses_g["tire"] * 900) for s in ("FL", "FR", "RL", "RR")),
        *(baked_part("roller", masses_g["roller"] * g, roller, 300, slot=s, radius_um=roller_radius_um)
          for s in roller_slots),
        baked_part("chip", masses_g["chip"] * g, "pc", 400),
        baked_part("weapon", masses_g["weapon"] * g, weapon_material, 1500),
    ]
    return VehicleSpec(f"demo:{name}", tuple(parts), motor, battery, 160_000, 100_000, 60_000, chip, weapon)


def speed_car() -> VehicleSpec:
    """Light, low torque ratio (fast top speed), high-output battery, boost/brake chip, passive ram."""
    return _car("speed", masses_g={"chassis": 40, "body": 25, "motor": 18, "battery": 40, "tire": 6, "roller": 1,
                                   "chip": 3, "weapon": 15},
                body="pc", roller="abs", roller_slots=("FL", "FR", "RL", "RR"), tire_radius_um=15_500,
                roller_radius_um=5_000, motor=MotorSpec(30, 150_000), battery=BatterySpec(600_000, 1_944_000_000),
                chip=(ChipSlot("boost", 50), ChipSlot("brake", 20), ChipSlot("weapon", 30)),
                weapon=WeaponSpec("passive", 50), weapon_material="aluminum")


def heavy_car() -> VehicleSpec:
    """Heavy, high torque ratio, big battery, slam/stabilize chip, active rotor weapon."""
    return _car("heavy", masses_g={"chassis": 55, "body": 45, "motor": 24, "battery": 48, "tire": 8, "roller": 2,
                                   "chip": 3, "weapon": 30},
                body="aluminum", roller="aluminum", roller_slots=("FL", "FR", "CL", "CR", "RL", "RR"),
                tire_radius_um=16_500, roller_radius_um=6_250, motor=MotorSpec(70, 220_000),
                battery=BatterySpec(900_000, 2_268_000_000),
                chip=(ChipSlot("slam", 40), ChipSlot("stabilize", 20), ChipSlot("weapon", 40)),
                weapon=WeaponSpec("active"), weapon_material="steel")


def control_car() -> VehicleSpec:
    """Balanced: 50 % torque ratio, stabilize and both swerves, active launcher weapon."""
    return _car("control", masses_g={"chassis": 45, "body": 30, "motor": 20, "battery": 44, "tire": 7, "roller": 2,
                                     "chip": 4, "weapon": 20},
                body="pc", roller="pc", roller_slots=("FL", "FR", "RL", "RR"), tire_radius_um=16_000,
                roller_radius_um=5_500, motor=MotorSpec(50, 170_000), battery=BatterySpec(750_000, 2_106_000_000),
                chip=(ChipSlot("stabilize", 30), ChipSlot("swerve_left", 20), ChipSlot("swerve_right", 20),
                      ChipSlot("weapon", 30)),
                weapon=WeaponSpec("active"), weapon_material="aluminum")


ARCHETYPES = (speed_car, heavy_car, control_car)


def demo_vehicles(count: int) -> tuple[VehicleSpec, ...]:
    """Slot s gets archetype s mod 3 (speed, heavy, control)."""
    return tuple(ARCHETYPES[slot % 3]() for slot in range(count))
