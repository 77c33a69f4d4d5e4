"""Deterministic race simulation and asset pipeline (pure: no trio, no clocks, no protocol imports).

Public API: ``World`` (``World.new``, ``World.demo``, ``step``, ``frame``, ``save_state``, ``load_state``,
``state_hash``, ``standings``, ``done``) and ``SkillEvent``; ``ENGINE_ID`` names what a step computes.
"""

ENGINE_ID = "sim_core/1"

from sim_core.inputs import SKILLS, SkillEvent  # noqa: E402
from sim_core.world import World  # noqa: E402

__all__ = ["ENGINE_ID", "SKILLS", "SkillEvent", "World"]
