"""Headless drivers of a world: reproducible input streams, the GGRS-style sync test, and a desync on purpose."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "nudge": "corrupt",
    "nudged_state": "corrupt",
    "RandomInputs": "scripted",
    "SplitMix64": "scripted",
    "no_inputs": "scripted",
    "SyncTestResult": "synctest",
    "first_differences": "synctest",
    "run_synctest": "synctest",
})
