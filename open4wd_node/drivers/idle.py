"""``IdleDriver``: presses nothing, so the car drives on its motor alone (a baseline, and for soak tests)."""

from __future__ import annotations

from sim_core.world import World

from open4wd_node.race.driver import Decision


class IdleDriver:
    """Presses nothing: the car drives on its motor alone (a baseline, and for soak tests)."""

    def decide(self, world: World, slot: int, frame: int) -> Decision:
        """Nothing, every frame."""
        return []
