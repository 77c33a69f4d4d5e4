"""``ExternalDriver``: this node's inputs come from a game UI through the control API.

The control server (``open4wd_node.drivers.control_api``) validates each request and records it here: a press
of an Event skill fires at the next frame the node produces (several presses of one skill before that
frame count once, as a frame carries each skill at most once); a Hold skill acts on every frame while
any control client holds it, and a client's holds end when it disconnects, so a crashed UI cannot leave
a swerve held. ``decide`` drains the presses: presses first, then holds, each in the spec's skill order,
at most 4, only skills in the car's chip, nothing while the car's skills are disabled.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from sim_core.world import World
from sim_core.specs.inputs import HOLD_SKILLS, MAX_INPUT_EVENTS_PER_FRAME, SKILLS

from open4wd_node.race.driver import Decision
from open4wd_node.race.world import chip_skills


class ExternalDriver:
    """``on_world(world, slot)`` runs first in every ``decide``: the control server uses it to notice a new
    round even before it publishes that round's first frame."""

    def __init__(self, on_world: Callable[[World, int], None] | None = None) -> None:
        self._on_world = on_world
        self._pressed: set[str] = set()
        self._held: dict[Hashable, set[str]] = {}

    def press(self, skill: str) -> None:
        """An Event skill for the next frame."""
        self._pressed.add(skill)

    def hold(self, owner: Hashable, skill: str, on: bool) -> None:
        """Start or end ``owner``'s hold of a Hold skill."""
        held = self._held.setdefault(owner, set())
        if on:
            held.add(skill)
        else:
            held.discard(skill)

    def release(self, owner: Hashable) -> None:
        """End every hold of ``owner`` (its connection closed)."""
        self._held.pop(owner, None)

    def reset(self) -> None:
        """Forget presses and holds (a new round: the UI is told and holds again)."""
        self._pressed.clear()
        self._held.clear()

    def decide(self, world: World, slot: int, frame: int) -> Decision:
        """This frame's presses (then forgotten) and the holds still on, as the module docstring says."""
        if self._on_world is not None:
            self._on_world(world, slot)
        pressed, self._pressed = self._pressed, set()
        if world.done or world.disable_reason(slot) is not None:
            return []
        chip, held = chip_skills(world, slot), set().union(*self._held.values())
        wanted = [s for s in SKILLS if s in pressed and s in chip]
        wanted += [s for s in SKILLS if s in held and s in chip and s not in pressed]
        return [(s, s in HOLD_SKILLS) for s in wanted[:MAX_INPUT_EVENTS_PER_FRAME]]
