"""``FaultWorld``: a round's world with faults: the session's ``RaceWorld`` adapter, stepped with them.

It steps the world as the adapter does, and after given frames it changes the world through its public state
(``sim_core.harness.corrupt``) or tells its caller the frame was reached (the trigger of a cut or a stall).
A frame is stepped for the first time in order, and again after a rollback: a corruption happens every
time (as a real bug's would), a trigger only the first time.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from open4wd_node.race.world import WorldAdapter
from protocol.race.signing import Event
from sim_core.harness.corrupt import nudge
from sim_core.world import World


class FaultWorld(WorldAdapter):
    """A round's world, stepped with faults (module docstring). ``corrupt_at``: after that frame the car in
    ``slot`` moves 1 µm. ``float_at``: a non-deterministic build; after that frame the car in slot 0 moves
    by an amount drawn from a float of this process's own unseeded random generator, so that every process
    computes a different state, as a float leaking into the step would. ``on_frame[frame]()``: called once,
    the first time ``frame`` is stepped."""

    def __init__(self, world: World, slot: int, *, corrupt_at: int | None = None, float_at: int | None = None,
                 on_frame: Mapping[int, Callable[[], None]] | None = None) -> None:
        super().__init__(world)
        self.slot = slot
        self.corrupt_at = corrupt_at
        self.float_at = float_at
        self._pending = dict(on_frame or {})

    def step(self, inputs: Mapping[int, Sequence[Event]]) -> None:
        """Step one frame, then the faults of that frame."""
        frame = self.world.frame
        super().step(inputs)
        if frame == self.corrupt_at:
            nudge(self.world, self.slot)
        if frame == self.float_at:
            nudge(self.world, 0, 1 + int(random.random() * 100_000))  # deliberately unseeded: per process
        triggered = self._pending.pop(frame, None)
        if triggered is not None:
            triggered()
