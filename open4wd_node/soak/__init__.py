"""``open4wd-node soak``: many races of real node processes under fault profiles, each classified and
reproducible, run as Dask tasks, reported as ``report.json`` and ``report.html`` (docs/soak.md)."""

from open4wd_base.exports import lazy_exports

__all__, __getattr__ = lazy_exports(__name__, {
    "Profile": "profiles",
    "Faults": "profiles",
    "draw_faults": "profiles",
    "parse_profiles": "profiles",
    "SoakOptions": "plan",
    "RacePlan": "plan",
    "plan_race": "plan",
    "RaceClass": "classify",
    "NodeObservation": "classify",
    "Verdict": "classify",
    "classify": "classify",
    "RaceResult": "race",
    "run_race": "race",
    "race_task": "cluster",
    "run_races": "cluster",
    "ReportDir": "report",
    "SoakProgress": "view",
})
