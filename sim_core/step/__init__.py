"""One frame of the simulation: per-car constants, motion, heat, contact, track rules, ranking, inputs."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "resolve": "contact",
    "SkillEvent": "inputs",
    "validate_events": "inputs",
    "CarModel": "model",
    "Mechanics": "model",
    "TrackContext": "physics",
    "advance": "physics",
    "is_disabled": "ranking",
    "ranking": "ranking",
    "status_name": "ranking",
    "update_round_end": "ranking",
    "RuleContext": "rules",
    "apply_rules": "rules",
    "teleport": "rules",
    "FinishPlane": "sweeps",
    "box_bounds": "sweeps",
    "earliest_entry": "sweeps",
    "segment_box_entry": "sweeps",
    "settle": "thermal",
})
