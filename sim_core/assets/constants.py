"""Limits and calibration constants of the asset pipeline, each tagged with the spec file it comes from.

Lengths are µm, areas µm², volumes µm³, masses µg, power mW, energy mJ unless the name says otherwise.
"""

# --- reader caps (protocol.md §4, UGC上傳.md §3, D-20260703-04) ---
MAX_GLB_BYTES = 80 * 1024 * 1024
MAX_JSON_CHUNK_BYTES = 16 * 1024 * 1024
MAX_EXTRAS_DEPTH = 8
MAX_NODES = 50_000
MAX_PRIMITIVES = 50_000
MAX_SOURCE_TRIANGLES = 3_000_000

# --- schema (版本規範.md §15) ---
ASSET_SCHEMA_VERSION = 1
PART_TYPES = ("chassis", "body", "tire", "motor", "battery", "roller", "chip", "weapon")
ASSET_TYPES = PART_TYPES + ("track",)
SKILLS = ("boost", "brake", "swerve_left", "swerve_right", "jump", "slam", "stabilize", "weapon")

# --- part rules (protocol.md §3, 零件與共用介面.md §3–§7) ---
PART_AABB_MIN_UM = 1_000  # 0.001 m
PART_AABB_MAX_UM = 1_000_000  # 1 m
PART_MAX_VERTICES = 100_000
PART_MAX_TRIANGLES = 100_000
DEGENERATE_TRIANGLE_AREA_UM2 = 10_000  # 1e-8 m² (1 m² = 1e12 µm²)
DENSITY_RATIO_MAX = 50
MOUNT_AABB_REJECT_UM = 30_000  # 0.03 m
MOUNT_AABB_WARN_UM = 10_000
MOUNT_GAP_REJECT_UM = 3_000  # 0.003 m
MOUNT_GAP_WARN_UM = 10_000
HINGE_AXIS_WARN_SIN_PPM = 500_000  # sin 30°
HINGE_AXIS_REJECT_SIN_PPM = 866_025  # √3/2, floor to ppm
K_MOTOR_INPUT_MW_PER_M3 = 80_000_000 * 1000  # K_MOTOR_INPUT_W_M3 (calibration.md §18)
K_BATTERY_OUTPUT_MW_PER_M3 = 80_000_000 * 1000  # K_BATTERY_OUTPUT_W_M3
K_BATTERY_ENERGY_MJ_PER_M3 = 90_000_000_000_000  # 9e13 mJ/m³
UM3_PER_M3 = 10**18
CHIP_SLOT_THRESHOLDS_UM3 = (1_500_000_000_000, 3_000_000_000_000, 6_000_000_000_000)  # 1.5 / 3 / 6 cm³
MAX_WEAPON_DRIVEN_PIVOTS = 8
MAX_WEAPON_DRIVEN_BODIES = 16
LAUNCH_AMMO_COUNT_MAX = 8
MAX_PROXIES_PER_PART = 32
WEAPON_MECHANISMS = ("general", "magnet", "launch")

# --- vehicle assembly (車輛組裝.md §3, 零件與共用介面.md §7.1, D-20260814-21) ---
VEHICLE_MASS_MIN_UG = 50 * 1_000_000
VEHICLE_MASS_MAX_UG = 500 * 1_000_000
VEHICLE_AABB_MAX_UM = (130_000, 100_000, 250_000)  # x (width), y (height), z (length)
VEHICLE_PART_MASS_RATIO_MAX = 300
CHASSIS_MIN_MASS_UG = 1_000_000
K_PASSIVE_EFFECT_MAX_PCT = 30
PASSIVE_SPLIT_DEFAULT_PCT = 50

# --- tracks (場地.md §8–§9, protocol.md §3) ---
TRACK_AABB_MAX_UM = (500_000_000, 100_000_000, 500_000_000)
ROUTEPOINT_MIN_SPACING_UM = 100_000
ROUTEPOINT_SURFACE_TOLERANCE_UM = 5_000
MAX_ROUTE_POINTS = 512  # node decision (spec silent): bounds the route checks and the surface snap
LAP_MODE_LOOP_DISTANCE_UM = 1_000_000
START_GRID_CELL_WIDTH_UM = 180_000
MAX_PLAYERS = 8
MIN_PLAYERS = 2
CHECKPOINT_MIN_SIZE_UM = (100_000, 100_000, 1_000_000)
CHECKPOINT_MAX_FRACTION_PCT = 10
GRAVITY_MIN_UM_S2 = 1_600_000
GRAVITY_MAX_UM_S2 = 25_000_000
GRAVITY_DEFAULT_UM_S2 = 9_810_000
MAX_TRACK_COLLIDER_TRIANGLES = 500_000
MAX_TRACK_VISUAL_TRIANGLES = 3_000_000
MAX_CHECKPOINTS = 64  # node decision: the simulation's TrackSpec limit (spec silent)
MAX_KILL_ZONES = 64
MAX_ENTITIES = 100
MAX_DESTRUCTIBLE_ENTITIES = 50
ENTITY_TYPES = ("decoration", "kinematic_move", "kinematic_conveyor")
WEATHER_TYPES = ("normal", "rain", "snow")
# weather.temperature range and default per type, milli-°C (場地.md §8.3)
WEATHER_TEMPERATURE_MC = {"normal": (-20_000, 40_000, 20_000), "rain": (2_000, 35_000, 15_000), "snow": (-30_000, 2_000, -5_000)}
WIND_SPEED_MAX_UM_S = 30_000_000
# patch fields: (min, max) as authored (decimal text), then the rain and snow defaults in the manifest's unit
PATCH_SPAWN_RATE_PER_MIN = ("0", "30", 5_000, 5_000)  # manifest: ×1000
PATCH_LIFETIME_MS = ("30000", "60000", 45_000, 45_000)
PATCH_RADIUS_M = ("0.2", "1.0", 500_000, 500_000)  # manifest: µm
PATCH_FRICTION_MODIFIER = ("0.3", "0.9", 650, 500)  # manifest: ×1000
PATCH_ROLLING_MODIFIER = ("1.0", "2.5", 1_500, 2_000)  # manifest: ×1000

# --- manifest ---
MANIFEST_FORMAT_VERSION = 1
MANIFEST_EXTRAS_KEY = "open4wd_node_physics_manifest"
UNIT_PPM = 1_000_000  # unit vectors scaled by 1e6: integer directions, no floats in state
