"""``RaceFaults``: a node's faults installed around its match runner (``RaceWiring``), by the node (``open4wd_node.node.match``).

Each ``NodeFault`` fires after its frame of the first round, the first time that frame is stepped (the
round's ``FaultWorld`` notices it), and says so with a ``fault`` event (``kind``, ``frame``, and for a fault
that lasts, ``seconds``), which the soak reads as the fault having fired:

- ``corrupt-state``: the world moves this node's own car, every time the frame is stepped;
- ``disconnect``: every link is dropped and the node stays unreachable (``LinkFaults.cut``);
- ``cut-link``: its link to one peer is dropped and stays down (``LinkFaults.cut_peer``);
- ``stall``: the pump and the links stand still (``LinkFaults.freeze``, and the pump's pause);
- ``pump-stall``: only the pump stands still; the runner goes on handling what the links deliver.

A non-deterministic build (``nondeterministic_frame``) is installed the same way, in every round.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

import trio

from open4wd_node.faults.links import LinkFaults
from open4wd_node.faults.plan import FaultKind, NodeFault
from open4wd_node.faults.world import FaultWorld
from open4wd_node.race.runner import RaceWiring
from open4wd_node.race.world import WorldAdapter
from open4wd_node.events.sink import EventSink
from protocol.race.setup import RaceWorld
from open4wd_node.events.vocabulary import FaultFired


class RaceFaults:
    """``faults`` (and a float after ``float_at``, in every round) for one node's match; ``events`` hears each
    fault fire. ``wire`` wraps the runner's wiring; ``run`` must run beside the runner."""

    def __init__(self, faults: Sequence[NodeFault], events: EventSink, float_at: int | None = None) -> None:
        self.faults = tuple(faults)
        self.events = events
        self.float_at = float_at
        self.links = LinkFaults()
        self.pump_until = -math.inf  # trio time before which the pump stands still

    def wire(self, wiring: RaceWiring) -> RaceWiring:
        """The runner's wiring with these faults around it."""
        return replace(wiring, doorway=self.links.doorway(wiring.doorway), dial=self.links.dial(wiring.dial),
                       world=self.world, paused_until=lambda: self.pump_until)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """What the faults do in a task of their own (closing links at a cut), until cancelled."""
        await self.links.run(task_status=task_status)

    def world(self, adapter: WorldAdapter, round_index: int, slot: int) -> RaceWorld:
        """The round's world: with the faults in the first round, with the float (if any) in every round."""
        first = round_index == 0
        corrupt = next((f.frame for f in self.faults if f.kind is FaultKind.CORRUPT_STATE), None) if first else None
        frames = {fault.frame for fault in self.faults} if first else set()
        return FaultWorld(adapter.world, slot, corrupt_at=corrupt, float_at=self.float_at,
                          on_frame={frame: partial(self._fire, frame) for frame in frames})

    def _fire(self, frame: int) -> None:
        """``frame`` was stepped for the first time: its faults fire."""
        for fault in self.faults:
            if fault.frame != frame:
                continue
            if fault.kind is FaultKind.CORRUPT_STATE:
                self.events.emit(FaultFired(kind=fault.kind.value, frame=frame))
                continue
            if fault.kind is FaultKind.DISCONNECT:
                self.links.cut(fault.seconds)
            elif fault.kind is FaultKind.CUT_LINK:
                self.links.cut_peer(fault.seconds)
            else:
                self.pump_until = max(self.pump_until, trio.current_time() + fault.seconds)
                if fault.kind is FaultKind.STALL:
                    self.links.freeze(fault.seconds)
            self.events.emit(FaultFired(kind=fault.kind.value, frame=frame, seconds=fault.seconds))
