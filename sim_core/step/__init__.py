"""One frame of the simulation: per-car constants, motion, heat, contact, track rules, ranking."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "resolve": "contact",
    "Frame": "frame",
    "commit_breakage": "frame",
    "CarModel": "model",
    "Mechanics": "model",
    "TrackContext": "physics",
    "advance": "physics",
    "CarStatus": "ranking",
    "car_status": "ranking",
    "is_disabled": "ranking",
    "ranking": "ranking",
    "update_round_end": "ranking",
    "RuleContext": "rules",
    "apply_rules": "rules",
    "teleport": "rules",
    "FinishPlane": "sweeps",
    "box_bounds": "sweeps",
    "earliest_entry": "sweeps",
    "segment_box_entry": "sweeps",
    "settle": "thermal",
    "Weather": "weather",
    "weather_seed": "weather",
})
