"""What the match runner asks of whoever drives this node's car, and of whoever watches its frames.

A driver is asked once per frame, when the node must produce its signed input for that frame. It reads
this node's own (possibly predicted) world, must not change it, and must be cheap: the frame pump steps
60 frames per second plus rollbacks. The drivers themselves (the bot, a game UI through the control
API, nobody) live in ``open4wd_node.drivers``, above the race that calls them.
"""

from __future__ import annotations

from typing import Protocol

from sim_core.world import World

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
