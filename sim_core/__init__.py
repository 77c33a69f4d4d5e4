"""Deterministic race simulation and asset pipeline (pure: no trio, no clocks, no protocol imports).

Public API: ``World`` (``World.new``, ``World.demo``, ``step``, ``frame``, ``save_state``, ``load_state``,
``restore_own_state``, ``save_own``/``restore_own``/``pack_own`` (``OwnState``), ``state_hash``,
``standings``, ``done``, ``end_reason``, ``disable_reason``, ``cars``/``car`` (``CarView``)) and
``SkillEvent``; the typed vocabulary of what a world reports (``Skill``, ``CarStatus``,
``RoundEndReason``, ``DisableReason``, ``Standing``); ``ENGINE_ID`` names what a step computes.

Everything but ``ENGINE_ID`` is imported on first use (``open4wd_base.exports``): a command that only
needs the engine id (``open4wd-node version``) must not pay for the whole simulation and numpy.
"""

from open4wd_base.exports import lazy_exports

ENGINE_ID = "sim_core/8"

__all__, __getattr__ = lazy_exports(__name__, {
    "World": "world",
    "OwnState": "world",
    "DisableReason": "world",
    "Standing": "world",
    "CarView": "state.car_view",
    "SkillEvent": "specs.inputs",
    "SKILLS": "specs.inputs",
    "Skill": "specs.inputs",
    "CarStatus": "step.ranking",
    "RoundEndReason": "state.layout",
    "step_is_compiled": "compiled",
})
__all__.append("ENGINE_ID")
