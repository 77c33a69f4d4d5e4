"""``FaultWorld``: a round's world with faults, wrapped around the session's ``RaceWorld`` adapter.

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


class FaultWorld:
    """``adapter``'s world, stepped with faults (module docstring). ``corrupt_at``: after that frame the car in
    ``slot`` moves 1 µm. ``float_at``: a non-deterministic build; after that frame the car in slot 0 moves
    by an amount drawn from a float of this process's own unseeded random generator, so that every process
    computes a different state, as a float leaking into the step would. ``on_frame[frame]()``: called once,
    the first time ``frame`` is stepped."""

    def __init__(self, adapter: WorldAdapter, slot: int, *, corrupt_at: int | None = None, float_at: int | None = None,
                 on_frame: Mapping[int, Callable[[], None]] | None = None) -> None:
        self.adapter = adapter
        self.slot = slot
        self.corrupt_at = corrupt_at
        self.float_at = float_at
        self._pending = dict(on_frame or {})

    @property
    def frame(self) -> int:
        """Frames stepped."""
        return self.adapter.frame

    @property
    def done(self) -> bool:
        """The round is over."""
        return self.adapter.done

    def step(self, inputs: Mapping[int, Sequence[Event]]) -> None:
        """Step one frame, then the faults of that frame."""
        frame = self.adapter.frame
        self.adapter.step(inputs)
        if frame == self.corrupt_at:
            nudge(self.adapter.world, self.slot)
        if frame == self.float_at:
            nudge(self.adapter.world, 0, 1 + int(random.random() * 100_000))  # deliberately unseeded: per process
        triggered = self._pending.pop(frame, None)
        if triggered is not None:
            triggered()

    def save_state(self) -> bytes:
        """The world's canonical state bytes."""
        return self.adapter.save_state()

    def load_state(self, data: bytes) -> None:
        """Load a state of any origin (``WorldAdapter.load_state``)."""
        self.adapter.load_state(data)

    def save_own(self) -> object:
        """The state for ``restore_own``."""
        return self.adapter.save_own()

    def restore_own(self, state: object) -> None:
        """Restore a state ``save_own`` returned."""
        self.adapter.restore_own(state)

    def pack_own(self, state: object) -> bytes:
        """The canonical bytes of a state ``save_own`` returned."""
        return self.adapter.pack_own(state)
