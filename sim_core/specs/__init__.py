"""Race-time descriptions of what races: materials, tracks and their route ribbons, assembled cars (exact integers)."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Material": "materials",
    "load_materials": "materials",
    "material": "materials",
    "Route": "route",
    "route_for": "route",
    "Box": "track",
    "RespawnPoint": "track",
    "RoutePoint": "track",
    "TrackSpec": "track",
    "check_unit_vector": "track",
    "BatterySpec": "vehicle",
    "ChipSlot": "vehicle",
    "MotorSpec": "vehicle",
    "PartSpec": "vehicle",
    "VehicleSpec": "vehicle",
    "WeaponSpec": "vehicle",
    "baked_part": "vehicle",
})
