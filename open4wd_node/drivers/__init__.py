"""Drivers: who decides a node's skill presses for its car, one frame at a time.

``BotDriver`` (``bot.py``) plays by itself; ``ExternalDriver`` (``external.py``) relays what a game UI
pressed through the control API (``control_api.py``); ``IdleDriver`` (``idle.py``) presses nothing.
Each satisfies ``open4wd_node.race.driver.Driver``, the interface the match runner calls.
"""

from __future__ import annotations

from sim_core.specs.inputs import SkillEvent, validate_events
from sim_core.world import World

from open4wd_node.race.driver import Decision
from open4wd_node.race.world import chip_skills


def check_decision(world: World, slot: int, decision: Decision) -> None:
    """Raise ``SimError`` (``input-*`` codes) unless the step would accept ``decision`` for ``slot``."""
    validate_events([SkillEvent(skill, hold) for skill, hold in decision], tuple(chip_skills(world, slot)), slot)
