"""``RoundWatch``: the round being raced, as the match runner hands it to the live view.

Kept apart from the view's model so that the event sink (``events``), the view (``live_model``) and the
runner all name it without importing each other; the frame pump is seen only through ``PumpLag``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from protocol.identity.keys import PeerId

if TYPE_CHECKING:
    from protocol.race.peers import PeerStatus
    from sim_core.world import World


class RollbackCount(Protocol):
    """What the view reads of a race's statistics: rollbacks so far."""

    rollbacks: int


class RaceProgress(Protocol):
    """What the view reads of the race being shown: a racer's ``RaceSession``, or a spectator's view of it."""

    @property
    def current_frame(self) -> int:
        """The frame the next step computes."""

    @property
    def stats(self) -> RollbackCount:
        """Rollbacks so far."""

    def status(self, peer: PeerId) -> PeerStatus:
        """``peer``'s status in the race."""


class CpuReading(Protocol):
    """What the view reads of a racer's CPU budget (``open4wd_node.race.budget.CostSplit``)."""

    def per_frame_us(self) -> float:
        """CPU per frame in µs."""

    def shares(self) -> dict[str, float]:
        """Each part's share of it, in percent."""


class PumpLag(Protocol):
    """What the view reads of the frame pump: frames due but not stepped, and the frames it steps per
    wake-up (docs/node.md "Frames per tick": shown beside a racer's CPU per frame)."""

    lag: int
    frames_per_tick: int


@dataclass(frozen=True)
class RoundWatch:
    """A round being raced, as the runner built it (read-only for the view)."""

    round_index: int
    rounds: int
    slots: Mapping[PeerId, int]  # PeerId -> start slot
    world: World
    session: RaceProgress
    pump: PumpLag
    earlier_rollbacks: int  # rollbacks of this match's earlier rounds
    cpu: Callable[[], CpuReading] | None = None  # a racer's CPU per frame by part so far (a spectator: None)
