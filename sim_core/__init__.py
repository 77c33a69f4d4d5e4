"""Deterministic race simulation and asset pipeline (pure: no trio, no clocks, no protocol imports).

Public API: ``World`` (``World.new``, ``World.demo``, ``step``, ``frame``, ``save_state``, ``load_state``,
``state_hash``, ``standings``, ``done``) and ``SkillEvent``; ``ENGINE_ID`` names what a step computes.

``World``, ``SkillEvent`` and ``SKILLS`` are imported on first use (PEP 562): a command that only needs
the engine id (``open4wd-node version``) must not pay for importing the whole simulation and numpy.
"""

from importlib import import_module
from typing import Any

ENGINE_ID = "sim_core/1"

_LAZY = {"World": "sim_core.world", "SkillEvent": "sim_core.step.inputs", "SKILLS": "sim_core.step.inputs"}

__all__ = ["ENGINE_ID", "SKILLS", "SkillEvent", "World"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sim_core' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value
