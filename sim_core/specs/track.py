"""``TrackSpec``: the race-time description of a track, as exact integers.

The asset pipeline converts a baked track manifest into a ``TrackSpec``; ``World.demo`` builds one in
code. Everything is an integer (µm, µm/s², unit vectors ×1e6, frames, milli-°C) so that no float from
a GLB reader can reach the consensus path. Axes follow the spec: up = +Y, forward = −Z, right = +X.
Validation raises ``SimError`` with stable ``track-*`` codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NoReturn, TypeGuard, get_args

from sim_core.constants import START_GRID_CELL_UM
from sim_core.errors import SimError
from sim_core.intmath import UNIT, Vec3, distance_sq
from sim_core.specs.materials import material
from sim_core.specs.conveyors import CONVEYORS_MAX, ConveyorSpec
from sim_core.specs.obstacles import OBSTACLES_MAX, ObstacleSpec, check_destructibles
from sim_core.specs.fluids import FLUID_ZONES_MAX, FluidZone
from sim_core.specs.items import check_all, is_unit_e6
from sim_core.specs.magnets import MagnetSource
from sim_core.specs.weather import NORMAL_WEATHER, WeatherSpec

TrackType = Literal["open", "fixed"]
LapMode = Literal["linear", "loop"]
TRACK_TYPES: tuple[TrackType, ...] = get_args(TrackType)
LAP_MODES: tuple[LapMode, ...] = get_args(LapMode)
"""Track types and lap modes are plain strings typed as ``Literal`` (not enums): they are fields of
``TrackSpec``, whose ``repr`` is hashed into the state's topology digest."""
LOOP_DISTANCE_UM = 1_000_000
"""LAP_MODE_LOOP_DISTANCE_M: RP1 and RPn closer than 1 m (and ≥ 3 points) make a loop."""
MIN_SPACING_UM = 100_000
"""ROUTEPOINT_MIN_SPACING_M: adjacent route points at least 0.1 m apart."""
RACE_DURATION_MIN_S, RACE_DURATION_DEFAULT_S, RACE_DURATION_MAX_S = 60, 600, 1800
LAP_COUNT_MIN, LAP_COUNT_DEFAULT, LAP_COUNT_MAX = 1, 3, 10
GRAVITY_MIN_UM_S2, GRAVITY_DEFAULT_UM_S2, GRAVITY_MAX_UM_S2 = 1_600_000, 9_810_000, 25_000_000
MAX_CHECKPOINTS = 64
MAX_KILL_ZONES = 64
MAX_MAGNET_SOURCES = 256
"""One per magnet_floor solid region, of which a track has at most 256 (spec/assets.md §5.7)."""


def _fail(code: str, message: str) -> NoReturn:
    raise SimError(code, message)


def _is_vec3(value: object) -> TypeGuard[Vec3]:
    return isinstance(value, tuple) and len(value) == 3 and all(type(c) is int for c in value)


def check_unit_vector(value: object, what: str) -> None:
    """A ×1e6 integer unit vector: three ints whose length is 1e6 within rounding tolerance; ``SimError``
    (``track-invalid-vector``, naming ``what``) otherwise."""
    if not _is_vec3(value):
        _fail("track-invalid-vector", f"{what} must be a tuple of three ints (×1e6 unit vector)")
    if not is_unit_e6(value):  # |v| within UNIT_TOLERANCE_E6 of 1e6 (rounding of a quantised float vector)
        _fail("track-invalid-vector", f"{what} {value} is not a unit vector scaled by 1e6")


def _check_position(value: object, what: str) -> None:
    if not _is_vec3(value):
        _fail("track-invalid-vector", f"{what} must be a tuple of three ints (µm)")


@dataclass(frozen=True, slots=True)
class RoutePoint:
    """One authored route point: position (µm), forward and up (×1e6 unit vectors), full width (µm).

    ``forward`` is the empty's −Z in the surface tangent plane, ``up`` the authored surface normal.
    """

    position_um: Vec3
    forward_e6: Vec3
    up_e6: Vec3
    width_um: int

    def validate(self, what: str) -> None:
        """``SimError`` (``track-invalid-vector``, ``track-invalid-route``) unless the point has integer
        vectors, unit forward and up that are perpendicular, and a positive width; ``what`` names it."""
        _check_position(self.position_um, f"{what}.position_um")
        check_unit_vector(self.forward_e6, f"{what}.forward_e6")
        check_unit_vector(self.up_e6, f"{what}.up_e6")
        dot = sum(f * u for f, u in zip(self.forward_e6, self.up_e6, strict=True))
        if abs(dot) > 50_000 * UNIT:  # more than ~3° off perpendicular
            _fail("track-invalid-route", f"{what}: forward must lie in the surface (perpendicular to up)")
        if type(self.width_um) is not int or self.width_um <= 0:
            _fail("track-invalid-route", f"{what}.width_um must be a positive int")


@dataclass(frozen=True, slots=True)
class Box:
    """An axis-aligned box (checkpoint or kill zone): centre and half extents in µm."""

    center_um: Vec3
    half_extents_um: Vec3

    def validate(self, what: str) -> None:
        """``SimError`` (``track-invalid-vector``, ``track-invalid-box``) unless centre and half extents are
        integer vectors and every half extent is positive."""
        _check_position(self.center_um, f"{what}.center_um")
        _check_position(self.half_extents_um, f"{what}.half_extents_um")
        if min(self.half_extents_um) <= 0:
            _fail("track-invalid-box", f"{what}: half extents must be > 0")

    @property
    def min_um(self) -> Vec3:
        """The box's minimum corner (µm)."""
        c, h = self.center_um, self.half_extents_um
        return (c[0] - h[0], c[1] - h[1], c[2] - h[2])

    @property
    def max_um(self) -> Vec3:
        """The box's maximum corner (µm)."""
        c, h = self.center_um, self.half_extents_um
        return (c[0] + h[0], c[1] + h[1], c[2] + h[2])


@dataclass(frozen=True, slots=True)
class RespawnPoint:
    """A respawn frame: position (µm), heading = −Z (``forward_e6``) and ``up_e6`` (×1e6)."""

    position_um: Vec3
    forward_e6: Vec3
    up_e6: Vec3

    def validate(self, what: str) -> None:
        """``SimError`` (``track-invalid-vector``) unless the position is an integer vector and forward and up
        are unit vectors."""
        _check_position(self.position_um, f"{what}.position_um")
        check_unit_vector(self.forward_e6, f"{what}.forward_e6")
        check_unit_vector(self.up_e6, f"{what}.up_e6")


@dataclass(frozen=True, slots=True)
class TrackSpec:
    """Everything the step needs about a track.

    - ``track_type``: ``open`` (exactly 2 route points, no corridor) or ``fixed`` (≥ 2, corridor of ±width/2
      whose edges are walls of ``wall_height_um``; the ribbon surface extends ``apron_um`` beyond them).
    - ``lap_mode``: ``linear`` or ``loop``; ``None`` = auto (loop iff ≥ 3 points and |RP1−RPn| < 1 m).
    - ``lap_count``: laps on loop tracks (room setting, 1…10); ignored on linear tracks.
    - ``checkpoints``: ordered boxes; ``kill_zones``: boxes; ``respawn_points``: frames (none → RP1).
    - ``gravity_dir_e6`` (×1e6 unit vector) and ``gravity_um_s2`` (1.6…25 m/s² as µm/s²).
    - ``surface_material`` / ``wall_material``: material ids (``wall_material`` None → surface material).
    - ``time_limit_s``: round time limit (60…1800 s, default 600).
    - ``air_temperature_mc``: weather temperature in milli-°C (sole T_air).
    - ``aabb_min_um`` / ``aabb_max_um``: track AABB (fall-out bound); None → derived from the route.
    - ``weather``: the wind and the rain or snow patches (``WeatherSpec``; default: normal, no wind).
    - ``magnets``: the static magnet sources (``MagnetSource``, at most 256; default: none).
    - ``fluids``: the fluid zones (``FluidZone``, at most 256; default: none).
    - ``conveyors``: the conveyor belts (``ConveyorSpec``, at most 100; default: none).
    - ``obstacles``: the solid entities, fixed or moving, some destructible (``ObstacleSpec``, at most
      100, at most 50 destructible; default: none).
    """

    track_id: str
    track_type: TrackType
    route: tuple[RoutePoint, ...]
    surface_material: str
    lap_mode: LapMode | None = None
    lap_count: int = LAP_COUNT_DEFAULT
    checkpoints: tuple[Box, ...] = ()
    kill_zones: tuple[Box, ...] = ()
    respawn_points: tuple[RespawnPoint, ...] = ()
    gravity_dir_e6: Vec3 = (0, -UNIT, 0)
    gravity_um_s2: int = GRAVITY_DEFAULT_UM_S2
    wall_material: str | None = None
    wall_height_um: int = 60_000
    apron_um: int = 0
    time_limit_s: int = RACE_DURATION_DEFAULT_S
    air_temperature_mc: int = 20_000
    aabb_min_um: Vec3 | None = None
    aabb_max_um: Vec3 | None = None
    weather: WeatherSpec = NORMAL_WEATHER
    magnets: tuple[MagnetSource, ...] = ()
    fluids: tuple[FluidZone, ...] = ()
    conveyors: tuple[ConveyorSpec, ...] = ()
    obstacles: tuple[ObstacleSpec, ...] = ()

    def __post_init__(self) -> None:
        self.validate()

    @property
    def effective_lap_mode(self) -> LapMode:
        """The declared lap mode, or the spec's automatic rule when none is declared."""
        if self.lap_mode is not None:
            return self.lap_mode
        first, last = self.route[0].position_um, self.route[-1].position_um
        gap_sq = distance_sq(first, last)
        return "loop" if len(self.route) >= 3 and gap_sq < LOOP_DISTANCE_UM * LOOP_DISTANCE_UM else "linear"

    @property
    def player_capacity(self) -> int:
        """auto_player_max = min(8, floor(RP1.width / 0.18 m))."""
        return min(8, self.route[0].width_um // START_GRID_CELL_UM)

    @property
    def time_limit_frames(self) -> int:
        """The round's time limit in frames (60 per second)."""
        return self.time_limit_s * 60

    @property
    def laps_to_finish(self) -> int:
        """Laps that finish the round: ``lap_count`` on a loop, 1 on a linear track."""
        return self.lap_count if self.effective_lap_mode == "loop" else 1

    def validate(self) -> None:
        """Every rule a track must satisfy before a race; raises ``SimError`` on the first failure."""
        if not isinstance(self.track_id, str) or not self.track_id:
            _fail("track-invalid-id", "track_id must be a non-empty string")
        if self.track_type not in TRACK_TYPES:
            _fail("track-invalid-type", f"track_type must be one of {', '.join(TRACK_TYPES)}")
        if not isinstance(self.route, tuple) or len(self.route) < 2:
            _fail("track-invalid-route", "a route needs at least 2 route points")
        if self.track_type == "open" and len(self.route) != 2:
            _fail("track-invalid-route", "an open track has exactly 2 route points")
        for i, point in enumerate(self.route):
            if not isinstance(point, RoutePoint):
                _fail("track-invalid-route", f"route[{i}] must be a RoutePoint")
            point.validate(f"route[{i}]")
        self._check_spacing()
        self._check_lap_mode()
        if type(self.lap_count) is not int or not LAP_COUNT_MIN <= self.lap_count <= LAP_COUNT_MAX:
            _fail("track-invalid-lap-count", f"lap_count must be an int in {LAP_COUNT_MIN}..{LAP_COUNT_MAX}")
        self._check_boxes()
        check_unit_vector(self.gravity_dir_e6, "gravity_dir_e6")
        if type(self.gravity_um_s2) is not int or not GRAVITY_MIN_UM_S2 <= self.gravity_um_s2 <= GRAVITY_MAX_UM_S2:
            _fail("track-invalid-gravity", "gravity_um_s2 must be an int in 1.6..25 m/s² (µm/s²)")
        for mid in (self.surface_material, self.wall_material or self.surface_material):
            if not material(mid).usable_on_track():
                _fail("track-invalid-material", f"material {mid!r} may not be used on a track")
        for name in ("wall_height_um", "apron_um"):
            if type(getattr(self, name)) is not int or getattr(self, name) < 0:
                _fail("track-invalid-geometry", f"{name} must be an int ≥ 0")
        if type(self.time_limit_s) is not int or not RACE_DURATION_MIN_S <= self.time_limit_s <= RACE_DURATION_MAX_S:
            _fail("track-invalid-time-limit", f"time_limit_s must be an int in {RACE_DURATION_MIN_S}..{RACE_DURATION_MAX_S}")
        if type(self.air_temperature_mc) is not int or not -30_000 <= self.air_temperature_mc <= 40_000:
            _fail("track-invalid-temperature", "air_temperature_mc must be an int in -30 °C..40 °C (milli-°C)")
        if (self.aabb_min_um is None) != (self.aabb_max_um is None):
            _fail("track-invalid-aabb", "give both aabb_min_um and aabb_max_um or neither")
        if self.aabb_min_um is not None:
            _check_position(self.aabb_min_um, "aabb_min_um")
            _check_position(self.aabb_max_um, "aabb_max_um")
            if any(lo >= hi for lo, hi in zip(self.aabb_min_um, self.aabb_max_um, strict=True)):  # type: ignore[arg-type]
                _fail("track-invalid-aabb", "aabb_min_um must be below aabb_max_um on every axis")
        if not isinstance(self.weather, WeatherSpec):
            _fail("track-invalid-weather", "weather must be a WeatherSpec")
        check_all(self.magnets, MagnetSource, MAX_MAGNET_SOURCES, "track-invalid-magnet", "magnets")
        check_all(self.fluids, FluidZone, FLUID_ZONES_MAX, "track-invalid-fluid", "fluids")
        check_all(self.conveyors, ConveyorSpec, CONVEYORS_MAX, "track-invalid-conveyor", "conveyors")
        check_all(self.obstacles, ObstacleSpec, OBSTACLES_MAX, "track-invalid-obstacle", "obstacles")
        check_destructibles(self.obstacles)
        if self.player_capacity < 2:
            _fail("track-start-too-narrow", "RP1 must be at least 0.36 m wide (2 start slots of 0.18 m)")

    def _check_spacing(self) -> None:
        points = self.route
        for i in range(len(points) - 1):
            a, b = points[i].position_um, points[i + 1].position_um
            if distance_sq(a, b) < MIN_SPACING_UM * MIN_SPACING_UM:
                _fail("track-invalid-route", f"route points {i} and {i + 1} are closer than 0.1 m")

    def _check_lap_mode(self) -> None:
        if self.lap_mode is not None and self.lap_mode not in LAP_MODES:
            _fail("track-invalid-lap-mode", f"lap_mode must be one of {', '.join(LAP_MODES)} or None")
        if self.track_type == "open" and self.effective_lap_mode != "linear":
            _fail("track-invalid-lap-mode", "an open track is always linear")
        if self.effective_lap_mode == "loop" and len(self.route) < 3:
            _fail("track-invalid-lap-mode", "a loop needs at least 3 route points")

    def _check_boxes(self) -> None:
        groups = (("checkpoints", self.checkpoints, MAX_CHECKPOINTS), ("kill_zones", self.kill_zones, MAX_KILL_ZONES))
        for name, boxes, limit in groups:
            if not isinstance(boxes, tuple) or len(boxes) > limit:
                _fail("track-invalid-box", f"{name} must be a tuple of at most {limit} boxes")
            for i, box in enumerate(boxes):
                if not isinstance(box, Box):
                    _fail("track-invalid-box", f"{name}[{i}] must be a Box")
                box.validate(f"{name}[{i}]")
        if not isinstance(self.respawn_points, tuple):
            _fail("track-invalid-respawn", "respawn_points must be a tuple")
        for i, point in enumerate(self.respawn_points):
            if not isinstance(point, RespawnPoint):
                _fail("track-invalid-respawn", f"respawn_points[{i}] must be a RespawnPoint")
            point.validate(f"respawn_points[{i}]")
