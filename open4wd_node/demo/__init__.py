"""``open4wd-node demo``: N real node processes that form a room and race, with their live table."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "NodeRun": "runner",
    "run_demo": "runner",
    "summarize": "runner",
    "DemoOptions": "setup",
    "prepare": "setup",
    "DemoBoard": "view",
    "NodeLine": "view",
    "race_demo": "view",
})
