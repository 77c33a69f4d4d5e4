"""Race-time descriptions of what races: materials, tracks and their route ribbons, assembled cars (exact
integers), and the skills a car's chip offers and a player's input presses."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "SKILLS": "inputs",
    "Skill": "inputs",
    "SkillEvent": "inputs",
    "validate_events": "inputs",
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
    "AeroSpec": "vehicle",
    "BatterySpec": "vehicle",
    "ChipSlot": "vehicle",
    "MotorSpec": "vehicle",
    "PartSpec": "vehicle",
    "VehicleSpec": "vehicle",
    "WeaponSpec": "vehicle",
    "baked_part": "vehicle",
    "NORMAL_WEATHER": "weather",
    "PatchSpec": "weather",
    "WeatherSpec": "weather",
})
