"""Drivers: who decides a node's skill presses for its car, one frame at a time.

A driver is asked once per frame, when the node must produce its signed input for that frame. It reads
this node's own (possibly predicted) world, must not change it, and must be cheap: the frame pump steps
60 frames per second plus rollbacks. ``BotDriver`` (``bot.py``) plays by itself; ``ExternalDriver``
(``external.py``) relays what a game UI pressed through the control API (``open4wd_node.drivers.control_api``).
"""

from __future__ import annotations

from typing import Protocol

from sim_core.step.inputs import SkillEvent, validate_events
from sim_core.world import World

from open4wd_node.race.world import chip_skills

Decision = list[tuple[str, bool]]
"""At most 4 ``(skill, hold)`` pairs, each skill once, all in the car's chip, hold matching the skill."""


class Driver(Protocol):
    """Decides this node's skill presses, one frame at a time (see the module docstring)."""

    def decide(self, world: World, slot: int, frame: int) -> Decision:
        """The presses for ``frame`` of the car in ``slot``, read from ``world`` (never changed)."""
        ...


class FrameObserver(Protocol):
    """Hears about every frame this node stepped, with its world and its car's slot (the control API
    publishes frames and standings from it). Called on the frame pump's path: it must be cheap."""

    def __call__(self, world: World, slot: int) -> None: ...


def check_decision(world: World, slot: int, decision: Decision) -> None:
    """Raise ``SimError`` (``input-*`` codes) unless the step would accept ``decision`` for ``slot``."""
    validate_events([SkillEvent(skill, hold) for skill, hold in decision], tuple(chip_skills(world, slot)), slot)
